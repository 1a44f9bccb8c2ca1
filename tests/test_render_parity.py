"""p3data renders every T0 template exactly like promptsource 0.1.0 + T0's row rule."""

from __future__ import annotations

import copy

import pytest
from helpers.t0_reference import Reference, promptsource_template, t0_apply

from p3data.dataset_key import DatasetKey
from p3data.datasets.samples import SAMPLES_DIR, sample_rows, sample_splits
from p3data.templates import TemplateCollection
from p3data.templates.render import (
    EMPTY_INPUTS,
    EXTRA_SEPARATOR,
    NO_SEPARATOR,
    RENDER_ERROR,
    CompiledTemplate,
    Dropped,
    Rendered,
)

COLLECTION = TemplateCollection.default()


def _sample_keys() -> list[tuple[str, str | None]]:
    keys = []
    for folder in sorted(SAMPLES_DIR.rglob("*.jsonl")):
        rel = folder.parent.relative_to(SAMPLES_DIR).parts
        key = DatasetKey(rel[0], rel[1] if len(rel) > 1 else None)
        if key not in keys and key in COLLECTION:
            keys.append(key)
    return keys


SAMPLE_KEYS = _sample_keys()


def _strings(value, change):
    """Apply `change` to every string inside a row value, at any depth."""
    if isinstance(value, str):
        return change(value)
    if isinstance(value, list):
        return [_strings(v, change) for v in value]
    if isinstance(value, dict):
        return {k: _strings(v, change) for k, v in value.items()}
    return value


def _long(text: str) -> str:
    filler = (text + " ") if text else "word "
    return (filler * (3000 // len(filler) + 1))[:3000]


EDGE_CASES = {
    "long fields": lambda row: {k: _strings(v, _long) for k, v in row.items()},
    # 3,000 characters, past the 2,048 of truncation, with no space added (those of the value
    # repeat): a value 3,000 times its own length proves no more and costs minutes
    "long unbroken fields": lambda row: {k: _strings(v, lambda s: ((s or "x") * 3000)[:3000])
                                         for k, v in row.items()},
    "separator in values": lambda row: {k: _strings(v, lambda s: s[:5] + " ||| " + s[5:])
                                        for k, v in row.items()},
    "top-level separator only": lambda row: {
        k: (v + "|||" if isinstance(v, str) else v) for k, v in row.items()},
    "empty strings": lambda row: {k: _strings(v, lambda s: "") for k, v in row.items()},
    "hidden labels": lambda row: {
        k: (-1 if k.startswith("label") and isinstance(v, int) else v) for k, v in row.items()},
}


def _matches(ours, ref: Reference) -> bool:
    if ref.kind == "kept":
        return isinstance(ours, Rendered) and (ours.inputs, ours.targets, ours.answer_choices) == (
            ref.inputs, ref.targets, ref.answer_choices)
    if ref.kind == "error":
        return isinstance(ours, Dropped) and ours.reason == RENDER_ERROR
    expected = {1: NO_SEPARATOR, 2: EMPTY_INPUTS}.get(ref.parts, EXTRA_SEPARATOR)
    return isinstance(ours, Dropped) and ours.reason == expected


def _compare(key, rows_by_case):
    """Every template of `key` on every row: returns (mismatches, kept count per template)."""
    mismatches, kept = [], {}
    for template in COLLECTION[key]:
        compiled = CompiledTemplate(template)
        reference = promptsource_template(key.dataset, key.subset, template.name)
        kept[template.name] = 0
        for case, rows in rows_by_case.items():
            for index, row in enumerate(rows):
                ours = compiled.render(copy.deepcopy(row), index)
                ref = t0_apply(reference, copy.deepcopy(row), index)
                if not _matches(ours, ref):
                    mismatches.append((template.name, case, index, ours, ref))
                kept[template.name] += isinstance(ours, Rendered)
    return mismatches, kept


@pytest.mark.parametrize("key", SAMPLE_KEYS, ids=str)
def test_sample_rows_render_like_promptsource(key):
    rows = {split: sample_rows(key, split) for split in sample_splits(key)}
    mismatches, kept = _compare(key, rows)
    assert not mismatches, mismatches[:3]
    never = [name for name, n in kept.items() if n == 0]
    assert not never, f"templates that keep no sample row: {never}"


@pytest.mark.parametrize("key", SAMPLE_KEYS, ids=str)
def test_edge_cases_render_like_promptsource(key):
    split = sample_splits(key)[0]
    base = sample_rows(key, split)[:3]
    rows = {case: [make(row) for row in base] for case, make in EDGE_CASES.items()}
    mismatches, _ = _compare(key, rows)
    assert not mismatches, mismatches[:3]
