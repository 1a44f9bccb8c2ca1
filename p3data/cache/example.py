"""`tf.train.Example` bytes for T0's features, encoded directly (no TensorFlow, no protobuf).

The encoding is what `seqio.dict_to_tfexample` builds, serialized as protobuf's deterministic
serialization does: int and bool values as `int64_list`, floats as `float_list`, strings as
`bytes_list`, all values flattened. Hand-encoding keeps workers free of the TensorFlow import
and makes serialization cheap.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence

Value = str | bytes | int | float | bool | Sequence[int] | Sequence[str] | Sequence[float]


def _encode_varint(value: int) -> bytes:
    if value < 0:
        value += 1 << 64
    out = bytearray()
    while True:
        bits = value & 0x7F
        value >>= 7
        if value:
            out.append(bits | 0x80)
        else:
            out.append(bits)
            return bytes(out)


# Token ids and lengths are small: encode them by table lookup, in C, not bit by bit.
_TABLE_SIZE = 1 << 16
_VARINTS = [_encode_varint(i) for i in range(_TABLE_SIZE)]


def varint(value: int) -> bytes:
    return _VARINTS[value] if 0 <= value < _TABLE_SIZE else _encode_varint(value)


def _packed_varints(values: Sequence[int]) -> bytes:
    if values and min(values) >= 0 and max(values) < _TABLE_SIZE:
        return b"".join(map(_VARINTS.__getitem__, values))
    return b"".join(varint(int(v)) for v in values)


def _sized(tag: bytes, payload: bytes) -> bytes:
    """A length-delimited field: its tag byte, the payload's length, the payload."""
    size = len(payload)
    return tag + (_VARINTS[size] if size < _TABLE_SIZE else _encode_varint(size)) + payload


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
    return _sized(_F3, _sized(_F1, _packed_varints(ints)) if values else b"")


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


def text_entry(key: str, text: str) -> bytes:
    """One string feature's map entry (the fast path of `encode_entries`)."""
    return _entry(key, _sized(_F1, _sized(_F1, text.encode())))


def ids_entry(key: str, ids: Sequence[int]) -> bytes:
    """One token-id feature's map entry (the fast path of `encode_entries`)."""
    return _entry(key, _sized(_F3, _sized(_F1, _packed_varints(ids)) if ids else b""))


def wrap_entries(entries: bytes) -> bytes:
    """A serialized `tf.train.Example` from already encoded, sorted map entries."""
    return _sized(_F1, entries)


def encode_example(features: Mapping[str, Value]) -> bytes:
    """Serialized `tf.train.Example`, byte for byte what `SerializeToString(deterministic=True)`
    gives for the same features."""
    return wrap_entries(encode_entries(features))
