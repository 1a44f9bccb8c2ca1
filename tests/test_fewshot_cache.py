"""`p3data cache` of few-shot variants: stock seqio reads back exactly the stats' count, the
examples seqio makes on the fly, the same bytes whatever the sharding, workers or runner, and
T0's own tasks as they were."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.cache import assert_same_examples, read_examples, run_cache, tree
from helpers.command_server import run_p3data

from p3data.format.features import EXEMPLAR_ROWS, NUM_SHOTS
from p3data.format.tfrecord import read_records
from p3data.tokenize.tokenizer import ENV_MEMO

pytestmark = pytest.mark.usefixtures("samples_in_seqio")

VARIANTS = ["super_glue_rte_GPT_3_style_1shot", "super_glue_rte_GPT_3_style_5shot",
            "super_glue_copa_exercise_score_eval_0shot",
            "super_glue_copa_exercise_score_eval_3shot",
            "story_cloze_2016_Answer_Given_options_score_eval_1shot"]  # no train split
PLAIN = "super_glue_copa_exercise"  # a T0 task built beside its variants
PATTERN = "|".join([*VARIANTS, PLAIN])


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("fewshot")
    run_cache(out, "--tasks", PATTERN)
    return out


def splits(folder: Path) -> list[str]:
    return sorted(p.name.split(".")[1] for p in folder.glob("stats.*.json"))


@pytest.mark.parametrize("name", VARIANTS)
def test_stock_seqio_reads_exactly_the_stats_count_and_the_on_the_fly_examples(built, name):
    for split in splits(built / name):
        cached = read_examples(name, split, built)
        stats = json.loads((built / name / f"stats.{split}.json").read_text())
        assert len(cached) == stats["examples"] > 0
        fresh = read_examples(name, split)
        assert_same_examples(cached, fresh)
        if "score_eval" in name:
            assert [tuple(e["idx"]) for e in cached] == [tuple(e["idx"]) for e in fresh]
        assert all(len(e[EXEMPLAR_ROWS]) == e[NUM_SHOTS] for e in cached)


STOCK = ["super_glue_rte_GPT_3_style_5shot", "super_glue_copa_exercise_score_eval_0shot",
         "story_cloze_2016_Answer_Given_options_score_eval_1shot"]


def test_stock_seqio_cache_tasks_makes_the_same_examples(built, stock_seqio_cache):
    """`seqio_cache_tasks --module_import=p3data.tasks`, the stock command line, on the same
    rows and vocabulary, in two shards (conftest)."""
    for name in STOCK:
        for split in splits(built / name):
            assert_same_examples(read_examples(name, split, stock_seqio_cache),
                                 read_examples(name, split, built))


def test_records_are_serialized_deterministically(built):
    import tensorflow as tf

    for name in VARIANTS:
        for shard in (built / name).glob("*.tfrecord-*"):
            with shard.open("rb") as handle:
                for record in read_records(handle, str(shard)):
                    example = tf.train.Example.FromString(record)
                    assert example.SerializeToString(deterministic=True) == record


def test_manifest_records_what_made_the_prompts_and_the_shot_histogram(built):
    folder = built / "super_glue_rte_GPT_3_style_5shot"
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["fewshot"]["task"] == "super_glue_rte_GPT_3_style"
    assert manifest["fewshot"]["shots"] == 5 and manifest["fewshot"]["input_length"] == 1024
    validation = manifest["splits"]["validation"]
    assert sum(validation["fewshot"]["shots"].values()) == validation["stats"]["examples"]
    assert manifest["sources"]["validation"]["exemplars"]["split"] == "train"
    plain = json.loads((built / PLAIN / "manifest.json").read_text())
    assert "fewshot" not in plain and "fewshot" not in plain["splits"]["train"]


def test_pool_parts_merged_are_the_pool_of_all_their_rows(tmp_path):
    from helpers.fewshot import TaskSplit

    from p3data.dataset_key import DatasetKey
    from p3data.datasets.samples import sample_rows
    from p3data.fewshot.pool import merge_pools

    rows = sample_rows(DatasetKey("super_glue", "rte"), "train")
    task = TaskSplit("super_glue", "rte", "GPT-3 style", "validation", rows)
    task.pool().save(tmp_path / "whole")
    merge_pools([task.pool([(a, b)]) for a, b in [(7, len(rows)), (0, 3), (3, 7)]],
                tmp_path / "merged")
    assert tree(tmp_path / "merged") == tree(tmp_path / "whole")


def test_a_t0_task_is_the_same_bytes_with_or_without_variants(built, tmp_path):
    run_cache(tmp_path, "--tasks", PLAIN)
    assert tree(tmp_path / PLAIN) == tree(built / PLAIN)


def test_prompts_tokenized_whole_are_the_same_bytes_as_joined(built, tmp_path):
    """The memo turned off turns joining prompts' ids off: every prompt is tokenized whole."""
    run_cache(tmp_path, "--tasks", PATTERN, env={ENV_MEMO: "0"})
    assert tree(tmp_path) == tree(built)


def test_same_bytes_whatever_the_sharding_and_the_workers(built, tmp_path):
    run_cache(tmp_path / "a", "--tasks", PATTERN, "--rows-per-shard", "3",
              "--direct_num_workers=2", "--direct_running_mode=multi_processing")
    assert tree(tmp_path / "a") == tree(built)
    run_cache(tmp_path / "b", "--tasks", PATTERN, "--rows-per-shard", "4")
    assert tree(tmp_path / "b") == tree(built)


def test_the_report_shows_the_variants_figures(built, tmp_path):
    out = tmp_path / "report.html"
    result = run_p3data(["report", str(built), "--out", str(out)], timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    markdown = out.with_suffix(".md").read_text()
    section = markdown.split("## Few-shot variants", 1)[1].split("\n## ", 1)[0]
    assert "| super_glue_rte_GPT_3_style_5shot | 5:30 |" in section
    assert PLAIN + " |" not in section
    assert 'id="fewshot"' in out.read_text()


def test_a_rerun_finds_every_variant_complete_and_sums_them_up(built):
    result = run_cache(built, "--tasks", PATTERN)
    assert f"{len(VARIANTS) + 1} already complete" in result.stderr
    table = result.stdout.split("few-shot task", 1)[1]
    assert "super_glue_rte_GPT_3_style_1shot" in table and PLAIN + " " not in table
    assert "shots: examples per shot count" in table
