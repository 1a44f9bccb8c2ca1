"""The bundled sample rows: schema-true rows for every dataset T0's and xP3's mixtures use.

They live in `p3data/data/samples/<dataset>/[<subset>/]<split>.jsonl`, the same layout as a
local data mirror, so the samples double as a mirror for tests and the demo; xP3's families of
language configs (flores, wmt22, ...) are made by rule from `languages.yaml` instead
(`sample_rules.py`).
"""

from __future__ import annotations

import copy
import math
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from p3data.dataset_key import DatasetKey
from p3data.datasets.catalog import Catalog, DatasetEntry
from p3data.datasets.rows import read_jsonl
from p3data.datasets.sample_rules import SAMPLES_DIR, rule_rows, rule_splits
from p3data.templates import TemplateCollection
from p3data.templates.render import DatasetRenderer, Rendered


def sample_splits(key: DatasetKey) -> list[str]:
    """Split names with sample rows, sorted."""
    ruled = rule_splits(key)
    if ruled is not None:
        return ruled
    return sorted(path.stem for path in Path(key.folder(SAMPLES_DIR)).glob("*.jsonl"))


def sample_rows(key: DatasetKey, split: str) -> list[dict[str, Any]]:
    if rule_splits(key) is not None:
        return rule_rows(key, split)
    return read_jsonl(f"{key.folder(SAMPLES_DIR)}/{split}.jsonl")


def generate_rows(
    entry: DatasetEntry, split: str, count: int, seed: int = 0
) -> Iterator[dict[str, Any]]:
    """`count` rows shaped like the samples of `split`, with realistic text lengths.

    Each row copies a sample row (so labels, choices and branches stay valid) and lengthens
    the catalog's long free-text fields to a length drawn around their real mean, by appending
    words from the dataset's own samples. Appending keeps answers inside their contexts and
    answer offsets valid. The same entry, split, count and seed give the same rows.
    """
    base = sample_rows(entry.key, split)
    if not base:
        raise ValueError(f"{entry.name}: no sample rows for split {split!r}")
    words = sorted({w for row in base for text in _strings(row) for w in text.split()})
    rng = random.Random(f"{entry.name}\0{split}\0{seed}")
    for _ in range(count):
        row = copy.deepcopy(rng.choice(base))
        for name, mean in entry.text_lengths.items():
            text = row.get(name)
            if not isinstance(text, str) or not mean:
                continue
            target = int(rng.lognormvariate(math.log(mean), 0.5))
            filler = []
            length = len(text)
            while length < target:
                filler.append(rng.choice(words))
                length += len(filler[-1]) + 1
            row[name] = " ".join([text, *filler]) if filler else text
        yield row


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)


def rendered_texts(catalog: Catalog, collection: TemplateCollection) -> Iterator[str]:
    """Every prompt and target the templates make of the samples: text to train a vocabulary."""
    for entry in catalog:
        if entry.key not in collection:
            continue
        renderer = DatasetRenderer(collection[entry.key])
        for split in sample_splits(entry.key):
            for outcomes in renderer.render_batch(sample_rows(entry.key, split)).values():
                for outcome in outcomes:
                    if isinstance(outcome, Rendered):
                        yield outcome.inputs
                        yield outcome.targets
