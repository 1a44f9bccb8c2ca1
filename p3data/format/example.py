"""`tf.train.Example` bytes, encoded directly (no TensorFlow, no protobuf).

The encoding is what `seqio.dict_to_tfexample` builds, serialized as protobuf's deterministic
serialization does: int and bool values as `int64_list`, floats as `float_list`, strings as
`bytes_list`, all values flattened. Hand-encoding keeps workers free of the TensorFlow import
and makes serialization cheap. `example_decoding` reads them back.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence

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

