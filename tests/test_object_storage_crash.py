"""Crash points on gs://, as tests/test_cache_crash.py has them on local disk: the build dies
like `kill -9` just before one of its object uploads or deletes (one point per kind, first and
last), against the local GCS-compatible server, with TFRecord shards and with ArrayRecord's
(written on local disk, then uploaded). After every crash, each task folder with
COMPLETED verifies and reads exactly the examples its stats say (through `p3data.read`:
TensorFlow's gfile does not reach a local server); the rerun finishes and its cache is the
uninterrupted build's, byte for byte."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.crash_run import crash_points, crash_run

from p3data import fs
from p3data.format import layout
from p3data.format.verify import verify_task
from p3data.read import open_cache
from p3data.vocab import SAMPLE_VOCAB

pytestmark = [pytest.mark.usefixtures("gcs_server"), pytest.mark.crash]

ARRAYRECORD = ("--shard-format", "arrayrecord")
TASKS = ["--tasks", "super_glue_rte_GPT_3_style(_score_eval)?|super_glue_copa_exercise",
         "--rows-per-shard", "8"]


def _crash_run(mode: str, logs: Path, target: str, points: list[int], *args: str,
               base: str | None = None) -> list[int]:
    return crash_run(mode, logs, points, ["--samples", "--vocab", str(SAMPLE_VOCAB),
                                          "--progress-every", "60", *TASKS, *args],
                     base=base, target=target)


def gs_tree(root: str) -> dict[str, bytes]:
    return {path[len(root) + 1:]: fs.read_bytes(path) for path in fs.walk_files(root)}


def assert_complete_tasks_read_what_stats_say(out: str) -> int:
    """Every task folder with COMPLETED verifies, and reads as many examples as its stats
    say; returns how many there are."""
    complete = [fs.parent_of(path) for path in fs.glob(f"{out}/*/{layout.COMPLETED}")]
    cache = open_cache(out) if complete else None
    for folder in complete:
        assert verify_task(folder) == [], folder
        task = fs.name_of(folder)
        for stats in fs.glob(f"{folder}/stats.*.json"):
            split = fs.name_of(stats).split(".")[1]
            expected = json.loads(fs.read_bytes(stats))["examples"]
            assert sum(1 for _ in cache.split(task, split)) == expected, (folder, split)
    return len(complete)


def _reference(gcs_server, tmp_path_factory, *args: str) -> tuple[str, Path]:
    """An uninterrupted build on gs:// with 2 shards per split, and the trace of its object
    operations."""
    logs = tmp_path_factory.mktemp("reference")
    target = gcs_server.create_bucket(f"crash-reference-{len(args)}") + "/out"
    assert _crash_run("crash", logs, target, [-1], "--shards", "2", *args) == [0]
    return f"{target}/-1", logs / "-1.crash.trace"


@pytest.fixture(scope="module")
def reference(gcs_server, tmp_path_factory) -> tuple[str, Path]:
    return _reference(gcs_server, tmp_path_factory)


@pytest.fixture(scope="module")
def arrayrecord_reference(gcs_server, tmp_path_factory) -> tuple[str, Path]:
    return _reference(gcs_server, tmp_path_factory, *ARRAYRECORD)


def _crash_and_rerun(logs: Path, target: str, points: list[int], *args: str,
                     base: str | None = None) -> None:
    assert _crash_run("crash", logs, target, points, *args, base=base) == [137] * len(points)
    for point in points:
        assert_complete_tasks_read_what_stats_say(f"{target}/{point}")
    assert _crash_run("rerun", logs, target, points, *args) == [0] * len(points)


@pytest.mark.parametrize("options", [(), ARRAYRECORD], ids=["tfrecord", "arrayrecord"])
def test_every_crash_point_of_a_build_on_gs(options, request, bucket, tmp_path):
    """ArrayRecord's shards, written on local disk then uploaded, too."""
    expected, trace = request.getfixturevalue(
        "arrayrecord_reference" if options else "reference")
    points = crash_points(trace)
    # uploads and deletes of every stage's objects, manifest, COMPLETED (ArrayRecord: no index)
    assert len(points) >= (19 if options else 20)
    if options:  # its work folder's objects are the TFRecord build's: the task folders' points
        operations = [json.loads(line) for line in trace.read_text().splitlines()]
        points = [point for point in points if "/.p3data-work" not in operations[point][1]]
        assert len(points) >= 6
    _crash_and_rerun(tmp_path, f"{bucket}/out", points, "--shards", "2", *options)
    want = gs_tree(expected)
    assert assert_complete_tasks_read_what_stats_say(expected) == 3
    for point in points:
        assert gs_tree(f"{bucket}/out/{point}") == want, point


def test_every_crash_point_of_a_rebuild_with_other_shards_on_gs(reference, bucket, tmp_path):
    """`--shards 2` then `--shards 1`: the old shards are never read beside the new."""
    built, _ = reference
    target = f"{bucket}/out"
    assert _crash_run("crash", tmp_path, target, [-1], "--shards", "1", base=built) == [0]
    expected = gs_tree(f"{target}/-1")
    assert not [name for name in expected if name.endswith("-of-00002")]
    points = crash_points(tmp_path / "-1.crash.trace", last=False)
    _crash_and_rerun(tmp_path / "crashes", f"{bucket}/crashes", points, "--shards", "1",
                     base=built)
    for point in points:
        assert gs_tree(f"{bucket}/crashes/{point}") == expected, point
