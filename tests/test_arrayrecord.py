"""ArrayRecord caches (`p3data cache --shard-format arrayrecord`): the same records, in the same
order, as the TFRecord cache of the same build, read by array_record's own reader, grain's
`ArrayRecordDataSource` and `p3data.read`; damage named by file and record."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import grain.python as grain
import pytest
from array_record.python.array_record_module import ArrayRecordReader
from helpers.cache import run_cache
from helpers.command_server import run_p3data

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
        reports.append(Path(f"{out}.md").read_text().replace(shard_format, "F"))
    assert reports[0] == reports[1]

