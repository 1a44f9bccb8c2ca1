"""`p3data overlap`: shared datasets, and n-gram hits on a planted duplicate but not otherwise."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from p3data.cli import main
from p3data.datasets.rows import read_jsonl
from p3data.datasets.samples import SAMPLES_DIR
from p3data.fewshot import define_variant_mixture
from p3data.quality.overlap import ngrams, overlap, shared_datasets, words
from p3data.taskset import Contribution, load_definitions

TRAIN = "t0_train_one_og_prompt"  # 35 tasks, imdb among them: quick to render
EVAL = "t0_eval_score_eval"
IMDB_TASK = "imdb_Movie_Expressed_Sentiment"


@pytest.fixture(scope="module")
def definitions():
    return load_definitions()


@pytest.fixture
def planted(tmp_path) -> tuple[Path, str]:
    """A copy of the samples whose first imdb training review quotes an RTE validation row."""
    mirror = tmp_path / "mirror"
    shutil.copytree(SAMPLES_DIR, mirror)
    premise = read_jsonl(SAMPLES_DIR / "super_glue" / "rte" / "validation.jsonl")[0]["premise"]
    path = mirror / "imdb" / "train.jsonl"
    rows = read_jsonl(path)
    rows[0]["text"] = f"Opening scene. {premise.upper()} Then it drags on for an hour."
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return mirror, premise


@pytest.mark.parametrize("train, flagged", [
    ("t0++_train", {"hellaswag", "super_glue/wsc.fixed", "super_glue/copa", "super_glue/wic"}),
    ("t0+_train", {"hellaswag"}),
    ("t0_train", set()),
])
def test_datasets_trained_on_and_evaluated(definitions, train, flagged):
    shared = shared_datasets(definitions.select([train]), definitions.select([EVAL]),
                             "train", "validation")
    assert {s.dataset for s in shared} == flagged
    for s in shared:
        assert s.train_splits == ["train"] and s.eval_splits == ["validation"]


def test_words_ignore_case_and_punctuation():
    assert words("The CAT, sat -- on_the mat!") == ["the", "cat", "sat", "on", "the", "mat"]
    grams = dict(ngrams(words("a b c d"), 3))
    assert list(grams.values()) == ["a b c", "b c d"]
    assert dict(ngrams(words("A b, C."), 3)) == dict(ngrams(["a", "b", "c"], 3))


def test_planted_duplicate_is_found(definitions, planted):
    mirror, _ = planted
    report = overlap(definitions, TRAIN, EVAL, mirror)
    [pair] = report.pairs
    assert (pair.train_task, pair.train_split) == (IMDB_TASK, "train")
    assert (pair.eval_dataset, pair.eval_split) == ("super_glue/rte", "validation")
    assert len(pair.eval_tasks) == 10  # RTE's original-task templates all read that row
    [hit] = pair.hits
    assert (hit.train_row, hit.eval_row) == (0, 0)
    assert hit.ngram.startswith("a magnitude 6 1 earthquake")


def test_distinct_text_gives_no_hit(definitions):
    report = overlap(definitions, TRAIN, EVAL, SAMPLES_DIR)
    assert report.pairs == [] and report.missing == []
    assert report.train_examples > 300 and report.eval_rows > 100
    assert 0 < report.unchecked_eval_rows < report.eval_rows


def test_a_shorter_n_finds_shorter_copies(definitions, planted):
    mirror, premise = planted
    assert len(words(premise)) == 19
    assert overlap(definitions, TRAIN, EVAL, mirror, n=20).pairs == []
    assert overlap(definitions, TRAIN, EVAL, mirror, n=19).pairs


def test_a_few_shot_variants_exemplars_are_training_text(definitions, tmp_path):
    """An evaluation premise planted in a training row's target: zero-shot prompts never show
    it, but that row's render is an exemplar of the variants with shots."""
    mirror = tmp_path / "mirror"
    shutil.copytree(SAMPLES_DIR, mirror)
    premise = read_jsonl(SAMPLES_DIR / "super_glue" / "rte" / "validation.jsonl")[0]["premise"]
    path = mirror / "gigaword" / "train.jsonl"
    rows = read_jsonl(path)
    rows[3]["summary"] = premise
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    mixture = define_variant_mixture(definitions, "gigaword_fewshot", tasks=["gigaword_TLDR"])
    mine = definitions.adding("mine", Contribution(mixtures={mixture.name: mixture}))
    report = overlap(mine, mixture.name, EVAL, mirror)
    assert {pair.train_task for pair in report.pairs} == {
        f"gigaword_TLDR_{k}shot" for k in (1, 3, 5)}
    for pair in report.pairs:
        assert (pair.train_split, pair.eval_dataset) == ("train", "super_glue/rte")
        assert {(hit.train_row, hit.eval_row) for hit in pair.hits} == {(3, 0)}


def test_command_writes_rows_to_exclude(planted, tmp_path, capsys):
    mirror, _ = planted
    out_file = tmp_path / "exclude.jsonl"
    code = main(["overlap", "--train", TRAIN, "--eval", EVAL, "--data-dir", str(mirror),
                 "--exclude-out", str(out_file)])
    assert code == 1
    out, _ = capsys.readouterr()
    assert f"{IMDB_TASK} row 0 ~ super_glue/rte validation row 0" in out
    assert read_jsonl(out_file) == [{"task": IMDB_TASK, "split": "train", "row": 0}]


def test_command_on_the_samples(capsys):
    assert main(["overlap", "--train", "t0_train", "--eval", EVAL, "--samples", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["shared"] == [] and data["pairs"] == [] and data["n"] == 13
    assert main(["overlap", "--train", "t0++_train", "--eval", EVAL, "--samples"]) == 1
    out, _ = capsys.readouterr()
    assert "another split of the same dataset is not held out" in out
    assert "super_glue/wic" in out and "no shared n-grams" in out
