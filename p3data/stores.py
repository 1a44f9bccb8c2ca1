"""Where a dataset's rows come from: a local mirror, a manual-download folder, or the Hub.

A store lists a split's shards (row ranges, possibly across files) and reads one shard at a
time, numbering rows by their position in the whole split, so a split can be processed by
many workers and every row keeps the same index however it is sharded. Nothing is read until
a shard is listed or read.
"""

from __future__ import annotations

import csv
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from p3data.catalog import DatasetEntry
from p3data.errors import P3DataError
from p3data.rows import iter_jsonl

ENV_DATA_DIR = "P3DATA_DATA_DIR"
ENV_MANUAL_DIR = "P3DATA_MANUAL_DIR"
DEFAULT_MANUAL_DIR = Path("~/.cache/p3data/manual")
ROWS_PER_SHARD = 50_000


class DataNotFoundError(P3DataError):
    """The rows of a dataset split are not where they were expected."""


@dataclass(frozen=True)
class Shard:
    """Rows [start, stop) of a split; `path` when they come from one file of a mirror."""

    name: str
    start: int
    stop: int
    path: str | None = None
    offset: int = 0  # row number of the file's first row within the split


class RowStore(Protocol):
    def list_shards(self, split: str) -> list[Shard]: ...

    def read(self, split: str, shard: Shard) -> Iterator[dict[str, Any]]: ...


def _row_ranges(prefix: str, total: int, rows_per_shard: int, **extra: Any) -> list[Shard]:
    offset = extra.get("offset", 0)
    return [
        Shard(f"{prefix}[{start}:{min(start + rows_per_shard, total)}]",
              offset + start, offset + min(start + rows_per_shard, total), **extra)
        for start in range(0, max(total, 1), rows_per_shard)
    ]


_SPLIT_FILE = re.compile(r"^(?P<split>.+?)(-\d{5}-of-\d{5})?\.(?P<ext>jsonl|parquet)$")


class MirrorStore:
    """`<root>/<dataset>[/<subset>]/<split>.{jsonl,parquet}` or `<split>-NNNNN-of-MMMMM.*`."""

    def __init__(self, root: Path, entry: DatasetEntry, rows_per_shard: int = ROWS_PER_SHARD):
        self.folder = root / entry.dataset / entry.subset if entry.subset else root / entry.dataset
        self.entry = entry
        self.rows_per_shard = rows_per_shard

    def files(self, split: str) -> list[Path]:
        found = sorted(
            path for path in self.folder.glob(f"{split}*")
            if (m := _SPLIT_FILE.match(path.name)) and m["split"] == split
        )
        if not found:
            raise DataNotFoundError(
                f"{self.entry.name}: no rows for split {split!r} in the mirror; expected "
                f"{self.folder / (split + '.parquet')} or {self.folder / (split + '.jsonl')}"
            )
        return found

    def list_shards(self, split: str) -> list[Shard]:
        shards, offset = [], 0
        for path in self.files(split):
            count = _count_rows(path)
            shards += _row_ranges(path.name, count, self.rows_per_shard,
                                  path=str(path), offset=offset)
            offset += count
        return shards

    def read(self, split: str, shard: Shard) -> Iterator[dict[str, Any]]:
        assert shard.path is not None
        path = Path(shard.path)
        first, last = shard.start - shard.offset, shard.stop - shard.offset
        rows = _read_parquet(path) if path.suffix == ".parquet" else iter_jsonl(path)
        for number, row in enumerate(rows):
            if number >= last:
                return
            if number >= first:
                yield row


def _count_rows(path: Path) -> int:
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        return pq.ParquetFile(path).metadata.num_rows
    with path.open("rb") as handle:
        return sum(1 for line in handle if line.strip())


def _read_parquet(path: Path) -> Iterator[dict[str, Any]]:
    import pyarrow.parquet as pq

    for batch in pq.ParquetFile(path).iter_batches(batch_size=2048):
        yield from batch.to_pylist()


class ManualStore:
    """Files a user downloaded by hand (e.g. Story Cloze), mapped onto the original schema."""

    def __init__(self, root: Path, entry: DatasetEntry, rows_per_shard: int = ROWS_PER_SHARD):
        self.entry = entry
        self.rows_per_shard = rows_per_shard
        self.spec = entry.manual_download or {}
        self.folder = root / entry.dataset / entry.subset if entry.subset else root / entry.dataset

    def path(self, split: str) -> Path:
        files = self.spec.get("files") or {}
        if split not in files:
            raise DataNotFoundError(f"{self.entry.name}: no manual file is known for {split!r}")
        path = self.folder / files[split]
        if not path.is_file():
            raise DataNotFoundError(
                f"{self.entry.name} needs a manual download: get it from "
                f"{self.spec.get('url', 'its publisher')} and put {files[split]!r} at {path} "
                f"(folder set by {ENV_MANUAL_DIR}); {self.spec.get('instructions', '')}".strip()
            )
        return path

    def list_shards(self, split: str) -> list[Shard]:
        path = self.path(split)
        with path.open(encoding="utf-8", newline="") as handle:
            count = sum(1 for _ in csv.DictReader(handle))
        return _row_ranges(path.name, count, self.rows_per_shard, path=str(path))

    def read(self, split: str, shard: Shard) -> Iterator[dict[str, Any]]:
        columns = self.spec.get("columns") or {}
        with self.path(split).open(encoding="utf-8", newline="") as handle:
            for number, raw in enumerate(csv.DictReader(handle)):
                if number >= shard.stop:
                    return
                if number >= shard.start:
                    yield _typed({columns.get(k, k): v for k, v in raw.items()},
                                 self.entry.features)


def _typed(row: dict[str, Any], features: dict[str, Any]) -> dict[str, Any]:
    """CSV gives strings: cast integer and class-label fields back to ints."""
    for name, kind in features.items():
        if name in row and (kind in ("int32", "int64") or isinstance(kind, dict)
                            and "class_label" in kind):
            row[name] = int(row[name])
    return row


class HubStore:
    """`datasets.load_dataset` of the catalog's Hub location (honours HF offline settings).

    `revision` may be a commit or a branch such as `refs/convert/parquet`, where the Hub keeps
    parquet copies of datasets whose main branch still holds only a loading script.
    """

    def __init__(self, entry: DatasetEntry, rows_per_shard: int = ROWS_PER_SHARD):
        if not entry.hub.repo:
            raise DataNotFoundError(
                f"{entry.name}: no Hub location is known ({entry.hub.notes or 'see the catalog'});"
                f" serve it from a local mirror with {ENV_DATA_DIR}"
            )
        self.entry = entry
        self.rows_per_shard = rows_per_shard
        self._loaded: dict[str, Any] = {}

    def _split(self, split: str):
        if split not in self._loaded:
            import datasets

            hub = self.entry.hub
            data = datasets.load_dataset(hub.repo, hub.config, split=split, revision=hub.revision)
            if hub.columns:
                data = data.rename_columns(hub.columns)
            # Modern copies sometimes add columns; keep the schema the templates were written for.
            data = data.select_columns([c for c in data.column_names if c in self.entry.features])
            self._loaded[split] = data
        return self._loaded[split]

    def list_shards(self, split: str) -> list[Shard]:
        return _row_ranges(split, self.entry.splits[split], self.rows_per_shard)

    def read(self, split: str, shard: Shard) -> Iterator[dict[str, Any]]:
        data = self._split(split)
        yield from data.select(range(shard.start, min(shard.stop, len(data))))


def open_store(entry: DatasetEntry, data_dir: str | os.PathLike | None = None,
               rows_per_shard: int = ROWS_PER_SHARD) -> RowStore:
    """The mirror when one is set (it is then authoritative), else manual files, else the Hub."""
    root = data_dir or os.environ.get(ENV_DATA_DIR)
    if root:
        return MirrorStore(Path(root), entry, rows_per_shard)
    if entry.manual_download:
        manual = os.environ.get(ENV_MANUAL_DIR) or DEFAULT_MANUAL_DIR
        return ManualStore(Path(manual).expanduser(), entry, rows_per_shard)
    return HubStore(entry, rows_per_shard)
