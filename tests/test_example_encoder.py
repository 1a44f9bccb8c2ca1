"""The cache's fast Example entries (each built in one join, token ids packed beforehand, as
the tokenizer hands them out) against TensorFlow's serialization, for values whose lengths
take one to three varint bytes; and a batch of id runs packed at once as each is alone."""

from __future__ import annotations

import random

import numpy as np
import pytest
from test_cache_format import _tf_example

from p3data.format.example import encode_example, packed_ids_entry, text_entry, wrap_entries
from p3data.varints import packed, packed_runs


@pytest.mark.parametrize("size", [0, 1, 63, 64, 8_000, 70_000])
def test_fast_entries_serialize_as_tensorflow_does(size):
    text, ids = "é" * size, [size, 3, 127, 128, 16_383, 16_384, 70_000][: 1 + size % 7]
    features = {"inputs": ids, "inputs_pretokenized": text, "targets": [],
                "targets_pretokenized": "x" * size}
    entries = (text_entry("inputs_pretokenized", text), packed_ids_entry("inputs", packed(ids)),
               text_entry("targets_pretokenized", "x" * size), packed_ids_entry("targets", b""))
    record = wrap_entries(*entries)
    assert record == wrap_entries(b"".join(entries)) == encode_example(features)
    assert record == _tf_example(features)


def test_runs_packed_at_once_are_each_packed_alone():
    """Values that take one to five varint bytes, runs empty or not (as `UnigramGuard` packs a
    batch of words' ids); TensorFlow agrees with `packed` above."""
    rng = random.Random(7)
    bounds = [0, 1, 127, 128, 16_383, 16_384, 250_111, 2**21 - 1, 2**21, 2**28, 2**40]
    runs = [[rng.choice(bounds) + rng.randrange(2) for _ in range(rng.randrange(6))]
            for _ in range(300)]
    values = np.array([v for run in runs for v in run], np.int64)
    got = packed_runs(values, np.array(list(map(len, runs)), np.int64))
    assert got == [packed(run) for run in runs]
    assert b"".join(got) == packed(values.tolist())
    assert packed_runs(np.zeros(0, np.int64), np.zeros(2, np.int64)) == [b"", b""]
