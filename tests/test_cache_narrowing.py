"""A run touches only what it was asked to build: a narrower `--splits` keeps (and lists) the
splits it did not select, a narrower `--tasks` leaves the other task folders alone, and a crash
anywhere in a narrowed rebuild never loses the splits it kept."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from helpers.cache import copy_samples, read_examples, run_cache, t0_only, tree
from helpers.crash_run import crash_points, crash_run, kind

from p3data.format.verify import verify_task
from p3data.vocab import SAMPLE_VOCAB

pytestmark = pytest.mark.usefixtures("samples_in_seqio")

RTE = "super_glue_rte_GPT_3_style"
COPA = "super_glue_copa_exercise"
AXG = "super_glue_axg_GPT_3_style"  # its dataset has a test split only


def _manifest(folder: Path) -> dict:
    return json.loads((folder / "manifest.json").read_text())


def _split_files(folder: Path, *splits: str) -> dict[str, bytes]:
    """The files of these splits (shards, indexes, info, stats), by name."""
    def of(name: str) -> bool:
        return any(name.startswith((f"{s}.tfrecord-", f"index.{s}-", f"info.{s}.json",
                                    f"stats.{s}.json")) for s in splits)
    return {name: data for name, data in tree(folder).items() if of(name)}


def _assert_seqio_reads_every_split(out: Path, task: str, splits: tuple[str, ...]) -> None:
    folder = out / task
    assert verify_task(str(folder)) == []
    assert set(_manifest(folder)["splits"]) == set(splits)
    for split in splits:
        stats = json.loads((folder / f"stats.{split}.json").read_text())
        assert len(read_examples(task, split, out)) == stats["examples"] > 0, split


@pytest.fixture
def rte_mirror(tmp_path) -> tuple[Path, Path]:
    """A mirror of RTE, and an output folder with a complete build of its 3 splits from it."""
    mirror = tmp_path / "mirror"
    copy_samples(mirror, "super_glue", "rte")
    out = tmp_path / "out"
    run_cache(out, "--tasks", RTE, data_dir=mirror)
    return mirror, out


def test_a_narrower_splits_over_a_complete_cache_keeps_every_split(tmp_path):
    out = tmp_path / "out"
    run_cache(out, "--tasks", t0_only(f"{RTE}.*"))
    before = tree(out)
    result = run_cache(out, "--tasks", t0_only(f"{RTE}.*"), "--splits", "train")
    assert "2 already complete" in result.stderr
    assert tree(out) == before
    for task in (RTE, f"{RTE}_score_eval"):
        _assert_seqio_reads_every_split(out, task, ("train", "validation", "test"))


def test_rebuilding_one_split_keeps_the_others_byte_identical_and_listed(rte_mirror):
    mirror, out = rte_mirror
    kept = _split_files(out / RTE, "validation", "test")
    train = mirror / "super_glue" / "rte" / "train.jsonl"
    rows = train.read_text().splitlines()
    train.write_text("\n".join(rows[:-2]) + "\n")  # the train rows changed: train is rebuilt
    run_cache(out, "--tasks", RTE, "--splits", "train", data_dir=mirror)
    assert _split_files(out / RTE, "validation", "test") == kept
    manifest = _manifest(out / RTE)
    assert manifest["splits"]["train"]["rows_read"] == len(rows) - 2
    assert set(manifest["sources"]) == set(manifest["split_mapping"]) == {
        "train", "validation", "test"}
    _assert_seqio_reads_every_split(out, RTE, ("train", "validation", "test"))
    # and a run of every split finds nothing to do
    again = run_cache(out, "--tasks", RTE, data_dir=mirror)
    assert "1 already complete" in again.stderr


def test_rebuilding_one_split_with_other_settings_is_refused_and_touches_nothing(rte_mirror):
    mirror, out = rte_mirror
    before = tree(out)
    result = run_cache(out, "--tasks", RTE, "--splits", "train", "--seed", "1", data_dir=mirror,
                       check=False)
    assert result.returncode == 1
    failed = [line for line in result.stdout.splitlines() if line.startswith(f"FAILED {RTE}")]
    assert len(failed) == 1 and "validation" in failed[0] and "--splits" in failed[0], failed
    assert tree(out) == before


def test_a_narrower_tasks_leaves_the_other_task_folders_alone(tmp_path):
    out = tmp_path / "out"
    run_cache(out, "--tasks", f"{RTE}|{COPA}")
    copa = tree(out / COPA)
    run_cache(out, "--tasks", RTE, "--seed", "1")
    assert tree(out / COPA) == copa
    assert _manifest(out / RTE)["seed"] == 1
    assert verify_task(str(out / COPA)) == []


def test_a_task_without_the_splits_asked_for_is_left_alone(tmp_path):
    out = tmp_path / "out"
    run_cache(out, "--tasks", f"{RTE}|{AXG}")
    axg = tree(out / AXG)
    result = run_cache(out, "--tasks", f"{RTE}|{AXG}", "--splits", "train", check=False)
    assert result.returncode == 0, result.stdout
    assert tree(out / AXG) == axg


@pytest.mark.crash
def test_every_crash_point_of_a_narrowed_rebuild_keeps_the_other_splits(rte_mirror, tmp_path):
    """The rebuild of train dies before each of its operations on the task folder (the first
    of each kind that deletes or seals, and the first shard): validation and test are never
    touched, what seqio reads is sound, and the rerun ends like
    an uninterrupted rebuild."""
    mirror, built = rte_mirror
    kept = _split_files(built / RTE, "validation", "test")
    train = mirror / "super_glue" / "rte" / "train.jsonl"
    train.write_text("\n".join(train.read_text().splitlines()[:-2]) + "\n")
    args = ["--data-dir", str(mirror), "--vocab", str(SAMPLE_VOCAB), "--progress-every", "60",
            "--tasks", RTE, "--splits", "train", "--rows-per-shard", "4"]
    assert crash_run("crash", tmp_path / "whole", [-1], args, base=built) == [0]
    expected = tree(tmp_path / "whole" / "-1")
    trace = tmp_path / "whole" / "-1.crash.trace"
    operations = [json.loads(line) for line in trace.read_text().splitlines()]
    points = [point for point in crash_points(trace, last=False)  # where a split could be lost
              if re.fullmatch(r"delete (task \S+|index|info|stats|shard)|rename shard|\w+ task "
                              r"(manifest\.json|COMPLETED)", kind(*operations[point]))]
    assert len(points) >= 8
    crashes = tmp_path / "crashes"
    assert crash_run("crash", crashes, points, args, base=built) == [137] * len(points)
    for point in points:
        folder = crashes / str(point) / RTE
        assert _split_files(folder, "validation", "test") == kept, point
        if (folder / "COMPLETED").exists():
            assert verify_task(str(folder)) == [], point
    assert crash_run("rerun", crashes, points, args) == [0] * len(points)
    for point in points:
        assert tree(crashes / str(point)) == expected, point
