"""`p3data.read.pack` against seqio's own `EncDecFeatureConverter` on the same streams."""

from __future__ import annotations

import json

import numpy as np
import pytest

from p3data.errors import P3DataError
from p3data.read.packing import PackedStream, pack


def random_stream(count: int, *, inputs: int, targets: int, seed: int) -> list[dict]:
    """Examples as a cache holds them: token ids >= 2 ending in EOS (1), mostly short, one in
    eight up to twice the given lengths (so it is cut), with a string feature packing drops."""
    rng = np.random.default_rng(seed)

    def ids(limit: int) -> np.ndarray:
        size = rng.integers(limit, 2 * limit) if rng.random() < 1 / 8 else rng.integers(limit // 3)
        return np.append(rng.integers(2, 500, size), 1).astype(np.int32)

    return [{"inputs": ids(inputs), "targets": ids(targets), "inputs_pretokenized": f"ex {n}"}
            for n in range(count)]


def seqio_features(stream: list[dict], lengths: dict[str, int], *, packed: bool) -> list[dict]:
    """seqio's converter on `stream`. Its length check is off: it only asserts what seqio's
    Task has already trimmed; the converter trims over-long examples again itself."""
    import seqio
    import tensorflow as tf

    spec = {"inputs": tf.TensorSpec([None], tf.int32), "targets": tf.TensorSpec([None], tf.int32),
            "inputs_pretokenized": tf.TensorSpec([], tf.string)}
    dataset = tf.data.Dataset.from_generator(lambda: iter(stream), output_signature=spec)
    converter = seqio.EncDecFeatureConverter(pack=packed, apply_length_check=False)
    return list(converter(dataset, lengths).as_numpy_iterator())


def assert_same_rows(ours: list[dict], theirs: list[dict]) -> None:
    assert len(ours) == len(theirs) > 0
    for number, (mine, reference) in enumerate(zip(ours, theirs, strict=True)):
        assert mine.keys() == reference.keys()
        for feature, value in reference.items():
            assert mine[feature].dtype == np.int32
            np.testing.assert_array_equal(mine[feature], value, err_msg=f"row {number} {feature}")


STREAMS = [  # (lengths, examples, seed): rows closed by inputs, by targets, by the group's end
    ({"inputs": 32, "targets": 8}, 150, 0),
    ({"inputs": 12, "targets": 40}, 130, 1),
    ({"inputs": 64, "targets": 64}, 70, 2),
]


@pytest.mark.parametrize(("lengths", "count", "seed"), STREAMS)
def test_packing_equals_seqio(lengths, count, seed):
    stream = random_stream(count, inputs=lengths["inputs"], targets=lengths["targets"],
                           seed=seed)
    ours = list(pack(stream, lengths))
    assert_same_rows(ours, seqio_features(stream, lengths, packed=True))
    assert len(ours) < count  # several examples share rows
    assert max(row["encoder_segment_ids"].max() for row in ours) >= 3
    assert any(len(e["inputs"]) > lengths["inputs"] for e in stream)  # some were cut


@pytest.mark.parametrize(("lengths", "count", "seed"), STREAMS[:2])
def test_padding_equals_seqio(lengths, count, seed):
    stream = random_stream(count, inputs=lengths["inputs"], targets=lengths["targets"],
                           seed=seed)
    ours = list(pack(stream, lengths, pack=False))
    assert len(ours) == count
    assert_same_rows(ours, seqio_features(stream, lengths, packed=False))


def test_packing_quirks_equal_seqio():
    """Empty features (no decoder segment of their own), a zero inside the ids (the example
    counts only its nonzero tokens) and a group of max(lengths) examples ending a row early."""
    lengths = {"inputs": 6, "targets": 4}
    ids = lambda *values: np.array(values, np.int32)  # noqa: E731
    stream = [{"inputs": ids(5, 1), "targets": ids(1)}, {"inputs": ids(7, 1), "targets": ids()},
              {"inputs": ids(), "targets": ids(8, 1)}, {"inputs": ids(9, 0, 4, 1),
                                                        "targets": ids(3, 0, 1)},
              *({"inputs": ids(2), "targets": ids(3)} for _ in range(10))]
    for packed in (True, False):
        ours = list(pack([{**e, "inputs_pretokenized": ""} for e in stream], lengths,
                         pack=packed))
        theirs = seqio_features([{**e, "inputs_pretokenized": ""} for e in stream], lengths,
                                packed=packed)
        assert_same_rows(ours, theirs)


def test_pack_is_lazy_and_checks_its_input():
    def endless():
        while True:
            yield {"inputs": [4, 1], "targets": [5, 1]}

    row = next(pack(endless(), {"inputs": 8, "targets": 4}))
    np.testing.assert_array_equal(row["decoder_input_tokens"], [0, 5, 0, 5])
    with pytest.raises(P3DataError, match="exactly inputs and targets"):
        next(pack(endless(), {"inputs": 8}))
    with pytest.raises(P3DataError, match="positive integers: targets=0"):
        next(pack(endless(), {"inputs": 8, "targets": 0}))
    with pytest.raises(P3DataError, match="example 1 of the stream has no 'targets' feature"):
        list(pack([{"inputs": [1], "targets": [1]}, {"inputs": [1]}], {"inputs": 4, "targets": 4}))
    with pytest.raises(P3DataError, match="example 0 of the stream: 'inputs' must be a 1-D"):
        list(pack([{"inputs": "text", "targets": [1]}], {"inputs": 4, "targets": 4}))


@pytest.mark.parametrize("packed", [True, False])
def test_a_packed_stream_resumes_mid_group_with_the_same_rows(packed):
    """`PackedStream` yields `pack`'s rows over the endless stream; a state saved in the middle
    of a group (its rows already packed, its examples already drawn) restores the same rows."""
    from p3data.read.mixture import MixtureSampler

    examples = random_stream(300, inputs=16, targets=8, seed=3)
    sources = {"a": examples[:200], "b": examples[200:]}

    def sampler() -> MixtureSampler:
        return MixtureSampler(sources, {"a": 2, "b": 1}, seed=7)

    lengths = {"inputs": 16, "targets": 8}
    expected = [row for row, _ in zip(pack(sampler(), lengths, pack=packed), range(60),
                                      strict=False)]
    stream = PackedStream(sampler(), lengths, pack=packed)
    head = [next(stream) for _ in range(23)]
    state = json.loads(json.dumps(stream.state()))
    assert state["rows"] > 0  # mid-group: the sampler has drawn past the rows yielded
    restored = PackedStream(sampler(), lengths, pack=packed).load_state(state)
    assert_same_rows(head + [next(restored) for _ in range(37)], expected)
    assert_same_rows([next(stream) for _ in range(37)], expected[23:])
    with pytest.raises(P3DataError, match="rows of its group"):
        PackedStream(sampler(), lengths, pack=packed).load_state({**state, "rows": 999})
