"""Postprocessors T0 used: seqio calls them as `(output, example=None, is_target=False)`."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

Postprocessor = Callable[..., Any]


def _as_text(value: str | bytes) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else value


def strip_whitespace(output: str | bytes, example: Any = None, is_target: bool = False) -> str:
    """Cached promptsource targets carry a leading space; strip both sides of everything."""
    return _as_text(output).strip()


def string_label_to_class_id(label_classes: Sequence[str]) -> Postprocessor:
    """Postprocessor giving the index of the output in `label_classes`, or -1 if absent."""
    classes = list(label_classes)

    def postprocess(output: str | bytes, example: Any = None, is_target: bool = False) -> int:
        text = _as_text(output)
        return classes.index(text) if text in classes else -1

    return postprocess


def class_id_postprocessor(fixed_choices: Sequence[str] | None) -> Postprocessor:
    """T0's choice: with fixed answer choices, strip then map to a class id; else only strip."""
    if not fixed_choices:
        return strip_whitespace
    to_class_id = string_label_to_class_id(fixed_choices)

    def postprocess(output: str | bytes, example: Any = None, is_target: bool = False) -> int:
        return to_class_id(strip_whitespace(output))

    return postprocess


def rank_classification_postprocessor(
    score: Any, example: Mapping[str, Any] | None = None, is_target: bool = False
) -> Any:
    """For targets, `(idx, is_correct, weight)` from the example; for predictions, the score."""
    if not is_target:
        return score
    if example is None:
        raise ValueError("rank_classification_postprocessor needs the example for targets")
    return (
        tuple(int(i) for i in example["idx"]),
        bool(example["is_correct"]),
        float(example.get("weight", 1.0)),
    )
