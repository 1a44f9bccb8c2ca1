"""What the checks share: the local mirror they read, its rows in batches, token counts, and
a few-shot variant's prompts made of the mirror's rows."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator
from itertools import islice
from pathlib import Path
from typing import Any

from p3data import fs
from p3data.batching import row_batches
from p3data.datasets.catalog import DatasetEntry
from p3data.datasets.stores import ENV_DATA_DIR, mirror_dir, open_store
from p3data.errors import P3DataError
from p3data.fewshot import VariantSpec
from p3data.fewshot.pool import build_pool, pool_source
from p3data.fewshot.prompter import FewshotPrompter
from p3data.templates.render import DatasetRenderer
from p3data.tokenize import Tokenizer
from p3data.vocab import SAMPLE_VOCAB


def data_root(data_dir: str | os.PathLike | None) -> str:
    """The mirror to read (see `stores.mirror_dir`; any filesystem), which must exist: checks
    read whole splits, so they never fall back to downloading from the Hub."""
    root = mirror_dir(data_dir)
    if root is None:
        raise P3DataError(
            f"no rows to read: set {ENV_DATA_DIR} or choose a local mirror, "
            "DIR/<dataset>[/<subset>]/<split>.jsonl|parquet, or the bundled sample rows",
            setting="rows")
    if not fs.is_dir(root):
        state = "is a file, not a folder" if fs.exists(root) else "does not exist"
        raise P3DataError(f"data folder {root} {state}", setting="rows")
    return root


def read_batches(
    root: str, entry: DatasetEntry, split: str, max_rows: int | None = None
) -> Iterator[tuple[int, list[dict[str, Any]]]]:
    """(number of the first row, rows) for one split of a mirror, in batches.

    Raises a `SourceError` when the mirror lacks the split or a file cannot be read.
    """
    store = open_store(entry, root)
    rows: Iterator[dict[str, Any]] = (
        row for shard in store.list_shards(split) for row in store.read(split, shard))
    if max_rows is not None:
        rows = islice(rows, max_rows)
    start = 0
    for batch in row_batches(rows):
        yield start, batch
        start += len(batch)


class TokenCounter:
    """Token counts exactly as the cache builder tokenizes (extra ids included), in batches."""

    def __init__(self, model_file: str | os.PathLike = SAMPLE_VOCAB):
        from p3data.vocab import EXTRA_IDS, read_vocabulary

        self.model_file = Path(model_file)
        self._tokenizer = Tokenizer(read_vocabulary(str(model_file)), EXTRA_IDS)

    def describe(self) -> str:
        if self.model_file.resolve() == SAMPLE_VOCAB.resolve():
            return f"the offline sample vocabulary ({self.model_file}), not T5's"
        return str(self.model_file)

    @property
    def tokenizer(self) -> Tokenizer:
        return self._tokenizer

    def count(self, texts: list[str]) -> list[int]:
        return [len(ids) for ids in self._tokenizer.encode(texts)] if texts else []


def variant_prompter(spec: VariantSpec, split: str, *, root: str, tokenizer: Tokenizer,
                     max_rows: int | None = None) -> FewshotPrompter:
    """The prompter of a variant's task split at its shot count, over a pool of the mirror's
    rows (at most `max_rows` of them), as the cache builds it."""
    source = pool_source(spec.base, split)
    renderer = DatasetRenderer([spec.template])
    settings = dataclasses.replace(spec.settings, shots=(spec.shots,), ratio=None)
    batches = read_batches(root, spec.entry, source.split, max_rows) if spec.shots else ()
    pool = build_pool((renderer.render_batch(rows, start)[spec.template.name]
                       for start, rows in batches), settings, tokenizer)
    return FewshotPrompter(task=spec.draw_task, split=split,
                           template=renderer.templates[spec.template.name], pool=pool,
                           source=source, settings=settings, tokenizer=tokenizer,
                           long_fields=list(spec.entry.text_lengths))
