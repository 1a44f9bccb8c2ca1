"""The cache's fast Example entries (each built in one join, token ids packed beforehand, as
the tokenizer hands them out) against TensorFlow's serialization, for values whose lengths
take one to three varint bytes."""

from __future__ import annotations

import pytest
from test_cache_format import _tf_example

from p3data.format.example import encode_example, packed_ids_entry, text_entry, wrap_entries
from p3data.varints import packed


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
