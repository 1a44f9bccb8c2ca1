"""`tf.train.Example` bytes, encoded and decoded directly (no TensorFlow, no protobuf).

The encoding is what `seqio.dict_to_tfexample` builds, serialized as protobuf's deterministic
serialization does: int and bool values as `int64_list`, floats as `float_list`, strings as
`bytes_list`, all values flattened. Hand-encoding keeps workers free of the TensorFlow import
and makes serialization cheap; the decoder reads any valid Example (packed or not), for
readers that have no TensorFlow either.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Mapping, Sequence

from p3data.errors import P3DataError
from p3data.varints import TABLE, TABLE_SIZE, packed, varint

Value = str | bytes | int | float | bool | Sequence[int] | Sequence[str] | Sequence[float]


def _sized(tag: bytes, payload: bytes) -> bytes:
    """A length-delimited field: its tag byte, the payload's length, the payload."""
    size = len(payload)
    return tag + (TABLE[size] if size < TABLE_SIZE else varint(size)) + payload


# Tag bytes of length-delimited fields 1, 2 and 3 (field number << 3 | wire type 2).
_F1, _F2, _F3 = b"\x0a", b"\x12", b"\x1a"


def _feature(value: Value) -> bytes:
    """A `Feature`: bytes_list (1), float_list (2) or int64_list (3), values packed."""
    values = value if isinstance(value, list | tuple) else [value]
    first = values[0] if values else None
    if isinstance(first, str | bytes):
        items = b"".join([_sized(_F1, v.encode() if isinstance(v, str) else v) for v in values])
        return _sized(_F1, items)
    if isinstance(first, float):
        return _sized(_F2, _sized(_F1, struct.pack(f"<{len(values)}f", *values)))
    ints = [int(v) for v in values] if isinstance(first, bool) else values
    return _sized(_F3, _sized(_F1, packed(ints)) if values else b"")


_KEYS: dict[str, bytes] = {}


def _map_order(key: str) -> bytes:
    """The order protobuf's deterministic serialization gives string map keys: bytewise, but a
    key comes before the keys it starts with ("inputs_pretokenized" before "inputs")."""
    return key.encode() + b"\xff"


def encode_entries(features: Mapping[str, Value]) -> bytes:
    """The `Features` map entries (key: field 1, value: field 2), in deterministic order."""
    return b"".join(_entry(key, _feature(features[key]))
                    for key in sorted(features, key=_map_order))


def _entry(key: str, feature: bytes) -> bytes:
    name = _KEYS.get(key) or _KEYS.setdefault(key, _sized(_F1, key.encode()))
    return _sized(_F1, name + _sized(_F2, feature))


def _one_value_entry(key: str, kind: bytes, value: bytes) -> bytes:
    """The map entry of a feature whose `kind` list holds one length-delimited value (a
    string, or packed varints): the heads of its levels, then the value, in one join (nesting
    `_sized` would copy a long text once per level)."""
    value_head = _F1 + varint(len(value))
    in_list = len(value_head) + len(value)
    list_head = kind + varint(in_list)
    in_feature = len(list_head) + in_list
    feature_head = _F2 + varint(in_feature)
    name = _KEYS.get(key) or _KEYS.setdefault(key, _sized(_F1, key.encode()))
    in_entry = len(name) + len(feature_head) + in_feature
    return b"".join((_F1, varint(in_entry), name, feature_head, list_head, value_head, value))


def text_entry(key: str, text: str) -> bytes:
    """One string feature's map entry (the fast path of `encode_entries`)."""
    return _one_value_entry(key, _F1, text.encode())


def ids_entry(key: str, ids: Sequence[int]) -> bytes:
    """One token-id feature's map entry (the fast path of `encode_entries`)."""
    return packed_ids_entry(key, packed(ids))


def packed_ids_entry(key: str, varints: bytes) -> bytes:
    """`ids_entry` of ids already packed as varints (see `Tokenizer.encode_packed`)."""
    return _one_value_entry(key, _F3, varints) if varints else _entry(key, _sized(_F3, b""))


def wrap_entries(*entries: bytes) -> bytes:
    """A serialized `tf.train.Example` from already encoded map entries, in sorted order."""
    return b"".join((_F1, varint(sum(map(len, entries))), *entries))


def encode_example(features: Mapping[str, Value]) -> bytes:
    """Serialized `tf.train.Example`, byte for byte what `SerializeToString(deterministic=True)`
    gives for the same features."""
    return wrap_entries(encode_entries(features))


class ExampleDecodeError(P3DataError):
    """Bytes that are not a serialized `tf.train.Example`."""


Values = list[bytes] | list[float] | list[int]


def read_varint(data: bytes, pos: int) -> tuple[int, int]:
    """(value, position after it) of the varint at `pos`."""
    value = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7


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


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


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
                    values.append(_signed(value))
            else:
                values.append(_signed(read_varint(record, value_start)[0]))
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
