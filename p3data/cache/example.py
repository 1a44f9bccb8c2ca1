"""`tf.train.Example` bytes for T0's features, encoded directly (no TensorFlow, no protobuf).

The encoding is what `seqio.dict_to_tfexample` builds, serialized deterministically (feature
keys sorted): int and bool values as `int64_list`, floats as `float_list`, strings as
`bytes_list`, all values flattened. Hand-encoding keeps workers free of the TensorFlow import
and makes serialization cheap.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence

Value = str | bytes | int | float | bool | Sequence[int] | Sequence[str] | Sequence[float]


def varint(value: int) -> bytes:
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


def field(number: int, payload: bytes) -> bytes:
    """A length-delimited field (wire type 2)."""
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def _feature(value: Value) -> bytes:
    values = value if isinstance(value, list | tuple) else [value]
    first = values[0] if values else None
    if isinstance(first, str | bytes):
        items = b"".join(field(1, v.encode() if isinstance(v, str) else v) for v in values)
        return field(1, items)  # bytes_list
    if isinstance(first, float):
        packed = struct.pack(f"<{len(values)}f", *values)
        return field(2, field(1, packed))  # float_list
    packed = b"".join(varint(int(v)) for v in values)
    return field(3, field(1, packed) if values else b"")  # int64_list


def encode_entries(features: Mapping[str, Value]) -> bytes:
    """The `Features` map entries, in sorted key order."""
    return b"".join(
        field(1, field(1, key.encode()) + field(2, _feature(features[key])))
        for key in sorted(features)
    )


def wrap_entries(entries: bytes) -> bytes:
    """A serialized `tf.train.Example` from already encoded, sorted map entries."""
    return field(1, entries)


def encode_example(features: Mapping[str, Value]) -> bytes:
    """Serialized `tf.train.Example` with the features in sorted key order."""
    return wrap_entries(encode_entries(features))
