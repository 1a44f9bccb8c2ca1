"""Varints, protobuf's integers (seven bits a byte, low bits first), as `tf.train.Example`
stores lengths and token ids: the tokenizer keeps and hands out ids packed this way, the
Example encoder frames them and readers unpack them, so all build on this module.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from itertools import pairwise

import numpy as np

from p3data.errors import P3DataError


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
    if not len(values):
        return b""
    low, high = min(values), max(values)
    if low >= 0 and high < TABLE_SIZE:
        return b"".join(map(TABLE.__getitem__, values))
    if low >= 0 and high < WIDE_TABLE_SIZE:
        return b"".join(map(_wide_table().__getitem__, values))
    return b"".join(varint(int(v)) for v in values)


def packed_runs(values: np.ndarray, counts: np.ndarray) -> list[bytes]:
    """Consecutive runs of non-negative `values`, `counts[i]` values in run `i`, each packed as
    `packed` packs it, in numpy: a batch of words' ids costs a slice each, not a join."""
    values = values.astype(np.uint64)
    sizes = np.ones(values.size, np.int64)  # bytes per varint
    for shift in range(7, 64, 7):
        beyond = values >> np.uint64(shift) > 0
        if not beyond.any():
            break
        sizes += beyond
    ends = np.cumsum(sizes)
    out = np.empty(int(ends[-1]) if ends.size else 0, np.uint8)
    starts = ends - sizes
    for k in range(int(sizes.max(initial=0))):
        held = sizes > k
        group = (values[held] >> np.uint64(7 * k)) & np.uint64(0x7F)
        out[starts[held] + k] = group | np.where(sizes[held] > k + 1, 0x80, 0).astype(np.uint64)
    data = out.tobytes()
    bounds = np.concatenate(([0], ends))[np.concatenate(([0], np.cumsum(counts)))].tolist()
    return [data[a:b] for a, b in pairwise(bounds)]


# Ids of a larger vocabulary (mT5's 250,112) by a table too, made the first time one is packed
# (~0.2 s and ~9 MiB per process: T0's vocabulary never needs it): one varint at a time costs
# ten times as much.
WIDE_TABLE_SIZE = 1 << 18


@functools.cache
def _wide_table() -> list[bytes]:
    return TABLE + [bytes((i & 0x7F | 0x80, i >> 7 & 0x7F | 0x80, i >> 14))
                    for i in range(TABLE_SIZE, WIDE_TABLE_SIZE)]


class VarintError(P3DataError):
    """Bytes that are not a run of packed varints."""


def read_varint(data: bytes, pos: int) -> tuple[int, int]:
    """(value, position after it) of the varint at `pos`, unsigned (IndexError if `data` ends
    inside it). Lengths and field keys mostly take one or two bytes: those without a loop."""
    byte = data[pos]
    if byte < 0x80:
        return byte, pos + 1
    if (second := data[pos + 1]) < 0x80:
        return byte & 0x7F | second << 7, pos + 2
    value = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7


def int64(value: int) -> int:
    """A varint's value as protobuf's int64 (two's complement), as `unpacked` gives it."""
    return value - (1 << 64) if value >= 1 << 63 else value


def unpacked(data: bytes) -> np.ndarray:
    """Packed varints as int64 (protobuf's two's complement), decoded in numpy: a varint's
    bytes are its 7-bit groups, low first, and it ends at its one byte below 0x80."""
    raw = np.frombuffer(data, np.uint8)
    if not raw.size:
        return np.zeros(0, np.int64)
    last = raw < 0x80
    if not last[-1]:
        raise VarintError("packed varints end inside a varint")
    if last.all():  # every value below 128
        return raw.astype(np.int64)
    ends = np.flatnonzero(last)
    starts = np.concatenate(([0], ends[:-1] + 1))
    if (ends - starts).max() > 9:
        raise VarintError("a varint is longer than 10 bytes")
    shifts = 7 * (np.arange(raw.size) - np.repeat(starts, ends - starts + 1))
    groups = (raw & 0x7F).astype(np.uint64) << shifts.astype(np.uint64)
    return np.bitwise_or.reduceat(groups, starts).view(np.int64)
