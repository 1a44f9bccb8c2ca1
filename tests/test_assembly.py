"""Stage 2 assembles each output shard on its own, from its piece of every part: example `i` of
a split (in source order) goes to shard `i % shards`, exactly as if the parts were streamed one
after another into the shards round-robin."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from helpers.cache import assert_same_examples, read_examples, run_cache

from p3data.format.tfrecord import read_frames
from p3data.format.verify import verify_cache

pytestmark = pytest.mark.usefixtures("samples_in_seqio")

TASKS = ["super_glue_copa_exercise", "super_glue_copa_exercise_score_eval"]
SPLIT = "validation"  # 11 sample rows: 11 examples, 22 for the twin (one per answer choice)
SHARDS = 5
# Parts of 3 source rows: part boundaries fall inside the round-robin cycles of 5 shards.
ARGS = ("--tasks", "|".join(TASKS), "--splits", SPLIT, "--rows-per-shard", "3")


@pytest.fixture(scope="module")
def one_shard(tmp_path_factory) -> Path:
    """The reference: one output shard per split, the split's records in source order."""
    out = tmp_path_factory.mktemp("one")
    run_cache(out, *ARGS, "--shards", "1")
    return out


@pytest.fixture(scope="module")
def five_shards(tmp_path_factory) -> Path:
    """Five output shards, written by two worker processes."""
    out = tmp_path_factory.mktemp("five")
    run_cache(out, *ARGS, "--shards", str(SHARDS), "--direct_num_workers=2",
              "--direct_running_mode=multi_processing")
    return out


@pytest.fixture(scope="module")
def five_shards_one_part(tmp_path_factory) -> Path:
    """Five output shards of splits that are one part each: dealt straight into the shards."""
    out = tmp_path_factory.mktemp("five-one-part")
    run_cache(out, "--tasks", "|".join(TASKS), "--splits", SPLIT, "--shards", str(SHARDS))
    return out


def _frames(path: Path) -> list[bytes]:
    with path.open("rb") as handle:
        return list(read_frames(handle, str(path)))


@pytest.mark.parametrize("task", TASKS)
def test_one_shard_holds_the_examples_in_source_order(one_shard, task):
    cached, fresh = read_examples(task, SPLIT, one_shard), read_examples(task, SPLIT)
    assert len(cached) == len(fresh) > SHARDS
    for number, (ours, stock) in enumerate(zip(cached, fresh, strict=True)):
        assert ours.keys() == stock.keys()
        for feature in ours:
            np.testing.assert_array_equal(ours[feature], stock[feature],
                                          err_msg=f"example {number}, {feature}")


@pytest.mark.parametrize("built", ["five_shards", "five_shards_one_part"])
@pytest.mark.parametrize("task", TASKS)
def test_shard_k_is_every_fifth_record_from_the_kth(one_shard, built, task, request):
    cache = request.getfixturevalue(built)
    records = _frames(one_shard / task / f"{SPLIT}.tfrecord-00000-of-00001")
    for shard in range(SHARDS):
        path = cache / task / f"{SPLIT}.tfrecord-{shard:05d}-of-{SHARDS:05d}"
        assert path.read_bytes() == b"".join(records[shard::SHARDS]), path.name
        offsets = np.load(cache / task / f"index.{SPLIT}-{shard:05d}-of-{SHARDS:05d}.npy")
        lengths = [len(record) for record in records[shard::SHARDS]]
        assert offsets.tolist() == [0, *np.cumsum(lengths).tolist()], path.name


@pytest.mark.parametrize("task", TASKS)
def test_a_split_of_one_part_verifies_and_equals_the_dealt_build(five_shards,
                                                                five_shards_one_part, task):
    dealt, direct = five_shards / task, five_shards_one_part / task
    assert sorted(p.name for p in direct.iterdir()) == sorted(p.name for p in dealt.iterdir())
    for name in (p.name for p in dealt.iterdir() if p.name != "manifest.json"):
        assert (direct / name).read_bytes() == (dealt / name).read_bytes(), name
    assert verify_cache(str(five_shards_one_part)).state == "OK"
    assert not (five_shards_one_part / ".p3data-work").exists()


@pytest.mark.parametrize("task", TASKS)
def test_seqio_reads_the_five_shards_and_their_record(one_shard, five_shards, task):
    folder = five_shards / task
    assert_same_examples(read_examples(task, SPLIT, five_shards), read_examples(task, SPLIT))
    info = json.loads((folder / f"info.{SPLIT}.json").read_text())
    manifest = json.loads((folder / "manifest.json").read_text())["splits"][SPLIT]
    reference = json.loads((one_shard / task / "manifest.json").read_text())["splits"][SPLIT]
    assert info["num_shards"] == manifest["num_shards"] == SHARDS
    assert manifest["stats"] == reference["stats"]
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        [*manifest["files"], "COMPLETED", "manifest.json"])
    assert not (five_shards / ".p3data-work").exists()
