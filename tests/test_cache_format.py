"""The cache's building blocks against TensorFlow's and seqio's own: Example bytes, TFRecord
framing, and token ids."""

from __future__ import annotations

import io

import numpy as np
import pytest
import sentencepiece as spm
import seqio
import tensorflow as tf

from p3data.format.example import encode_example
from p3data.format.tfrecord import CorruptRecordError, read_records, write_framed
from p3data.tokenize import Tokenizer
from p3data.tokenize.tokenizer import with_extra_ids
from p3data.vocab import SAMPLE_VOCAB

FEATURES = [
    {"inputs": [5, 6, 70000, 2**40], "inputs_pretokenized": "héllo ||| wörld",
     "targets": [1], "answer_choices": ["yes", "no", ""]},
    {"idx": [3, 0], "is_correct": True, "weight": 1.0, "targets_pretokenized": "",
     "neg": [-1, -300]},
    {"empty_ints": [], "floats": [0.5, -2.25], "flag": False},
]


def _tf_example(features: dict) -> bytes:
    def feature(value):
        values = value if isinstance(value, list) else [value]
        if values and isinstance(values[0], str):
            return tf.train.Feature(bytes_list=tf.train.BytesList(
                value=[v.encode() for v in values]))
        if values and isinstance(values[0], float):
            return tf.train.Feature(float_list=tf.train.FloatList(value=values))
        return tf.train.Feature(int64_list=tf.train.Int64List(value=[int(v) for v in values]))

    example = tf.train.Example(features=tf.train.Features(
        feature={k: feature(v) for k, v in features.items()}))
    return example.SerializeToString(deterministic=True)


@pytest.mark.parametrize("features", FEATURES)
def test_example_bytes_equal_tensorflows_deterministic_serialization(features):
    assert encode_example(features) == _tf_example(features)


def test_example_matches_seqios_dict_to_tfexample():
    features = {"inputs": np.array([5, 6, 7], np.int32), "inputs_pretokenized": b"abc",
                "is_correct": np.bool_(True), "weight": np.float32(1.0)}
    ours = tf.train.Example.FromString(encode_example(
        {"inputs": [5, 6, 7], "inputs_pretokenized": "abc", "is_correct": True,
         "weight": 1.0}))
    assert ours == seqio.dict_to_tfexample(features)


def test_tfrecords_read_by_tensorflow(tmp_path):
    records = [encode_example(f) for f in FEATURES]
    path = tmp_path / "x.tfrecord"
    with path.open("wb") as handle:
        assert write_framed(handle, records) == 3
    assert [r.numpy() for r in tf.data.TFRecordDataset(str(path))] == records
    with path.open("rb") as handle:
        assert list(read_records(handle)) == records
    damaged = path.read_bytes()[:-1]
    with pytest.raises(CorruptRecordError, match="truncated"):
        list(read_records(io.BytesIO(damaged)))


def test_tokenizer_gives_seqios_ids():
    vocab = seqio.SentencePieceVocabulary(str(SAMPLE_VOCAB), extra_ids=100)
    model = SAMPLE_VOCAB.read_bytes()
    assert with_extra_ids(model, 100) == vocab.sp_model
    texts = ["Pick the best answer: <extra_id_0> or not?", "  spaced\n\nout  ", "",
             "ünïcödé text", "yes", "yes"]
    ours = Tokenizer(model, 100).encode(texts)
    assert ours == [vocab.encode(t) for t in texts]
    # "<extra_id_0>" in a text is one token, seqio's highest id (the plain model splits it)
    assert ours[0].count(vocab.vocab_size - 1) == 1
    plain = spm.SentencePieceProcessor(model_proto=model).encode(texts[0])
    assert vocab.vocab_size - 1 not in plain and len(plain) > len(ours[0])


def test_fast_entries_equal_the_general_encoder():
    from p3data.format.example import encode_entries, ids_entry, text_entry

    assert text_entry("inputs_pretokenized", "héllo") + ids_entry("inputs", [3, 70000]) == \
        encode_entries({"inputs": [3, 70000], "inputs_pretokenized": "héllo"})
    assert ids_entry("targets", []) == encode_entries({"targets": []})
