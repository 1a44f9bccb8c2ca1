"""What the checks share: choosing tasks, reading a mirror's rows, counting tokens, tables."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from itertools import islice
from pathlib import Path
from typing import Any

from p3data import t0
from p3data.catalog import DatasetEntry
from p3data.errors import P3DataError
from p3data.samples import SAMPLES_DIR
from p3data.stores import ENV_DATA_DIR, MirrorStore
from p3data.vocab import SAMPLE_VOCAB

BATCH_ROWS = 512


def by_source_split(
    specs: Sequence[t0.TaskSpec], split: str
) -> dict[tuple[tuple[str, str | None], str], list[t0.TaskSpec]]:
    """Tasks grouped by the (dataset, source split) they read for task split `split`, so each
    split is read once for all of its templates; tasks without that split are left out."""
    groups: dict[tuple[tuple[str, str | None], str], list[t0.TaskSpec]] = {}
    for spec in specs:
        if split in spec.split_mapping:
            groups.setdefault((spec.entry.key, spec.split_mapping[split]), []).append(spec)
    return groups


def data_root(data_dir: str | os.PathLike | None, samples: bool = False) -> Path:
    """The local mirror to read: the bundled samples, the given folder, or $P3DATA_DATA_DIR.

    Checks read whole splits, so they never fall back to downloading from the Hub.
    """
    if samples:
        return SAMPLES_DIR
    root = data_dir or os.environ.get(ENV_DATA_DIR)
    if not root:
        raise P3DataError(
            "no rows to read: pass --samples (the bundled sample rows), --data-dir DIR (a local "
            f"mirror: DIR/<dataset>[/<subset>]/<split>.jsonl or .parquet) or set {ENV_DATA_DIR}")
    if not Path(root).is_dir():
        raise P3DataError(f"data folder {root} does not exist")
    return Path(root)


def read_batches(
    root: Path, entry: DatasetEntry, split: str, max_rows: int | None = None
) -> Iterator[tuple[int, list[dict[str, Any]]]]:
    """(number of the first row, rows) for one split of a mirror, in batches.

    Raises a `SourceError` when the mirror lacks the split or a file cannot be read.
    """
    store = MirrorStore(root, entry)
    rows: Iterator[dict[str, Any]] = (
        row for shard in store.list_shards(split) for row in store.read(split, shard))
    if max_rows is not None:
        rows = islice(rows, max_rows)
    start = 0
    while batch := list(islice(rows, BATCH_ROWS)):
        yield start, batch
        start += len(batch)


class TokenCounter:
    """Token counts exactly as the cache builder tokenizes (extra ids included), in batches."""

    def __init__(self, model_file: str | os.PathLike = SAMPLE_VOCAB):
        from p3data.tokenize import Tokenizer
        from p3data.vocab import EXTRA_IDS, read_vocabulary

        self.model_file = Path(model_file)
        self._tokenizer = Tokenizer(read_vocabulary(str(model_file)), EXTRA_IDS)

    def describe(self) -> str:
        if self.model_file.resolve() == SAMPLE_VOCAB.resolve():
            return f"the offline sample vocabulary ({self.model_file}), not T5's"
        return str(self.model_file)

    def count(self, texts: list[str]) -> list[int]:
        return [len(ids) for ids in self._tokenizer.encode(texts)] if texts else []
