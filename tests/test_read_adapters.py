"""The framework bridges give what the reader gives: tf.data (as seqio parses a cache), PyTorch
(map-style and a stream) and grain (a `TaskSplit` as its random-access source)."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest
from helpers.cache import run_cache

from p3data.errors import P3DataError
from p3data.read import open_cache, pack
from p3data.read.adapters import tf_dataset, torch_dataset, torch_stream

TWIN, CHOICES = "super_glue_copa_exercise_score_eval", "super_glue_copa_exercise"


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    """A task with answer choices and its `_score_eval` twin, two output shards per split."""
    out = tmp_path_factory.mktemp("cache")
    run_cache(out, "--tasks", f"{CHOICES}|{TWIN}", "--shards", "2")
    return out


def assert_equal_examples(ours: dict, theirs: dict) -> None:
    assert ours.keys() == theirs.keys()
    for name, value in ours.items():
        other = theirs[name]
        if isinstance(value, str):
            assert (other.decode() if isinstance(other, bytes) else other) == value, name
        elif isinstance(value, list):  # answer choices
            assert [v.decode() if isinstance(v, bytes) else v for v in other] == value, name
        else:
            assert np.asarray(other).dtype == np.asarray(value).dtype, name
            np.testing.assert_array_equal(np.asarray(other), value, err_msg=name)


@pytest.mark.parametrize("task", [CHOICES, TWIN])
def test_tf_dataset_reads_what_the_reader_reads(cache, task):
    split = open_cache(str(cache)).split(task, "validation")
    expected = list(split)
    got = [{name: value.numpy() for name, value in example.items()}
           for example in tf_dataset(split)]
    assert len(got) == len(expected) == len(split) > 0
    for ours, theirs in zip(expected, got, strict=True):
        assert_equal_examples(ours, theirs)
    hosts = [list(tf_dataset(split, shard=(k, 2), features=["targets"])) for k in range(2)]
    assert sum(map(len, hosts)) == len(split)
    assert set(hosts[0][0]) == {"targets"}


def test_a_task_split_is_a_grain_source(cache):
    grain = pytest.importorskip("grain")
    split = open_cache(str(cache)).split(TWIN, "validation")
    source = grain.MapDataset.source(pickle.loads(pickle.dumps(split)))  # grain's workers pickle
    assert len(source) == len(split)
    for number in (0, len(split) - 1, 5):
        assert_equal_examples(split[number], source[number])


def test_torch_map_dataset_in_worker_processes(cache):
    torch = pytest.importorskip("torch")
    split = open_cache(str(cache)).split(CHOICES, "validation")
    loader = torch.utils.data.DataLoader(torch_dataset(split), batch_size=None, num_workers=2)
    got = list(loader)
    assert len(got) == len(split)
    for ours, theirs in zip(split, got, strict=True):
        assert_equal_examples(ours, {name: value.numpy() if hasattr(value, "numpy") else value
                                     for name, value in theirs.items()})


def test_torch_stream_of_packed_examples(cache):
    torch = pytest.importorskip("torch")
    split = open_cache(str(cache)).split(CHOICES, "validation")
    lengths = {"inputs": 64, "targets": 16}
    rows = list(pack(iter(split), lengths))
    loader = torch.utils.data.DataLoader(torch_stream(pack(iter(split), lengths)), batch_size=2)
    batches = list(loader)
    assert sum(len(b["encoder_input_tokens"]) for b in batches) == len(rows) > 0
    assert batches[0]["encoder_input_tokens"].shape == (2, 64)
    np.testing.assert_array_equal(batches[0]["decoder_target_tokens"][1].numpy(),
                                  rows[1]["decoder_target_tokens"])
    workers = torch.utils.data.DataLoader(torch_stream(iter(split)), num_workers=1)
    with pytest.raises(P3DataError, match="num_workers=0"):
        list(workers)
