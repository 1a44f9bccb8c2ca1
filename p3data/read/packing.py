"""seqio's `EncDecFeatureConverter` without TensorFlow: examples in, the features an
encoder-decoder (T5X, Mesh TF, HF T5) is fed out, trimmed, padded and optionally packed.

The output equals seqio's for the same stream, quirks included (seqio 0.0.20's
`trim_and_pack_dataset` with its TF-ops packer, and `make_autoregressive_inputs`):
- each feature is first cut to its length: an over-long example loses its tail, EOS included;
- packing takes the stream in groups of max(lengths) examples, as seqio packs each batch of
  that size: a packed row never holds examples of two groups, and each group closes its last
  row, full or not;
- in stream order, an example joins the open row if all its features still fit, else it
  starts a new row; its length is its count of nonzero tokens (how seqio strips the padding);
- segment ids count the examples of a row from 1 per feature, at positions 0 (so an example
  with no targets takes no decoder segment), and are 0 on padding; decoder inputs are the
  targets shifted right, with 0 (BOS) at each segment's start; loss weights are 1 on nonzero
  targets.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from types import MappingProxyType
from typing import Any, Protocol, Self

import numpy as np

from p3data.errors import P3DataError

FEATURES = ("inputs", "targets")
T0_LENGTHS = MappingProxyType({"inputs": 1024, "targets": 256})  # T0's training lengths


def pack(examples: Iterable[Mapping[str, Any]], lengths: Mapping[str, int] = T0_LENGTHS, *,
         pack: bool = True) -> Iterator[dict[str, np.ndarray]]:
    """What `seqio.EncDecFeatureConverter(pack=pack)` makes of `examples` (their `inputs` and
    `targets` token ids; other features are dropped), as int32 numpy arrays; lazily, so an
    endless stream (a `MixtureSampler`) is packed as it goes.

    `lengths` are the feature lengths (T0's: inputs 1,024, targets 256). Yields the model's
    rows: `encoder_input_tokens`, `decoder_target_tokens`, `decoder_input_tokens`,
    `decoder_loss_weights`, and with `pack` the segment ids and positions of both sides."""
    _check_lengths(lengths)
    rows = _packed_rows(examples, lengths) if pack else _padded_rows(examples, lengths)
    for row in rows:
        yield _model_features(row, packed=pack)


class ResumableStream(Protocol):
    """An endless stream with a position to save and load (a `MixtureSampler`)."""

    def __next__(self) -> Mapping[str, Any]: ...

    def state(self) -> dict[str, Any]: ...

    def load_state(self, state: Mapping[str, Any]) -> Any: ...


class PackedStream:
    """`pack` over a resumable stream, resumable itself: its state is the stream's state where
    the current group of examples began and how many of the group's rows were yielded. A
    group is packed again on load, so a restored run continues with the identical rows."""

    def __init__(self, stream: ResumableStream, lengths: Mapping[str, int] = T0_LENGTHS, *,
                 pack: bool = True):
        _check_lengths(lengths)
        self.stream, self.lengths, self.packed = stream, dict(lengths), pack
        self._start = stream.state()
        self._rows: list[dict[str, np.ndarray]] = []
        self._yielded = 0

    def __iter__(self) -> Iterator[dict[str, np.ndarray]]:
        return self

    def __next__(self) -> dict[str, np.ndarray]:
        if self._yielded == len(self._rows):
            self._start = self.stream.state()
            self._rows, self._yielded = self._group(), 0
        self._yielded += 1
        return self._rows[self._yielded - 1]

    def _group(self) -> list[dict[str, np.ndarray]]:
        """The rows of the next group: seqio packs max(lengths) examples at a time."""
        examples = [next(self.stream) for _ in range(max(self.lengths.values()))]
        return list(pack(examples, self.lengths, pack=self.packed))

    def state(self) -> dict[str, Any]:
        return {"stream": self._start, "rows": self._yielded}

    def load_state(self, state: Mapping[str, Any]) -> Self:
        """Continue from `state()` of a packed stream over the same stream and lengths."""
        self.stream.load_state(state["stream"])
        self._start, self._rows = state["stream"], self._group()
        if not 0 <= state["rows"] <= len(self._rows):
            raise P3DataError(f"a packed stream's state says {state['rows']} rows of its group "
                              f"were yielded; the group packs into {len(self._rows)} (other "
                              "lengths?)", setting="state")
        self._yielded = state["rows"]
        return self


def _check_lengths(lengths: Mapping[str, int]) -> None:
    if set(lengths) != set(FEATURES):
        raise P3DataError(f"packing lengths must name exactly {' and '.join(FEATURES)}, not "
                          f"{', '.join(map(repr, lengths)) or 'nothing'}", setting="lengths")
    bad = [f"{name}={value!r}" for name, value in lengths.items()
           if not isinstance(value, int) or isinstance(value, bool) or value < 1]
    if bad:
        raise P3DataError(f"packing lengths must be positive integers: {', '.join(bad)}",
                          setting="lengths")


def _trimmed(example: Mapping[str, Any], number: int,
             lengths: Mapping[str, int]) -> dict[str, np.ndarray]:
    """The example's token features as int32 arrays, each cut to its length."""
    trimmed = {}
    for name, length in lengths.items():
        if name not in example:
            raise P3DataError(f"example {number} of the stream has no {name!r} feature (it has "
                              f"{', '.join(map(repr, example)) or 'none'})")
        tokens = np.asarray(example[name])
        if tokens.ndim != 1 or (tokens.size and tokens.dtype.kind not in "iu"):
            raise P3DataError(f"example {number} of the stream: {name!r} must be a 1-D sequence "
                              f"of token ids, not {tokens.dtype} of shape {tokens.shape}")
        trimmed[name] = tokens[:length].astype(np.int32)
    return trimmed


def _padded_rows(examples: Iterable[Mapping[str, Any]],
                 lengths: Mapping[str, int]) -> Iterator[dict[str, np.ndarray]]:
    for number, example in enumerate(examples):
        yield {name: _pad(tokens, lengths[name])
               for name, tokens in _trimmed(example, number, lengths).items()}


def _packed_rows(examples: Iterable[Mapping[str, Any]],
                 lengths: Mapping[str, int]) -> Iterator[dict[str, np.ndarray]]:
    group = max(lengths.values())
    row: dict[str, list[np.ndarray]] = {name: [] for name in lengths}
    used = dict.fromkeys(lengths, 0)
    number = -1
    for number, example in enumerate(examples):
        tokens = {name: ids[:np.count_nonzero(ids)]
                  for name, ids in _trimmed(example, number, lengths).items()}
        if any(used[name] + len(ids) > lengths[name] for name, ids in tokens.items()):
            yield _close(row, lengths)
            row, used = {name: [] for name in lengths}, dict.fromkeys(lengths, 0)
        for name, ids in tokens.items():
            row[name].append(ids)
            used[name] += len(ids)
        if (number + 1) % group == 0:
            yield _close(row, lengths)
            row, used = {name: [] for name in lengths}, dict.fromkeys(lengths, 0)
    if (number + 1) % group:
        yield _close(row, lengths)


def _close(row: Mapping[str, list[np.ndarray]],
           lengths: Mapping[str, int]) -> dict[str, np.ndarray]:
    """A packed row: each feature's examples end to end, with their segment ids and positions."""
    closed = {}
    for name, pieces in row.items():
        tokens, positions = np.zeros(lengths[name], np.int32), np.zeros(lengths[name], np.int32)
        start = 0
        for ids in pieces:
            tokens[start:start + len(ids)] = ids
            positions[start:start + len(ids)] = np.arange(len(ids))
            start += len(ids)
        segment_ids = np.cumsum(positions == 0, dtype=np.int32) * (tokens != 0)
        closed |= {name: tokens, f"{name}_segment_ids": segment_ids,
                   f"{name}_positions": positions}
    return closed


def _pad(tokens: np.ndarray, length: int) -> np.ndarray:
    padded = np.zeros(length, np.int32)
    padded[:len(tokens)] = tokens
    return padded


def _model_features(row: Mapping[str, np.ndarray], *, packed: bool) -> dict[str, np.ndarray]:
    targets = row["targets"]
    decoder_inputs = np.zeros_like(targets)
    decoder_inputs[1:] = targets[:-1]
    features = {
        "encoder_input_tokens": row["inputs"],
        "decoder_target_tokens": targets,
        "decoder_input_tokens": decoder_inputs,
        "decoder_loss_weights": (targets != 0).astype(np.int32),
    }
    if packed:
        segments = row["targets_segment_ids"]
        decoder_inputs[1:][segments[1:] != segments[:-1]] = 0  # BOS at each segment's start
        features |= {
            "encoder_segment_ids": row["inputs_segment_ids"],
            "decoder_segment_ids": segments,
            "encoder_positions": row["inputs_positions"],
            "decoder_positions": row["targets_positions"],
        }
    return features
