"""The bundled sample rows: schema-true rows for every dataset T0's mixtures use.

They live in `p3data/data/samples/<dataset>/[<subset>/]<split>.jsonl`, the same layout as a
local data mirror, so the samples double as a mirror for tests and the demo.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from p3data.rows import read_jsonl

SAMPLES_DIR = Path(__file__).parent / "data" / "samples"


def sample_folder(dataset: str, subset: str | None = None) -> Path:
    return SAMPLES_DIR / dataset / subset if subset else SAMPLES_DIR / dataset


def sample_splits(dataset: str, subset: str | None = None) -> list[str]:
    """Split names with sample rows, sorted."""
    return sorted(path.stem for path in sample_folder(dataset, subset).glob("*.jsonl"))


def sample_rows(dataset: str, subset: str | None, split: str) -> list[dict[str, Any]]:
    return read_jsonl(sample_folder(dataset, subset) / f"{split}.jsonl")
