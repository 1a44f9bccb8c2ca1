"""The record index: per output shard, where each of its records starts, so that example `i`
can be read without reading what precedes it.

    <task>/index.<split>-SSSSS-of-NNNNN.npy   beside <split>.tfrecord-SSSSS-of-NNNNN

A `.npy` of little-endian uint64 with n + 1 entries for a shard of n records: each record's
byte offset, then the shard's size. The name does not match seqio's shard pattern
`<split>.tfrecord-*-of-*<N>`, so seqio never reads it as data.
"""

from __future__ import annotations

import io
import struct

import numpy as np

from p3data import fs
from p3data.errors import P3DataError
from p3data.format.tfrecord import FRAMING, HEADER, CorruptRecordError, masked_crc

DTYPE = np.dtype("<u8")
SCAN_BLOCK = 1 << 20  # bytes `scan_offsets` reads at a time


class RecordIndexError(P3DataError):
    """An index file that cannot be read, or that does not describe its shard."""


def index_name(split: str, index: int, count: int) -> str:
    return f"index.{split}-{index:05d}-of-{count:05d}.npy"


def index_for(shard: str) -> str:
    """The index file of a shard, named from the shard's path or name."""
    folder, _, name = shard.rpartition("/")
    split, _, numbers = name.rpartition(".tfrecord-")
    index_file = f"index.{split}-{numbers}.npy"
    return fs.join(folder, index_file) if folder else index_file


def offsets_from_lengths(lengths: np.ndarray, start: int = 0) -> np.ndarray:
    """The offsets of records of these payload lengths written one after another from
    `start`, and the offset after the last."""
    ends = start + np.cumsum(np.asarray(lengths, DTYPE) + FRAMING, dtype=DTYPE)
    return np.concatenate((np.array([start], DTYPE), ends))


def index_bytes(offsets: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, np.asarray(offsets, DTYPE), allow_pickle=False)
    return buffer.getvalue()


def write_index(path: str, offsets: np.ndarray) -> None:
    fs.write_bytes(path, index_bytes(offsets))


def read_index(path: str, shard_size: int) -> np.ndarray:
    """The offsets an index file holds, checked against its shard's size."""
    try:
        offsets = np.load(io.BytesIO(fs.read_bytes(path)), allow_pickle=False)
    except (ValueError, EOFError, OSError) as err:
        raise RecordIndexError(f"{path}: not a record index ({err}); rebuild it with "
                               "p3data index") from None
    if (offsets.dtype != DTYPE or offsets.ndim != 1 or not offsets.size
            or offsets[0] != 0 or int(offsets[-1]) != shard_size
            or (offsets[1:] < offsets[:-1] + FRAMING).any()):
        raise RecordIndexError(f"{path}: does not describe its shard of {shard_size} bytes; "
                               "rebuild it with p3data index")
    return offsets


def scan_offsets(path: str, size: int) -> np.ndarray:
    """The offsets of a shard's records, found by reading each record's header (the length
    and its CRC), from blocks of `SCAN_BLOCK` bytes read at a record's start: small records'
    headers come a block at a time, a large record's payload is sought past."""
    offsets = [0]
    block, block_start = b"", 0
    with fs.open_read(path) as handle:
        while (start := offsets[-1]) < size:
            number = len(offsets) - 1
            if start + HEADER > block_start + len(block):
                handle.seek(start)
                block, block_start = handle.read(SCAN_BLOCK), start
            header = block[start - block_start:start - block_start + HEADER]
            if len(header) < HEADER:
                raise CorruptRecordError(f"{path}: record {number} is truncated (its header "
                                         f"starts at byte {start}; {len(header)} bytes are there)")
            length, crc = struct.unpack("<QI", header)
            if crc != masked_crc(header[:8]):
                raise CorruptRecordError(f"{path}: record {number} length fails its CRC (it "
                                         f"starts at byte {start})")
            end = start + length + FRAMING
            if end > size:
                raise CorruptRecordError(f"{path}: record {number} is truncated (it starts at "
                                         f"byte {start}; {size - start} of its {end - start} "
                                         "bytes are there)")
            offsets.append(end)
    return np.array(offsets, DTYPE)
