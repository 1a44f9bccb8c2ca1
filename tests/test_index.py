"""The record index: its files, written by `p3data cache` and listed in the manifest, built
afterwards by `p3data index` for older p3data caches and stock seqio caches (resumably), and
never read by seqio as data."""

from __future__ import annotations

import fnmatch
import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers.cache import run_cache, tree

from p3data.cli import main
from p3data.format import index as record_index
from p3data.format.index import (
    RecordIndexError,
    index_for,
    index_name,
    offsets_from_lengths,
    read_index,
    scan_offsets,
    write_index,
)
from p3data.format.tfrecord import frame
from p3data.format.verify import verify_cache
from p3data.read import open_cache
from p3data.read.indexing import index_cache

TASK = "super_glue_copa_exercise_score_eval"
SHARDS = 2


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("cache")
    run_cache(out, "--tasks", TASK, "--shards", str(SHARDS), "--rows-per-shard", "4")
    return out


def test_index_names_match_no_seqio_shard_pattern():
    for split in ("train", "validation", "train_r1"):
        for count in (1, 10, 64):
            names = [index_name(split, index, count) for index in range(count)]
            assert not fnmatch.filter(names, f"{split}.tfrecord-*-of-*{count}")
            assert not fnmatch.filter(names, f"{split}.tfrecord-*")
    assert index_for("/c/t/train_r1.tfrecord-00003-of-00010") == (
        "/c/t/index.train_r1-00003-of-00010.npy")


def test_offsets_from_lengths_scan_and_files_agree(tmp_path, monkeypatch):
    payloads = [b"x" * n for n in (0, 1, 127, 128, 5000, 3, 0, 17, 2)]
    shard = tmp_path / "train.tfrecord-00000-of-00001"
    shard.write_bytes(b"".join(map(frame, payloads)))
    offsets = offsets_from_lengths([len(p) for p in payloads])
    assert offsets.dtype == np.dtype("<u8") and offsets[-1] == shard.stat().st_size
    # scanned a block at a time: blocks ending in every byte of a header, records past them
    for block in [*range(12, 64), 1 << 20]:
        monkeypatch.setattr(record_index, "SCAN_BLOCK", block)
        np.testing.assert_array_equal(scan_offsets(str(shard), shard.stat().st_size), offsets)
    index = tmp_path / "index.train-00000-of-00001.npy"
    write_index(str(index), offsets)
    np.testing.assert_array_equal(np.load(index), offsets)
    np.testing.assert_array_equal(read_index(str(index), int(offsets[-1])), offsets)
    with pytest.raises(RecordIndexError, match="does not describe its shard of 7 bytes"):
        read_index(str(index), 7)
    index.write_bytes(b"not numpy")
    with pytest.raises(RecordIndexError, match="not a record index"):
        read_index(str(index), int(offsets[-1]))
    buffer = io.BytesIO()
    np.save(buffer, offsets[::-1])
    index.write_bytes(buffer.getvalue())
    with pytest.raises(RecordIndexError, match="does not describe its shard"):
        read_index(str(index), int(offsets[0]))


def test_the_builder_writes_an_index_per_shard_listed_in_the_manifest(built):
    folder = built / TASK
    manifest = json.loads((folder / "manifest.json").read_text())
    for split, record in manifest["splits"].items():
        for shard in range(SHARDS):
            name = f"{split}.tfrecord-{shard:05d}-of-{SHARDS:05d}"
            index = index_name(split, shard, SHARDS)
            assert index in record["files"]
            size = (folder / name).stat().st_size
            np.testing.assert_array_equal(read_index(str(folder / index), size),
                                          scan_offsets(str(folder / name), size))
    assert verify_cache(str(built)).state == "OK"


def test_verify_checks_each_index_against_its_shard(built, tmp_path):
    cache = tmp_path / "cache"
    shutil.copytree(built, cache)
    index = cache / TASK / index_name("validation", 1, SHARDS)
    offsets = np.load(index)
    offsets[1] += 1
    write_index(str(index), offsets)
    verdict = verify_cache(str(cache))
    assert verdict.problems == [f"{index}: sha256 differs from the manifest",
                                f"{index}: the record offsets differ from its shard's; rebuild "
                                "it with p3data index"]


def older(built: Path, target: Path) -> Path:
    """The cache as an older p3data wrote it: no index files, none in the manifests."""
    shutil.copytree(built, target)
    for index in target.glob("*/index.*"):
        index.unlink()
    for path in target.glob("*/manifest.json"):
        manifest = json.loads(path.read_text())
        for record in manifest["splits"].values():
            record["files"] = {n: d for n, d in record["files"].items() if "index." not in n}
        path.write_text(json.dumps(manifest, sort_keys=True, indent=2) + "\n")
    return target


def test_p3data_index_on_an_older_cache_gives_what_p3data_cache_writes(built, tmp_path, capsys):
    cache = older(built, tmp_path / "older")
    assert verify_cache(str(cache)).state == "OK"
    records = sum(record["stats"]["examples"] for record in json.loads(
        (built / TASK / "manifest.json").read_text())["splits"].values())
    assert main(["index", str(cache)]) == 0
    assert capsys.readouterr().out == (f"1 tasks, {3 * SHARDS} shards: {3 * SHARDS} indexes "
                                       f"written ({records} records), 0 already there; 1 "
                                       "manifests updated\n")
    assert tree(cache) == tree(built)
    (cache / TASK / index_name("train", 1, SHARDS)).unlink()
    assert main(["index", str(cache)]) == 0  # resumes: writes only what is missing
    assert capsys.readouterr().out.startswith(f"1 tasks, {3 * SHARDS} shards: 1 indexes written")
    assert tree(cache) == tree(built)


def test_progress_lines_go_to_the_stream_given(built, tmp_path):
    stream = io.StringIO()
    result = index_cache(str(older(built, tmp_path / "older")), progress_every=0, out=stream)
    assert result.written == 3 * SHARDS
    lines = stream.getvalue().splitlines()
    assert len(lines) == 3 * SHARDS and lines[-1].startswith(f"[p3data index] {3 * SHARDS} shards")


@pytest.fixture
def stock(stock_seqio_cache, tmp_path) -> Path:
    """`seqio_cache_tasks` output (conftest): no manifest, shards Beam cut; TASK's folder
    copied, to be indexed."""
    shutil.copytree(stock_seqio_cache / TASK, tmp_path / "stock" / TASK)
    return tmp_path / "stock"


def test_a_stock_seqio_cache_is_read_and_indexed(stock, built, samples_in_seqio):
    import seqio

    cache = open_cache(str(stock))
    assert cache.tasks == [TASK] and cache.manifest(TASK) is None
    reference = open_cache(str(built))
    for split in cache.splits(TASK):
        ours = cache.split(TASK, split)
        in_order = list(ours)
        assert len(in_order) == len(ours) == len(reference.split(TASK, split))
        key = lambda e: (e["inputs_pretokenized"], e["targets_pretokenized"])  # noqa: E731
        for a, b in zip(sorted(in_order, key=key),
                        sorted(reference.split(TASK, split), key=key), strict=True):
            for name in b:
                np.testing.assert_array_equal(a[name], b[name])
        assert [ours[i]["targets_pretokenized"] for i in range(len(ours))] == [
            e["targets_pretokenized"] for e in in_order]
    assert main(["index", str(stock)]) == 0
    indexes = sorted(p.name for p in (stock / TASK).glob("index.*"))
    assert indexes == sorted(index_name(s, k, SHARDS) for s in cache.splits(TASK)
                             for k in range(SHARDS))
    provider = seqio.get_mixture_or_task(TASK)
    provider._cache_dir = str(stock / TASK)
    indexed = open_cache(str(stock)).split(TASK, "validation")
    assert provider._get_cached_source("validation").list_shards("validation") == indexed.shards
    assert [indexed[i]["idx"].tolist() for i in range(len(indexed))] == [
        e["idx"].tolist() for e in indexed]


CRASH = str(Path(__file__).parent / "helpers" / "crash_command.py")


def crash_index(outputs: Path, points: list[int], base: Path) -> list[int]:
    """`p3data index` on copies of `base`, each killed before one of its file operations."""
    subprocess.run([sys.executable, CRASH, str(outputs), ",".join(map(str, points)), str(base),
                    "--", "index", "{out}"], check=True, timeout=600)
    return [int((outputs / f"{point}.code").read_text()) for point in points]


@pytest.mark.crash  # kills the command before each of its file operations
def test_a_killed_index_is_named_by_verify_and_finished_by_a_rerun(built, tmp_path):
    """Killed before any of its file operations, `p3data index` leaves the data sound: verify
    says a p3data index was interrupted and to rerun it (not to rebuild the task), and the
    rerun leaves exactly what an uninterrupted run does."""
    base = older(built, tmp_path / "older")
    assert crash_index(tmp_path / "whole", [-1], base) == [0]
    operations = (tmp_path / "whole" / "-1.trace").read_text().splitlines()
    assert len(operations) == 2 * (3 * SHARDS + 1) + 2  # indexes and manifest, the lock
    assert tree(tmp_path / "whole" / "-1") == tree(built)
    points = list(range(len(operations)))
    assert crash_index(tmp_path / "runs", points, base) == [137] * len(points)
    for point in points:
        out = tmp_path / "runs" / str(point)
        verdict = verify_cache(str(out))
        assert verdict.problems == [], (point, verdict.problems)
        assert verdict.state == ("OK" if point == 0 else "INCOMPLETE"), point
        assert all("rerun p3data index" in line for line in verdict.unfinished), (
            point, verdict.unfinished)
        assert main(["index", "--force", str(out)]) == 0
        assert verify_cache(str(out)).state == "OK"
        assert tree(out) == tree(built), point


def test_index_on_a_missing_folder_creates_nothing(tmp_path, capsys):
    assert main(["index", str(tmp_path / "missing")]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and f"{tmp_path / 'missing'}: no such cache folder" in error
    assert not (tmp_path / "missing").exists()


def test_index_mends_an_index_verify_finds_wrong(built, tmp_path):
    """verify's fix for an index whose offsets are wrong is `p3data index`: it must write it
    anew, not keep it because it is there and list it in the manifest."""
    cache = tmp_path / "cache"
    shutil.copytree(built, cache)
    index = cache / TASK / index_name("validation", 1, SHARDS)
    offsets = np.load(index)
    offsets[1] += 1
    write_index(str(index), offsets)
    assert any("rebuild it with p3data index" in line for line in
               verify_cache(str(cache)).problems)
    assert main(["index", str(cache)]) == 0
    assert verify_cache(str(cache)).state == "OK"
    assert tree(cache) == tree(built)
