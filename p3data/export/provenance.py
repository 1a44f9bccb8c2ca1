"""Where each exported example came from, as far as the cache knows: a `provenance` struct on
every row of the SFT shapes (`export.shapes`), one schema for every task so that tasks load
together as one dataset.

What the cache records, and so what is known (None where it is not, never guessed):
- task, template (name and id), dataset and subset, the task split and its source split: from
  the task's `manifest.json` (a stock seqio cache or a downloaded P3 has none: task and split
  only);
- the source repository and revision: the manifest's record of the rows read, which names them
  for rows read from the Hub; rows from a mirror or sample files are recorded by their files'
  sha256 (in the manifest), not by a revision;
- the source row: examples are kept in source row order and dealt round-robin to the output
  shards (`builder.assembly`), so the n-th example of a split, in that order, is its n-th kept
  row. It is the source row's number when the manifest says no row of the split was left out
  (none dropped by the row rule, none failed to render, no cap) and each row gave one example;
  else unknown;
- a few-shot variant's shot count and exemplar rows (row numbers in the exemplars' split): the
  examples' own `num_shots` and `exemplar_rows`, and the exemplars' split from the manifest.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import accumulate
from typing import TYPE_CHECKING, Any

from p3data.errors import P3DataError
from p3data.format.features import EXEMPLAR_ROWS, NUM_SHOTS

if TYPE_CHECKING:
    import pyarrow as pa

    from p3data.dataset_key import DatasetKey
    from p3data.format.manifest import Manifest
    from p3data.read import Example, TaskSplit

# The struct's fields, in order, with their `datasets` dtypes (a list: "list:<dtype>").
FIELDS = {
    "task": "string", "template_name": "string", "template_id": "string",
    "dataset": "string", "subset": "string", "split": "string", "source_split": "string",
    "source_repo": "string", "source_revision": "string", "row": "int64",
    "num_shots": "int32", "exemplar_split": "string", "exemplar_rows": "list:int64",
}

def arrow_type() -> pa.DataType:
    import pyarrow as pa

    def of(dtype: str) -> pa.DataType:
        if dtype.startswith("list:"):
            return pa.list_(of(dtype[len("list:"):]))
        return {"string": pa.string(), "int64": pa.int64(), "int32": pa.int32()}[dtype]

    return pa.struct([(name, of(dtype)) for name, dtype in FIELDS.items()])


def card_feature() -> dict[str, Any]:
    """The struct as a `datasets` card's `dataset_info` features spell it."""
    return {"name": "provenance", "struct": [
        {"name": name, "list": dtype[len("list:"):]} if dtype.startswith("list:")
        else {"name": name, "dtype": dtype} for name, dtype in FIELDS.items()]}


@dataclass(frozen=True)
class SplitProvenance:
    """What a task split's manifest says of all its examples, and how to place each one."""

    common: dict[str, Any]  # the fields every example of the split shares
    sources: list[tuple[str | None, int]]  # (source split, its examples), in order
    rows_known: bool
    unknown: tuple[str, ...]  # fields the cache does not know for any example (for the card)

    def of(self, ordinal: int, example: Example) -> dict[str, Any]:
        """The provenance of the split's example number `ordinal` (in source order)."""
        source, row = self.sources[-1][0], None
        for (name, end), start in zip(self.sources, self._starts, strict=True):
            if ordinal < end:
                source, row = name, ordinal - start
                break
        shots = example.get(NUM_SHOTS)
        exemplars = example.get(EXEMPLAR_ROWS)
        return {**self.common, "source_split": source,
                "row": row if self.rows_known else None,
                "num_shots": None if shots is None else int(shots),
                "exemplar_rows": None if exemplars is None else [int(r) for r in exemplars]}

    @functools.cached_property
    def _starts(self) -> list[int]:
        ends = [end for _, end in self.sources]
        return [0, *ends[:-1]]


def split_provenance(ts: TaskSplit, manifest: Manifest | None) -> SplitProvenance:
    unknown = dict.fromkeys(FIELDS, None)
    if manifest is None:  # stock seqio's cache, a downloaded P3: no record of where from
        common = {**unknown, "task": ts.task, "split": ts.split}
        return SplitProvenance(common, [(None, len(ts))], rows_known=False, unknown=(
            "template_name", "template_id", "dataset", "subset", "source_split", "source_repo",
            "source_revision", "row"))
    record = manifest.splits[ts.split]
    mapping = manifest.split_mapping.get(ts.split)
    if isinstance(mapping, list):  # several source splits, one after another
        counts = record.source_examples or {}
        ends = list(accumulate(counts.get(source, 0) for source in mapping))
        sources = list(zip(mapping, ends, strict=True))
    else:
        sources = [(mapping, len(ts))]
    identity = manifest.sources.get(ts.split) or {}
    key = _catalog_keys().get(manifest.dataset)
    pool = record.pool.split if record.pool is not None else None
    common = {**unknown, "task": ts.task, "split": ts.split,
              "template_name": manifest.template.name, "template_id": manifest.template.id,
              "dataset": key.dataset if key else manifest.dataset,
              "subset": key.subset if key else None,
              "source_repo": identity.get("repo"), "source_revision": identity.get("revision"),
              "exemplar_split": pool}
    whole = (record.rows_read == record.rows_kept == record.examples
             and not record.dropped and not record.render_errors and manifest.selection is None)
    missing = [*(["subset"] if key is None else []),  # a dataset no catalog holds
               *(["source_repo", "source_revision"] if "revision" not in identity else []),
               *([] if whole else ["row"])]
    return SplitProvenance(common, sources, rows_known=whole, unknown=tuple(missing))


@functools.cache
def _catalog_keys() -> dict[str, DatasetKey]:
    """Every catalog's dataset keys by name (T0's, xP3's and the user's): a manifest names
    its dataset `dataset/subset`, and whether `GEM/wiki_lingua/hi_en` is a dataset with an
    owner and a subset only the catalogs tell. A name none holds is the dataset's whole name,
    its subset unknown."""
    from p3data.datasets.catalog import XP3_CATALOG_FILE, Catalog, read_catalog_file

    entries = [*read_catalog_file(XP3_CATALOG_FILE, validate=False), *Catalog.load()]
    return {entry.name: entry.key for entry in entries}


def source_order(ts: TaskSplit, manifest: Manifest | None) -> Iterator[Example]:
    """A split's examples in source order: p3data deals the n-th to output shard n % shards,
    so the shards are read side by side; any other cache's in the reader's order. Examples a
    shard holds beyond its share come last, for the export's count to refuse."""
    count = len(ts.shards)
    if manifest is None or count <= 1:
        yield from ts.examples()
        return
    streams = [ts.examples(shard=(k, count)) for k in range(count)]
    for ordinal in range(len(ts)):
        example = next(streams[ordinal % count], None)
        if example is None:
            raise P3DataError(f"{ts.shards[ordinal % count]}: ends before example {ordinal:,} "
                              f"of {ts.task} {ts.split}; check the cache with p3data verify")
        yield example
    for stream in streams:
        yield from stream


def with_provenance(ts: TaskSplit, manifest: Manifest | None
                    ) -> Iterator[tuple[Example, dict[str, Any]]]:
    """Each example in source order with its provenance."""
    about = split_provenance(ts, manifest)
    for ordinal, example in enumerate(source_order(ts, manifest)):
        yield example, about.of(ordinal, example)
