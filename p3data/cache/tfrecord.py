"""TFRecord framing, written and read without TensorFlow.

Each record: length (u64 little-endian), masked CRC32C of the length, payload, masked CRC32C
of the payload. TensorFlow checks both CRCs when it reads.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator
from typing import BinaryIO

import google_crc32c

_MASK_DELTA = 0xA282EAD8


def _masked_crc(data: bytes) -> int:
    crc = google_crc32c.value(data)
    return (((crc >> 15) | (crc << 17)) + _MASK_DELTA) & 0xFFFFFFFF


def frame(record: bytes) -> bytes:
    length = struct.pack("<Q", len(record))
    return (length + struct.pack("<I", _masked_crc(length)) + record
            + struct.pack("<I", _masked_crc(record)))


def write_records(handle: BinaryIO, records: Iterable[bytes]) -> int:
    """Write framed records; returns how many."""
    count = 0
    for record in records:
        handle.write(frame(record))
        count += 1
    return count


class CorruptRecordError(ValueError):
    """A TFRecord file is truncated or fails its checksums."""


def read_records(handle: BinaryIO, name: str = "<stream>") -> Iterator[bytes]:
    """Yield payloads, checking both CRCs; a truncated or corrupt file raises."""
    number = 0
    while header := handle.read(12):
        if len(header) < 12:
            raise CorruptRecordError(f"{name}: record {number} header is truncated")
        (length,) = struct.unpack("<Q", header[:8])
        if struct.unpack("<I", header[8:])[0] != _masked_crc(header[:8]):
            raise CorruptRecordError(f"{name}: record {number} length fails its CRC")
        payload = handle.read(length)
        footer = handle.read(4)
        if len(payload) < length or len(footer) < 4:
            raise CorruptRecordError(f"{name}: record {number} is truncated")
        if struct.unpack("<I", footer)[0] != _masked_crc(payload):
            raise CorruptRecordError(f"{name}: record {number} payload fails its CRC")
        number += 1
        yield payload
