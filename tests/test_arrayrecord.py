"""ArrayRecord caches (`p3data cache --shard-format arrayrecord`): the same records, in the same
order, as the TFRecord cache of the same build, read by array_record's own reader, grain's
`ArrayRecordDataSource` and `p3data.read`; damage named by file and record."""

from __future__ import annotations

import json
import random
import shutil
import uuid
from pathlib import Path

import grain.python as grain
import pytest
from array_record.python.array_record_module import ArrayRecordReader
from helpers.cache import run_cache, tree
from helpers.command_server import run_p3data

from p3data import fs
from p3data.errors import P3DataError
from p3data.format.arrayrecord_shards import ARRAYRECORD, package
from p3data.format.manifest import read_manifest
from p3data.format.shard_format import read_shard
from p3data.format.tfrecord import CorruptRecordError
from p3data.read import open_cache
from p3data.vocab import SAMPLE_VOCAB

pytestmark = pytest.mark.usefixtures("samples_in_seqio")

TASKS = ["super_glue_copa_exercise", "super_glue_copa_exercise_score_eval",
         "squad_v2_Questions_with_Context"]
PATTERN = "|".join(TASKS)
SHARDS = 3


@pytest.fixture(scope="module")
def builds(tmp_path_factory) -> dict[str, Path]:
    """The same tasks built both ways (several parts per split: dealt, then assembled)."""
    out = {}
    for shard_format in ("tfrecord", "arrayrecord"):
        out[shard_format] = tmp_path_factory.mktemp(shard_format)
        run_cache(out[shard_format], "--tasks", PATTERN, "--shards", str(SHARDS),
                  "--rows-per-shard", "4", "--shard-format", shard_format)
    return out


def shard_pairs(builds: dict[str, Path]) -> list[tuple[Path, Path]]:
    pairs = [(path, builds["arrayrecord"] / path.relative_to(builds["tfrecord"]).parent
              / path.name.replace(".tfrecord-", ".array_record-"))
             for path in sorted(builds["tfrecord"].glob("*/*.tfrecord-*"))]
    assert len(pairs) >= len(TASKS) * SHARDS
    return pairs


def test_shards_hold_the_tfrecord_builds_records(builds):
    for tfrecord, arrayrecord in shard_pairs(builds):
        with tfrecord.open("rb") as handle:
            expected = list(read_shard(handle, str(tfrecord)))
        reader = ArrayRecordReader(str(arrayrecord))
        assert reader.read_all() == expected, arrayrecord
        assert "group_size:1" in reader.writer_options_string()
        source = grain.ArrayRecordDataSource([str(arrayrecord)])
        assert [source[i] for i in range(len(source))] == expected, arrayrecord


def test_manifest_info_and_verify(builds):
    folder = builds["arrayrecord"] / TASKS[0]
    manifest = read_manifest(str(folder))
    assert all(".array_record-" in name for split in manifest.splits.values()
               for name in split.shards)
    assert not list(folder.glob("index.*"))  # ArrayRecord reads records by number itself
    for split in manifest.splits:  # seqio's info has no format field: the same JSON
        assert (json.loads((folder / f"info.{split}.json").read_text()) ==
                json.loads((builds["tfrecord"] / TASKS[0] / f"info.{split}.json").read_text()))
    indexed = run_p3data(["index", str(builds["arrayrecord"])])  # nothing to index
    assert indexed.returncode == 0 and "0 indexes written" in indexed.stdout, indexed.stderr
    assert not list(builds["arrayrecord"].glob("*/index.*"))
    result = run_p3data(["verify", str(builds["arrayrecord"])])
    assert result.returncode == 0 and "0 problems" in result.stdout, result.stdout


def test_read_gives_the_same_examples_in_order_and_by_number(builds):
    tfrecord, arrayrecord = open_cache(str(builds["tfrecord"])), open_cache(
        str(builds["arrayrecord"]))
    for task in TASKS:
        for split in tfrecord.splits(task):
            ours, theirs = arrayrecord.split(task, split), tfrecord.split(task, split)
            assert [repr(e) for e in ours] == [repr(e) for e in theirs]
            numbers = random.Random(0).sample(range(len(theirs)), len(theirs))
            assert [repr(ours[n]) for n in numbers] == [repr(theirs[n]) for n in numbers]


def test_a_rerun_in_the_other_format_rebuilds(builds, tmp_path):
    out = tmp_path / "cache"
    shutil.copytree(builds["tfrecord"], out)
    run_cache(out, "--tasks", PATTERN, "--shards", str(SHARDS), "--rows-per-shard", "4",
              "--shard-format", "arrayrecord")
    names = {path.name for path in out.glob(f"{TASKS[0]}/*")}
    assert not any(".tfrecord-" in name or name.startswith("index.") for name in names)
    assert run_p3data(["verify", str(out)]).returncode == 0


def damaged(builds: dict[str, Path], tmp_path: Path, damage) -> tuple[Path, Path]:
    out = tmp_path / "cache"
    shutil.copytree(builds["arrayrecord"], out)
    shard = next(out.glob(f"{TASKS[2]}/train.array_record-00000-*"))
    data = bytearray(shard.read_bytes())
    shard.write_bytes(damage(data))
    return out, shard


@pytest.mark.parametrize("damage", [
    lambda data: bytes(data[:len(data) // 2]),  # cut short
    lambda data: bytes(data[:100]) + bytes([data[100] ^ 0xFF]) + bytes(data[101:]),  # a flip
], ids=["truncated", "flipped"])
def test_damage_names_the_file_and_record(builds, tmp_path, damage):
    out, shard = damaged(builds, tmp_path, damage)
    with pytest.raises(CorruptRecordError, match=rf"{shard}: .*record \d+"):
        list(ARRAYRECORD.read_records(shard.open("rb"), str(shard)))
    with pytest.raises(CorruptRecordError, match=str(shard)):
        list(open_cache(str(out)).split(TASKS[2], "train"))
    result = run_p3data(["verify", str(out)])
    assert result.returncode != 0 and f"{shard}: " in result.stdout + result.stderr


def test_without_the_package_one_line_names_the_extra(monkeypatch):
    monkeypatch.setitem(__import__("sys").modules, "array_record.python", None)
    with pytest.raises(P3DataError, match=r"p3data\[arrayrecord\]"):
        package()


def test_peek_and_report_read_it_as_the_tfrecord_cache(builds, tmp_path):
    peeks = [run_p3data(["peek", str(builds[f]), TASKS[0], "--vocab", str(SAMPLE_VOCAB),
                         "-n", "2"]) for f in ("tfrecord", "arrayrecord")]
    assert peeks[0].returncode == peeks[1].returncode == 0, peeks[1].stderr[-2000:]
    assert peeks[1].stdout == peeks[0].stdout and "example 1" in peeks[0].stdout
    reports = []
    for shard_format in ("tfrecord", "arrayrecord"):
        out = tmp_path / shard_format
        result = run_p3data(["report", str(builds[shard_format]), "--out", f"{out}.html",
                             "--markdown", f"{out}.md"])
        assert result.returncode == 0, result.stderr[-2000:]
        text = Path(f"{out}.md").read_text().replace(str(builds[shard_format]), "CACHE")
        reports.append(text.replace(shard_format, "F"))
    assert reports[0] == reports[1]



def convert(cache: Path, out: Path, *args: str):
    return run_p3data(["export", str(cache), "--out", str(out), "--format", "arrayrecord",
                       *args])


def test_export_converts_the_tfrecord_cache_into_the_arrayrecord_build(builds, tmp_path):
    """`export --format arrayrecord` writes, without rebuilding, the cache the build in that
    format writes, byte for byte (records, info, stats, the manifest and its fingerprint):
    verify passes, grain reads the TFRecord cache's records, a rerun converts nothing, and a
    build of the same settings over it reuses every task."""
    out = tmp_path / "converted"
    result = convert(builds["tfrecord"], out)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "3 converted, 0 already converted, 0 failed" in result.stdout
    assert tree(out) == tree(builds["arrayrecord"])
    for tfrecord, arrayrecord in shard_pairs({"tfrecord": builds["tfrecord"],
                                              "arrayrecord": out}):
        with tfrecord.open("rb") as handle:
            expected = list(read_shard(handle, str(tfrecord)))
        source = grain.ArrayRecordDataSource([str(arrayrecord)])
        assert [source[i] for i in range(len(source))] == expected, arrayrecord
    assert run_p3data(["verify", str(out)]).returncode == 0
    again = convert(builds["tfrecord"], out)
    assert again.returncode == 0 and "0 converted, 3 already converted" in again.stdout
    rebuilt = run_cache(out, "--tasks", PATTERN, "--shards", str(SHARDS), "--rows-per-shard",
                        "4", "--shard-format", "arrayrecord")
    assert "3 tasks: 0 to build" in rebuilt.stderr, rebuilt.stderr[-2000:]
    assert tree(out) == tree(builds["arrayrecord"])


def test_a_rerun_finishes_an_interrupted_conversion_and_a_failed_task_is_one_line(builds,
                                                                                   tmp_path):
    """A task left unsealed (a run killed while converting it) is converted again; a task
    whose shard is damaged fails in one line naming it, exit 1, and is left unsealed, while
    the others are converted."""
    out = tmp_path / "converted"
    assert convert(builds["tfrecord"], out).returncode == 0
    (out / TASKS[1] / "COMPLETED").unlink()
    shard = next((out / TASKS[1]).glob("train.array_record-*"))
    shard.write_bytes(shard.read_bytes()[:100])
    result = convert(builds["tfrecord"], out)
    assert "1 converted, 2 already converted, 0 failed" in result.stdout, result.stdout
    assert tree(out) == tree(builds["arrayrecord"])
    cache = tmp_path / "damaged"
    shutil.copytree(builds["tfrecord"], cache)
    damaged = next((cache / TASKS[2]).glob("train.tfrecord-00001-*"))
    data = bytearray(damaged.read_bytes())
    data[30] ^= 1
    damaged.write_bytes(bytes(data))
    result = convert(cache, tmp_path / "other")
    assert result.returncode == 1, result.stderr[-2000:]
    failed = [line for line in result.stdout.splitlines() if line.startswith("FAILED")]
    assert len(failed) == 1 and failed[0].startswith(f"FAILED {TASKS[2]}: {damaged}"), failed
    assert "2 converted, 0 already converted, 1 failed" in result.stdout
    assert not (tmp_path / "other" / TASKS[2] / "COMPLETED").exists()


def test_a_download_of_p3_converts_without_a_manifest(builds, tmp_path):
    """P3's layout (`data/<task>/`, seqio's files only: no manifest, no record index):
    converted as it is; grain and `p3data.read` read the same examples."""
    p3 = tmp_path / "p3"
    for task in TASKS:
        shutil.copytree(builds["tfrecord"] / task, p3 / "data" / task,
                        ignore=shutil.ignore_patterns("manifest.json", "index.*"))
    out = tmp_path / "converted"
    result = convert(p3, out)
    assert result.returncode == 0 and "3 converted" in result.stdout, result.stderr[-2000:]
    folder = out / "data" / TASKS[0]
    assert sorted(p.name for p in folder.iterdir() if ".array_record-" not in p.name) == sorted(
        p.name for p in (p3 / "data" / TASKS[0]).iterdir() if ".tfrecord-" not in p.name)
    for name in ("info.train.json", "stats.train.json"):
        assert (folder / name).read_bytes() == (p3 / "data" / TASKS[0] / name).read_bytes()
    source = grain.ArrayRecordDataSource(sorted(map(str, folder.glob("train.array_record-*"))))
    ours, theirs = open_cache(str(out)), open_cache(str(builds["tfrecord"]))
    assert len(source) == len(theirs.split(TASKS[0], "train"))
    for task in TASKS:
        assert [repr(e) for e in ours.split(task, "train")] == [
            repr(e) for e in theirs.split(task, "train")]
    assert convert(p3, out).stdout.count("already converted") == 4  # 3 tasks, and the total


@pytest.mark.parametrize("where", ["foreign", "the cache"])
def test_a_folder_not_a_cache_and_the_cache_itself_are_refused(builds, tmp_path, where):
    out = tmp_path / "out"
    if where == "foreign":
        out.mkdir()
        (out / "notes.txt").write_text("mine")
    else:
        out = builds["tfrecord"] / "inside"
    result = convert(builds["tfrecord"], out)
    assert result.returncode == 2 and result.stderr.strip().count("\n") == 0, result.stderr
    assert ("neither empty nor a p3data cache" if where == "foreign" else
            "is, is inside or holds the cache") in result.stderr
    assert not out.exists() or sorted(p.name for p in out.iterdir()) == ["notes.txt"]


def test_a_cache_off_this_machines_disk_reads_from_local_copies(builds):
    """On memory:// (as on gs://, which array_record cannot open): `p3data.read` reads each
    shard from a local copy, in order (threads reading ahead) and by number, as on disk."""
    root = f"memory://arrayrecord-{uuid.uuid4().hex}"
    fs.write_files({f"{root}/{path.relative_to(builds['arrayrecord'])}": path.read_bytes()
                    for path in builds["arrayrecord"].rglob("*") if path.is_file()})
    try:
        remote, local = open_cache(root), open_cache(str(builds["arrayrecord"]))
        for task in TASKS:
            for split in local.splits(task):
                ours, theirs = remote.split(task, split), local.split(task, split)
                assert ours.shards[0].startswith("memory://")
                assert [repr(e) for e in ours.examples(workers=3)] == [repr(e) for e in theirs]
                numbers = range(len(theirs))[::-1]
                assert [repr(ours[n]) for n in numbers] == [repr(theirs[n]) for n in numbers]
    finally:
        fs.delete_tree(root)
