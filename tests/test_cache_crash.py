"""Crash points, driven deterministically: the build dies like `kill -9` just before one of its
file operations (one point per kind of operation, first and last occurrence), for a fresh
build (of TFRecord shards, and of ArrayRecord shards) and for a rebuild with other settings.
After every crash, each task folder stock seqio would read (it has COMPLETED) holds exactly
the examples its stats say and nothing else (ArrayRecord's: as grain's `ArrayRecordDataSource`
reads the split's shards, found by name); the rerun finishes and is byte-identical to an
uninterrupted build. ArrayRecord's own cases: a rebuild of a TFRecord cache into ArrayRecord
shards, and a full disk as its shards are written."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import grain.python as grain
import pytest
from helpers.cache import read_examples, run_cache, tree
from helpers.crash_run import crash_points, crash_run, kind

from p3data.format.verify import verify_task
from p3data.vocab import SAMPLE_VOCAB

pytestmark = [pytest.mark.usefixtures("samples_in_seqio"), pytest.mark.crash]

TASKS = ["--tasks", "super_glue_rte_GPT_3_style(_score_eval)?|super_glue_copa_exercise",
         "--rows-per-shard", "8"]
_READ_BACK: set[str] = set()  # digests of task folders seqio already read back correctly
ARRAYRECORD = ("--shard-format", "arrayrecord")


def _crash_run(mode: str, outputs: Path, points: list[int], *args: str,
               base: Path | None = None) -> list[int]:
    return crash_run(mode, outputs, points, ["--samples", "--vocab", str(SAMPLE_VOCAB),
                                             "--progress-every", "60", *TASKS, *args], base=base)


def _assert_seqio_reads_what_stats_say(out: Path) -> int:
    """Every folder seqio would read: exactly its manifest's files, and as many examples as its
    stats say. Returns how many task folders were complete."""
    complete = [folder for folder in out.iterdir() if (folder / "COMPLETED").exists()]
    for folder in complete:
        assert verify_task(str(folder)) == [], folder
        digest = hashlib.sha256(repr(sorted(tree(folder).items())).encode()).hexdigest()
        if digest in _READ_BACK:  # the same bytes as a folder read back before
            continue
        _READ_BACK.add(digest)
        for stats in folder.glob("stats.*.json"):
            split = stats.name.split(".")[1]
            expected = json.loads(stats.read_text())["examples"]
            if shards := sorted(folder.glob(f"{split}.array_record-*")):  # as grain's users
                source = grain.ArrayRecordDataSource(list(map(str, shards)))  # find them
                read = [source[number] for number in range(len(source))]
            else:  # seqio reads TFRecord shards only
                read = read_examples(folder.name, split, out)
            assert len(read) == expected, (folder, split)
    return len(complete)


def _reference(tmp_path_factory, *args: str) -> tuple[Path, Path]:
    """An uninterrupted build with 2 shards per split, and the trace of its file operations."""
    root = tmp_path_factory.mktemp("reference")
    assert _crash_run("crash", root, [-1], "--shards", "2", *args) == [0]
    return root / "-1", root / "-1.crash.trace"


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> tuple[Path, Path]:
    return _reference(tmp_path_factory)


@pytest.fixture(scope="module")
def arrayrecord_reference(tmp_path_factory) -> tuple[Path, Path]:
    return _reference(tmp_path_factory, *ARRAYRECORD)


def _on_task_folders(trace: Path, points: list[int]) -> list[int]:
    """The points that are operations on task folders (what seqio and grain read)."""
    entries = [json.loads(line) for line in trace.read_text().splitlines()]
    return [point for point in points if "/.p3data-work" not in str(entries[point][1])]


def _crash_and_rerun(outputs: Path, points: list[int], *args: str,
                     base: Path | None = None) -> None:
    """Every crash leaves what seqio reads complete and correct; every rerun finishes."""
    assert _crash_run("crash", outputs, points, *args, base=base) == [137] * len(points)
    for point in points:
        _assert_seqio_reads_what_stats_say(outputs / str(point))
    assert _crash_run("rerun", outputs, points, *args) == [0] * len(points)


@pytest.mark.parametrize("options", [(), ARRAYRECORD], ids=["tfrecord", "arrayrecord"])
def test_every_crash_point_of_a_build(options, request, tmp_path):
    expected, trace = request.getfixturevalue(
        "arrayrecord_reference" if options else "reference")
    points = crash_points(trace)
    assert len(points) >= 20  # every stage's files: parts, markers, shards, JSON, manifest...
    _crash_and_rerun(tmp_path, points, "--shards", "2", *options)
    for point in points:
        out = tmp_path / str(point)
        assert tree(out) == tree(expected), point
        assert "removed" in (tmp_path / f"{point}.rerun.log").read_text() or not list(
            out.rglob(".p3data-tmp-*"))


@pytest.mark.parametrize("options", [(), ARRAYRECORD], ids=["tfrecord", "to-arrayrecord"])
def test_every_crash_point_of_a_rebuild_with_other_shards(options, reference, tmp_path):
    """`--shards 2` then `--shards 1` (and TFRecord then ArrayRecord shards): the old shards
    must never be read beside the new."""
    built, _ = reference
    expected = tmp_path / "expected"
    run_cache(expected, *TASKS, "--shards", "1", *options)
    assert _crash_run("crash", tmp_path, [-1], "--shards", "1", *options, base=built) == [0]
    assert tree(tmp_path / "-1") == tree(expected)
    points = crash_points(tmp_path / "-1.crash.trace", last=False)
    if options:  # the work folder's points are the TFRecord rebuild's
        points = _on_task_folders(tmp_path / "-1.crash.trace", points)
        assert len(points) >= 8  # withdrawing old shards, writing new ones, JSON, seals
    _crash_and_rerun(tmp_path / "crashes", points, "--shards", "1", *options, base=built)
    for point in points:
        out = tmp_path / "crashes" / str(point)
        assert tree(out) == tree(expected), point
        assert not list(out.rglob("*-of-00002"))
        assert not options or not list(out.rglob("*.tfrecord-*"))


def test_stale_shards_and_temporaries_never_survive_a_rebuild(reference, tmp_path):
    """Files a crash of an older p3data could leave (temporaries named like shards) and shards
    of another shard count are gone after a rebuild, and seqio reads what the stats say."""
    built, _ = reference
    out = tmp_path / "out"
    shutil.copytree(built, out)
    folder = out / "super_glue_copa_exercise"
    (folder / ".p3data-tmp-0123abcd-train.tfrecord-00000-of-00002").write_bytes(b"x")
    run_cache(out, *TASKS, "--shards", "1")
    assert not list(out.rglob(".p3data-tmp-*"))
    assert sorted(p.name for p in folder.glob("train.tfrecord-*")) == [
        "train.tfrecord-00000-of-00001"]
    assert _assert_seqio_reads_what_stats_say(out) == 3


@pytest.mark.parametrize("options", [(), ARRAYRECORD], ids=["tfrecord", "arrayrecord"])
def test_a_disk_that_fills_up_at_every_crash_point(options, request, tmp_path):
    """From each crash point on, every file the build starts writing fails with ENOSPC (a full
    disk): the run stops with one line naming the folder it could not write in, exit 1, no
    traceback, its lock released; what seqio would read is complete and correct; a rerun
    with room finishes, byte-identical to an uninterrupted build. The first operation of each
    kind: a later one of the same kind fails the same way (the crash test takes those too).
    ArrayRecord's build differs only in how its shards are written: the points at which its
    shards are."""
    expected, trace = request.getfixturevalue(
        "arrayrecord_reference" if options else "reference")
    points = crash_points(trace, last=False)
    entries = [json.loads(line) for line in trace.read_text().splitlines()]
    operations = [operation for operation, _ in entries]
    if options:
        points = [point for point in points if kind(*entries[point]).endswith(" shard")]
    # (after the last file created, the run has what it needs)
    stopped = [point for point in points if "create" in operations[point:]]
    assert len(stopped) >= (2 if options else 20)
    codes = _crash_run("full", tmp_path, points, "--shards", "2", *options)
    assert codes == [1 if point in stopped else 0 for point in points]
    for point in stopped:
        log = (tmp_path / f"{point}.full.log").read_text()
        last = log.strip().splitlines()[-1]
        assert last.startswith("p3data: error: no space left on the device writing in "), log
        assert str(tmp_path / str(point)) in last and "make room and run it again" in last
        assert "Traceback" not in log and "a bug in p3data" not in log, log
        assert not (tmp_path / str(point) / ".p3data-lock").exists()  # released
        _assert_seqio_reads_what_stats_say(tmp_path / str(point))
    assert _crash_run("rerun", tmp_path, points, "--shards", "2", *options) == [0] * len(points)
    for point in points:
        assert tree(tmp_path / str(point)) == tree(expected), point


def test_a_disk_that_fills_up_in_the_exemplar_pool_stage(tmp_path):
    """A few-shot variant's exemplar pools are written first (numpy's and pathlib's writes,
    whose errors name no file): from each operation of that stage on the disk is full, and
    the run stops with one line naming the pool folder it could not write in, exit 1, no
    traceback, its lock released; a rerun with room is byte-identical to an uninterrupted
    build."""
    args = ["--samples", "--vocab", str(SAMPLE_VOCAB), "--progress-every", "60",
            "--tasks", "super_glue_rte_GPT_3_style_1shot", "--rows-per-shard", "8"]
    assert crash_run("crash", tmp_path / "reference", [-1], args) == [0]
    operations = [json.loads(line) for line in
                  (tmp_path / "reference" / "-1.crash.trace").read_text().splitlines()]
    pool_files = [number for number, (operation, path) in enumerate(operations)
                  if operation == "create" and "/.p3data-work/pools/" in str(path)]
    points = list(range(pool_files[0], pool_files[-1] + 1))  # the stage's last file: on
    assert len(points) == 5  # two parts and the pool, each written, then its record
    outputs = tmp_path / "full"
    assert crash_run("full", outputs, points, args) == [1] * len(points)
    for point in points:
        log = (outputs / f"{point}.full.log").read_text()
        last = log.strip().splitlines()[-1]
        assert last.startswith("p3data: error: no space left on the device writing in "
                               f"{outputs / str(point)}/.p3data-work/pools/super_glue/rte/"
                               "train/"), log
        assert "make room and run it again" in last
        assert "Traceback" not in log and "a bug in p3data" not in log, log
        assert not (outputs / str(point) / ".p3data-lock").exists()  # released
    assert crash_run("rerun", outputs, points, args) == [0] * len(points)
    for point in points:
        assert tree(outputs / str(point)) == tree(tmp_path / "reference" / "-1"), point
