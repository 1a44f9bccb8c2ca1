"""Varints, protobuf's integers (seven bits a byte, low bits first), as `tf.train.Example`
stores lengths and token ids: the tokenizer hands out ids already packed this way, and the
Example encoder frames them, so both build on this module.
"""

from __future__ import annotations

from collections.abc import Sequence


def _encode(value: int) -> bytes:
    if value < 0:
        value += 1 << 64  # two's complement, as protobuf writes negative int64s
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
TABLE_SIZE = 1 << 16
TABLE = [_encode(i) for i in range(TABLE_SIZE)]


def varint(value: int) -> bytes:
    return TABLE[value] if 0 <= value < TABLE_SIZE else _encode(value)


def packed(values: Sequence[int]) -> bytes:
    """`values` as one packed run of varints."""
    if values and min(values) >= 0 and max(values) < TABLE_SIZE:
        return b"".join(map(TABLE.__getitem__, values))
    return b"".join(varint(int(v)) for v in values)
