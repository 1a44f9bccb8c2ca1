"""`p3data verify`: strict about what seqio could read. Files a manifest does not list, task
folders without COMPLETED, a run's leftovers, broken manifests; OK / INCOMPLETE / FAILED and
their exit codes; a missing or empty cache is one error line."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from helpers.cache import run_cache

from p3data.cli import main
from p3data.format.index import scan_offsets
from p3data.lock import output_lock

TASK = "super_glue_rte_GPT_3_style"
SHARD = "validation.tfrecord-00000-of-00001"
RERUN = "a run is writing it, crashed or failed: rerun p3data cache to finish"


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("built") / "cache"
    run_cache(out, "--tasks", TASK, "--splits", "validation")
    return out


@pytest.fixture
def cache(built, tmp_path) -> Path:
    """A copy of the built cache, free to plant things in."""
    return Path(shutil.copytree(built, tmp_path / "cache"))


def verify(capsys, *args: object) -> tuple[int, list[str]]:
    """Exit code and printed lines of `p3data verify`; OK only ever with exit 0."""
    code = main(["verify", *map(str, args)])
    lines = capsys.readouterr().out.splitlines()
    assert lines[-1].startswith("OK: ") == (code == 0)
    return code, lines


def test_a_sound_cache_is_ok(cache, capsys):
    assert verify(capsys, cache) == (0, ["OK: 1 complete tasks checked, 0 unfinished, 0 problems"])


def test_task_folders_are_found_at_any_level_and_in_p3s_layout(cache, tmp_path, capsys):
    (cache / "t0").mkdir()  # a task named `t0:<task>` lives in t0/<task>
    shutil.copytree(cache / TASK, cache / "t0" / TASK)
    p3 = tmp_path / "p3"
    run_cache(p3, "--tasks", TASK, "--splits", "validation", "--p3-layout")
    shutil.copytree(cache / TASK, p3 / "data" / "extra_task")
    assert verify(capsys, cache)[1] == ["OK: 2 complete tasks checked, 0 unfinished, 0 problems"]
    assert verify(capsys, p3)[1] == ["OK: 2 complete tasks checked, 0 unfinished, 0 problems"]
    assert verify(capsys, cache / TASK)[1] == [  # a task folder on its own
        "OK: 1 complete tasks checked, 0 unfinished, 0 problems"]


@pytest.mark.parametrize("name", [
    "validation.tfrecord-00000-of-00002",  # a shard of an earlier build with other --shards
    f"{SHARD}.tmp-5e0c1",  # an old-style temporary: seqio's `*-of-*1` matches it
    f".p3data-tmp-5e0c1-{SHARD}",
])
def test_a_file_the_manifest_does_not_list_fails(cache, capsys, name):
    (cache / TASK / name).write_bytes((cache / TASK / SHARD).read_bytes())
    code, lines = verify(capsys, cache)
    assert (code, lines[-1]) == (1, "FAILED: 1 complete tasks checked, 0 unfinished, 1 problems")
    assert lines[:-1] == [f"{cache / TASK / name}: not listed in manifest.json, so not part of "
                          "this build, and seqio may read it as data: delete it or rebuild the "
                          "task"]


@pytest.mark.parametrize("kept", [
    None,  # everything but COMPLETED
    ["info.validation.json"],
    [f".p3data-tmp-5e0c1-{SHARD}"],  # a crash while writing a new task's first shard
])
def test_a_task_folder_without_completed_is_unfinished(cache, capsys, kept):
    other = cache / "anli_GPT_3_style_r1"
    shutil.copytree(cache / TASK, other)
    (other / "COMPLETED").unlink()
    (other / SHARD).rename(other / f".p3data-tmp-5e0c1-{SHARD}")
    for path in other.iterdir():
        if kept is not None and path.name not in kept:
            path.unlink()
    code, lines = verify(capsys, cache)
    assert (code, lines) == (1, [
        f"{other}: unfinished (no COMPLETED, seqio will not read it): {RERUN}",
        "INCOMPLETE: 1 complete tasks checked, 1 unfinished, 0 problems"])


def test_a_leftover_work_dir_is_incomplete(cache, capsys):
    (cache / ".p3data-work" / "units").mkdir(parents=True)
    (cache / ".p3data-work" / "units" / "rte-validation-0.json").write_text("{}")
    assert verify(capsys, cache) == (1, [
        f"{cache}/.p3data-work: a run's work files: {RERUN}",
        "INCOMPLETE: 1 complete tasks checked, 1 unfinished, 0 problems"])


def test_a_lock_is_incomplete_and_names_its_holder(cache, capsys):
    with output_lock(str(cache), command="p3data cache --tasks rte") as held:
        code, lines = verify(capsys, cache)
    assert (code, lines[-1]) == (1, "INCOMPLETE: 1 complete tasks checked, 1 unfinished, "
                                    "0 problems")
    assert lines[0].startswith(f"{cache}/.p3data-lock: held by {held.owner}@{held.host} "
                               f"(pid {held.pid}, p3data cache --tasks rte) since ")
    assert lines[0].endswith(f": {RERUN}, taking over the lock if that run is dead")
    (cache / ".p3data-lock").write_text("garbled")
    assert verify(capsys, cache)[1][0].startswith(f"{cache}/.p3data-lock: unreadable (")


def test_a_cache_being_started_has_no_task_yet_but_is_incomplete(cache, capsys):
    shutil.rmtree(cache / TASK)
    (cache / ".p3data-lock").write_text("{}")
    code, lines = verify(capsys, cache)
    assert (code, lines[-1]) == (1, "INCOMPLETE: 0 complete tasks checked, 1 unfinished, "
                                    "0 problems")


@pytest.mark.parametrize(("manifest", "first_line"), [
    (None, "not valid JSON ("),  # truncated
    (b"{}", "not a p3data manifest"),
    (b'{"task": "x", "splits": {}}', "format version None (this p3data reads 2); written by an "
                                     "older p3data: rebuild the task"),
    (b'{"format_version": 99, "splits": {}}', "format version 99 (this p3data reads 2); "
                                              "written by a newer p3data: upgrade p3data"),
    (b'{"format_version": 2, "task": "x", "splits": {"validation": []}}',
     "Expected `object`, got `array` - at `$.splits[...]`"),
])
def test_a_broken_manifest_is_a_problem_line(cache, capsys, manifest, first_line):
    path = cache / TASK / "manifest.json"
    path.write_bytes(manifest if manifest is not None else path.read_bytes()[:100])
    code, lines = verify(capsys, cache)
    assert lines[0].startswith(f"{path}: {first_line}"), lines[0]
    assert (code, lines[-1]) == (1, "FAILED: 1 complete tasks checked, 0 unfinished, 1 problems")
    assert len(lines) == 2


def test_shards_that_do_not_match_num_shards_fail(cache, capsys):
    path = cache / TASK / "manifest.json"
    manifest = json.loads(path.read_text())
    manifest["splits"]["validation"]["num_shards"] = 2
    path.write_text(json.dumps(manifest))
    assert verify(capsys, cache) == (1, [
        f"{path}: split validation: the shards listed are not its 2 shards "
        "validation.tfrecord-*-of-00002",
        "FAILED: 1 complete tasks checked, 0 unfinished, 1 problems"])


def test_missing_corrupt_and_miscounted_files_fail(cache, capsys):
    task = cache / TASK
    manifest = json.loads((task / "manifest.json").read_text())
    (task / "info.validation.json").unlink()
    shard = (task / SHARD).read_bytes()
    last = int(scan_offsets(str(task / SHARD), len(shard))[9])  # where the cut record starts
    (task / SHARD).write_bytes(shard[:-3])
    code, lines = verify(capsys, cache)
    assert (code, lines[-1]) == (1, "FAILED: 1 complete tasks checked, 0 unfinished, 4 problems")
    assert lines[:-1] == [
        f"{task}/info.validation.json: missing (listed in manifest.json)",
        f"{task}/{SHARD}: record 9 is truncated (its record starts at byte {last}; "
        f"{len(shard) - 3 - last} bytes are there)",
        f"{task}/{SHARD}: sha256 differs from the manifest",
        f"{task}: split validation has 9 records, stats say "
        f"{manifest['splits']['validation']['stats']['examples']}"]


def test_no_cache_at_all_is_one_error_line(tmp_path, capsys):
    regular = tmp_path / "notes.txt"
    regular.write_text("x")
    (tmp_path / "empty").mkdir()
    (tmp_path / "other" / "logs").mkdir(parents=True)
    (tmp_path / "other" / "logs" / "run.txt").write_text("x")
    for path, reason in [(tmp_path / "missing", "no such cache folder"),
                         (regular, "is a file, not a cache folder"),
                         (tmp_path / "empty", "holds no task folders"),
                         (tmp_path / "other", "holds no task folders")]:
        assert main(["verify", str(path)]) == 2
        out, err = capsys.readouterr()
        assert out == ""
        assert err.startswith(f"p3data: error: {path}: {reason}") and err.count("\n") == 1


def test_against_another_build_is_as_strict_on_both_sides(cache, tmp_path, capsys):
    other = Path(shutil.copytree(cache, tmp_path / "other"))
    assert verify(capsys, cache, "--against", other)[1] == [
        f"OK: 1 complete tasks checked, 0 unfinished, 0 problems, compared with {other}"]

    stale = other / TASK / "validation.tfrecord-00000-of-00002"
    stale.write_bytes(b"")
    code, lines = verify(capsys, cache, "--against", other)
    assert (code, lines[0]) == (1, f"{stale}: not listed in manifest.json, so not part of this "
                                   "build, and seqio may read it as data: delete it or rebuild "
                                   "the task")
    stale.unlink()

    # A different, self-consistent build: its manifest records its own stats file's sha256.
    stats = other / TASK / "stats.validation.json"
    stats.write_text(json.dumps(json.loads(stats.read_text())) + "\n")
    manifest = json.loads((other / TASK / "manifest.json").read_text())
    manifest["splits"]["validation"]["files"][stats.name] = hashlib.sha256(
        stats.read_bytes()).hexdigest()
    (other / TASK / "manifest.json").write_text(json.dumps(manifest))
    assert verify(capsys, other)[0] == 0
    assert verify(capsys, cache, "--against", other) == (1, [
        f"{TASK}/stats.validation.json: differs",
        f"FAILED: 1 complete tasks checked, 0 unfinished, 1 problems, compared with {other}"])


def test_an_unlisted_index_with_wrong_offsets_is_a_problem(cache, capsys):
    from p3data.format.index import index_name, write_index

    index = cache / TASK / index_name("validation", 0, 1)
    offsets = np.load(index)
    (cache / TASK / "index.validation-00000-of-00001.npy").unlink()
    manifest = json.loads((cache / TASK / "manifest.json").read_text())
    del manifest["splits"]["validation"]["files"][index.name]
    (cache / TASK / "manifest.json").write_text(json.dumps(manifest))
    offsets[1] += 1
    write_index(str(index), offsets)
    assert verify(capsys, cache) == (1, [
        f"{index}: a record index not listed in manifest.json whose offsets are not its "
        "shard's: rerun p3data index to write it anew",
        "FAILED: 1 complete tasks checked, 0 unfinished, 1 problems"])
