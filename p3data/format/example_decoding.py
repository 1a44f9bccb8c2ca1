"""`tf.train.Example` bytes, decoded directly (no TensorFlow, no protobuf).

The decoders read any valid Example (packed or not), for readers that have no TensorFlow
either: `decode_example` (and the wire walker under it, `fields`, `feature_spans`) gives flat
lists of values; `ExampleDecoder` gives the typed values `info.<split>.json` describes, a batch
of records at a time. What `example` encodes, and what TensorFlow's writers write, decode the
same.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from p3data.errors import P3DataError
from p3data.varints import VarintError, int64, read_varint, unpacked


class ExampleDecodeError(P3DataError):
    """Bytes that are not a serialized `tf.train.Example`."""


Values = list[bytes] | list[float] | list[int]


def fields(data: bytes, start: int, end: int) -> Iterator[tuple[int, int, int, int]]:
    """(field number, wire type, value start, value end) of each field in data[start:end]."""
    pos = start
    while pos < end:
        key, pos = read_varint(data, pos)
        wire = key & 7
        if wire == 0:
            _, after = read_varint(data, pos)
        elif wire == 2:
            size, pos = read_varint(data, pos)
            after = pos + size
        elif wire in (1, 5):
            after = pos + (8 if wire == 1 else 4)
        else:
            raise ExampleDecodeError(f"unsupported protobuf wire type {wire}")
        if after > end:
            raise ExampleDecodeError("a field runs past the end of its message")
        yield key >> 3, wire, pos, after
        pos = after


def feature_spans(record: bytes) -> Iterator[tuple[bytes, int, int]]:
    """(name, start, end) of each feature's `Feature` message in a serialized Example."""
    for _, _, features_start, features_end in fields(record, 0, len(record)):
        for _, _, entry_start, entry_end in fields(record, features_start, features_end):
            name, span = b"", (entry_end, entry_end)
            for number, _, start, end in fields(record, entry_start, entry_end):
                if number == 1:
                    name = record[start:end]
                elif number == 2:
                    span = (start, end)
            yield name, *span


_HIGH_BYTES = bytes(range(0x80, 0x100))  # a varint's every byte but its last


def value_count(record: bytes, start: int, end: int) -> int:
    """How many values one `Feature` message holds, without decoding them: a packed varint
    ends at its one byte below 0x80, so counting those counts token ids in C (a report reads
    the lengths of a 313-task cache in seconds)."""
    count = 0
    for kind, _, list_start, list_end in fields(record, start, end):
        for _, wire, value_start, value_end in fields(record, list_start, list_end):
            if kind == 1 or wire != 2:  # one string, or one number not packed
                count += 1
            elif kind == 2:  # packed 4-byte floats
                count += (value_end - value_start) // 4
            else:  # packed varints
                count += len(record[value_start:value_end].translate(None, _HIGH_BYTES))
    return count


def feature_values(record: bytes, start: int, end: int) -> Values:
    """The values of one `Feature` message: bytes, floats or ints (bools as 0/1)."""
    values: list = []
    for kind, _, list_start, list_end in fields(record, start, end):
        for _, wire, value_start, value_end in fields(record, list_start, list_end):
            if kind == 1:
                values.append(record[value_start:value_end])
            elif kind == 2:
                chunk = record[value_start:value_end]
                values.extend(struct.unpack(f"<{len(chunk) // 4}f", chunk))
            elif wire == 2:  # packed varints
                pos = value_start
                while pos < value_end:
                    value, pos = read_varint(record, pos)
                    values.append(int64(value))
            else:
                values.append(int64(read_varint(record, value_start)[0]))
    return values


def decode_example(record: bytes, names: frozenset[str] | None = None) -> dict[str, Values]:
    """A serialized Example as feature name -> flat list of values (only `names`, if given);
    what the encoder writes, and what TensorFlow's writers write, decode the same."""
    try:
        decoded = {}
        for raw_name, start, end in feature_spans(record):
            name = raw_name.decode()
            if names is None or name in names:
                decoded[name] = feature_values(record, start, end)
        return decoded
    except (IndexError, UnicodeDecodeError, struct.error) as err:
        raise ExampleDecodeError(f"not a serialized tf.train.Example ({err})") from None


# Typed decoding, for readers: values as numpy arrays of the dtypes `info.<split>.json` names,
# token ids decoded for a whole batch of records at once.

Found = list[tuple[str, int, list[bytes]]]  # (feature, list kind, its values' bytes)
_KIND_NAMES = {0: "empty", 1: "bytes", 2: "float", 3: "int64"}  # Feature's oneof field numbers
_UNPACKED = {(2, 5), (3, 0)}  # (list kind, wire type) of one float, one int64 unpacked
_DTYPE_KINDS = {"int32": 3, "int64": 3, "bool": 3, "float32": 2, "string": 1}


def _canonical_features(record: bytes, names: Mapping[bytes, str]) -> Found | None:
    """The features `names` wants (serialized name -> name), from an Example serialized the
    canonical way, as TensorFlow and p3data write one: each message's fields in order, lists
    packed, names shorter than 128 bytes. None when it is serialized otherwise
    (`_any_features` reads that)."""
    size = len(record)
    if not size:
        return []
    length, pos = read_varint(record, 1) if record[0] == 0x0A else (-1, 0)
    if pos + length != size:
        return None
    found: Found = []
    while pos < size:  # map entries: 0A <size> 0A <name size> <name> 12 <size> <Feature>
        if record[pos] != 0x0A:
            return None
        length, pos = read_varint(record, pos + 1)
        entry_end = pos + length
        name_end = pos + 2 + record[pos + 1]
        if record[pos] != 0x0A or record[pos + 1] >= 0x80:
            return None
        name = names.get(record[pos + 2:name_end])
        if name is not None:
            values = _canonical_values(record, name_end, entry_end)
            if values is None:
                return None
            found.append((name, *values))
        pos = entry_end
    return found


def _canonical_values(record: bytes, pos: int, end: int) -> tuple[int, list[bytes]] | None:
    """(list kind, values' bytes) of a canonical `Feature` at record[pos:end]: 12 <size>, then
    <kind tag> <size> and its items, each 0A <size> <bytes> (a string, or packed numbers)."""
    if pos == end:
        return 0, []
    if record[pos] != 0x12:
        return None
    length, pos = read_varint(record, pos + 1)
    if pos + length != end:
        return None
    if pos == end:
        return 0, []
    tag = record[pos]
    length, pos = read_varint(record, pos + 1)
    if tag not in (0x0A, 0x12, 0x1A) or pos + length != end:
        return None
    values = []
    while pos < end:
        if record[pos] != 0x0A:
            return None
        length, pos = read_varint(record, pos + 1)
        values.append(record[pos:pos + length])
        pos += length
    return (tag >> 3, values) if pos == end else None


def _any_features(record: bytes, names: Mapping[bytes, str]) -> Found:
    """`_canonical_features` for an Example serialized any valid way."""
    found: Found = []
    for raw_name, start, end in feature_spans(record):
        if (name := names.get(raw_name)) is None:
            continue
        kind, values = 0, []
        for number, _, list_start, list_end in fields(record, start, end):
            if number not in (1, 2, 3):
                continue  # an unknown field, which protobuf skips
            kind = number
            for _, wire, value_start, value_end in fields(record, list_start, list_end):
                if wire != 2 and (number, wire) not in _UNPACKED:
                    raise ExampleDecodeError(f"wire type {wire} in a {_KIND_NAMES[number]} "
                                             "list")
                values.append(record[value_start:value_end])
        found.append((name, kind, values))
    return found


@dataclass(frozen=True)
class FeatureInfo:
    """A feature as `info.<split>.json` describes it: TensorFlow's dtype name and its shape
    (None: any length)."""

    dtype: str
    shape: tuple[int | None, ...]

    @property
    def kind(self) -> int:
        """The Example list it is stored in: 1 bytes, 2 float, 3 int64."""
        return _DTYPE_KINDS[self.dtype]


class ExampleDecoder:
    """Serialized Examples -> dicts of typed values, as seqio's cached reader parses them:
    numbers as numpy arrays of the info dtype (a shape `[]` feature as a numpy scalar), strings
    as `str` (a list of them for a sequence). A missing sequence is empty; a missing scalar is an
    error, as in TensorFlow. Records are decoded a batch at a time: each number feature's values
    for the whole batch in one numpy pass."""

    def __init__(self, features: Mapping[str, FeatureInfo]):
        for name, info in features.items():
            if info.dtype not in _DTYPE_KINDS:
                raise ExampleDecodeError(f"feature {name!r}: dtype {info.dtype!r} cannot be "
                                         f"stored in an Example (known: {sorted(_DTYPE_KINDS)})")
            if None in info.shape[1:] or (info.dtype == "string" and len(info.shape) > 1):
                raise ExampleDecodeError(f"feature {name!r}: shape {list(info.shape)} of "
                                         f"{info.dtype} is not supported")
        self.features = dict(features)
        self._names = {name.encode(): name for name in features}

    def decode(self, records: Sequence[bytes]) -> list[dict[str, Any]]:
        empty: list[bytes] = []
        found = {name: [empty] * len(records) for name in self.features}
        try:
            for number, record in enumerate(records):
                features = _canonical_features(record, self._names)
                for name, kind, values in (_any_features(record, self._names)
                                           if features is None else features):
                    if kind and kind != self.features[name].kind:
                        raise ExampleDecodeError(
                            f"feature {name!r} holds a {_KIND_NAMES[kind]} list, its info "
                            f"dtype is {self.features[name].dtype}")
                    found[name][number] = values
        except IndexError as err:
            raise ExampleDecodeError(f"not a serialized tf.train.Example ({err})") from None
        examples: list[dict[str, Any]] = [{} for _ in records]
        for name, info in self.features.items():
            for example, value in zip(examples, _column(name, info, found[name]), strict=True):
                example[name] = value
        return examples


def _column(name: str, info: FeatureInfo, values: list[list[bytes]]) -> list[Any]:
    """One feature's values for every record of a batch, typed and shaped."""
    if info.kind == 1:
        try:
            texts = [[value.decode() for value in record] for record in values]
        except UnicodeDecodeError as err:
            raise ExampleDecodeError(f"feature {name!r}: not UTF-8 ({err})") from None
        if not info.shape:
            _check_scalars(name, [len(record) for record in texts])
            return [record[0] for record in texts]
        return texts
    data = [b"".join(record) for record in values]
    joined = b"".join(data)
    bounds = np.cumsum([len(chunk) for chunk in data[:-1]], dtype=np.int64)  # bytes
    if info.kind == 2:
        if len(joined) % 4:
            raise ExampleDecodeError(f"feature {name!r}: packed floats of {len(joined)} bytes")
        flat = np.frombuffer(joined, "<f4").astype(np.float32)
        bounds //= 4
    else:
        try:
            decoded = unpacked(joined)
        except VarintError as err:
            raise ExampleDecodeError(f"feature {name!r}: {err}") from None
        flat = decoded != 0 if info.dtype == "bool" else decoded.astype(info.dtype)
        if len(data) > 1:  # values that end before each record's first byte
            bounds = np.searchsorted(np.flatnonzero(np.frombuffer(joined, np.uint8) < 0x80),
                                     bounds)
    if not info.shape:
        _check_scalars(name, np.diff(bounds, prepend=0, append=len(flat)))
        return list(flat)
    arrays = np.split(flat, bounds) if len(data) > 1 else [flat]
    if info.shape == (None,):
        return arrays
    inner = info.shape[1:]
    size = math.prod(inner) if info.shape[0] is None else math.prod(info.shape)
    shaped = []
    for array in arrays:
        if len(array) % size if info.shape[0] is None else len(array) != size:
            raise ExampleDecodeError(f"feature {name!r} holds {len(array)} values, which do "
                                     f"not fit its info shape {list(info.shape)}")
        shaped.append(array.reshape(-1, *inner))
    return shaped


def _check_scalars(name: str, counts: Sequence[int]) -> None:
    """A shape `[]` feature holds one value in every record (TensorFlow's FixedLenFeature)."""
    if wrong := next((count for count in counts if count != 1), None):
        raise ExampleDecodeError(f"feature {name!r} holds {wrong} values, its info shape [] "
                                 "wants one")
