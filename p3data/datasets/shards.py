"""How a dataset split's rows are cut into shards, and the contract every row store keeps.

A shard is a row range of the whole split, so a row keeps its number however the split is
cut and whichever worker reads it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from p3data import fs

ROWS_PER_SHARD = 50_000


@dataclass(frozen=True)
class Shard:
    """Rows [start, stop) of a split; `path` when they come from one file, whose first row is
    row `offset` of the split."""

    name: str
    start: int
    stop: int
    path: str | None = None
    offset: int = 0


class RowStore(Protocol):
    """The rows of one dataset's splits, however they are stored.

    - Rows are numbered by their position in the whole split, so a row keeps its number
      however the split is sharded and whichever worker reads it.
    - `list_shards(split)` cuts the split into shards from metadata only (file listings,
      parquet footers, line counts); `read(split, shard)` yields exactly the shard's rows and
      can be called for any shard, in any order, in any process, without reading the rows
      before it (JSON Lines excepted: a line's place is known only by reading up to it).
    - A store pickles (Beam ships it to workers): it holds locations, never open files.
    - `identity(split)` says which rows were read, for cache fingerprints and manifests:
      files with their sizes and digests, or the Hub repository, revision and files.
    - `drift` holds the catalog's accepted differences from T0's 2021 rows, one line each.
    """

    drift: tuple[str, ...]

    def list_shards(self, split: str) -> list[Shard]: ...

    def read(self, split: str, shard: Shard) -> Iterator[dict[str, Any]]: ...

    def identity(self, split: str) -> dict[str, Any]: ...


def row_runs(total: int, rows_per_shard: int) -> list[tuple[int, int]]:
    """[start, stop) ranges of `rows_per_shard` rows over `total` rows (one, empty, if none)."""
    return [(start, min(start + rows_per_shard, total))
            for start in range(0, max(total, 1), rows_per_shard)]


def file_shards(path: str, runs: list[tuple[int, int]], offset: int = 0) -> list[Shard]:
    """Shards of one file's row ranges `runs`, the file's first row being row `offset`."""
    name = fs.name_of(path)
    return [Shard(f"{name}[{start}:{stop}]", offset + start, offset + stop, path=path,
                  offset=offset) for start, stop in runs]


