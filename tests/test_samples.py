"""The bundled samples: every T0 dataset, every split, schema-true; and the row generator."""

from __future__ import annotations

import pytest

from p3data.dataset_key import DatasetKey
from p3data.datasets.catalog import Catalog
from p3data.datasets.samples import generate_rows, sample_rows, sample_splits
from p3data.datasets.schema import RowChecker

CATALOG = Catalog.load()
ENTRIES = list(CATALOG)


def test_catalog_lists_t0s_66_datasets_and_winogrande_debiased():
    assert len(ENTRIES) == 67
    roles = [(e.train, e.eval) for e in ENTRIES]
    assert [e.name for e in ENTRIES if e.train is None and e.eval is None] == [
        "winogrande/winogrande_debiased"]  # in P3, in no T0 mixture
    assert sum(r[0] == "t0" for r in roles) == 38
    assert sum(r[0] == "t0+" for r in roles) == 10
    assert sum(r[0] == "t0++" for r in roles) == 6
    assert sum(r[1] == "held_out" for r in roles) == 9
    assert sum(r[1] == "bias_fairness" for r in roles) == 7


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e.name)
def test_samples_cover_every_split_and_follow_the_schema(entry):
    assert sample_splits(entry.key) == sorted(entry.splits)
    for split in entry.splits:
        rows = sample_rows(entry.key, split)
        assert len(rows) >= 8, f"{split}: {len(rows)} rows"
        checker = RowChecker(entry.features)
        for number, row in enumerate(rows):
            assert checker.problems(row) == [], f"{split} row {number}"
            assert set(row) == set(entry.features), f"{split} row {number}: columns"


def test_generator_is_deterministic_and_keeps_labels():
    entry = CATALOG.get("super_glue", "copa")
    first = list(generate_rows(entry, "train", 200, seed=3))
    assert first == list(generate_rows(entry, "train", 200, seed=3))
    assert first != list(generate_rows(entry, "train", 200, seed=4))
    samples = sample_rows(DatasetKey("super_glue", "copa"), "train")
    assert {r["question"] for r in first} == {r["question"] for r in samples}
    checker = RowChecker(entry.features)
    assert all(checker.problems(row) == [] for row in first)


def test_generator_lengthens_free_text_towards_real_lengths():
    entry = CATALOG.get("cnn_dailymail", "3.0.0")
    rows = list(generate_rows(entry, "train", 300))
    mean = sum(len(r["article"]) for r in rows) / len(rows)
    sample_mean = sum(len(r["article"]) for r in sample_rows(entry.key, "train")) / 10
    assert mean > 2 * sample_mean and 0.5 * entry.text_lengths["article"] < mean
    squad = CATALOG.get("squad_v2")
    for row in generate_rows(squad, "train", 50):  # answers stay inside their contexts
        for text, start in zip(row["answers"]["text"], row["answers"]["answer_start"],
                               strict=True):
            assert row["context"][start:start + len(text)] == text
