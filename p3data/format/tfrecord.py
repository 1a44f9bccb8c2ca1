"""TFRecord framing, written and read without TensorFlow.

Each record: length (u64 little-endian), masked CRC32C of the length, payload, masked CRC32C
of the payload. TensorFlow checks both CRCs when it reads.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator
from typing import BinaryIO

import google_crc32c

from p3data.errors import P3DataError

_MASK_DELTA = 0xA282EAD8


def masked_crc(data: bytes) -> int:
    crc = google_crc32c.value(data)
    return (((crc >> 15) | (crc << 17)) + _MASK_DELTA) & 0xFFFFFFFF


def frame(record: bytes) -> bytes:
    length = struct.pack("<Q", len(record))
    return (length + struct.pack("<I", masked_crc(length)) + record
            + struct.pack("<I", masked_crc(record)))


def write_records(handle: BinaryIO, records: Iterable[bytes]) -> int:
    """Write framed records; returns how many."""
    count = 0
    for record in records:
        handle.write(frame(record))
        count += 1
    return count


class CorruptRecordError(P3DataError):
    """A TFRecord file is truncated or fails its checksums (the message names file and record)."""


def read_records(handle: BinaryIO, name: str = "<stream>") -> Iterator[bytes]:
    """Yield payloads, checking both CRCs; a truncated or corrupt file raises."""
    for framed in _frames(handle, name, verify=True):
        yield framed[12:-4]


def read_frames(handle: BinaryIO, name: str = "<stream>") -> Iterator[bytes]:
    """Yield whole framed records as they are (lengths checked, CRCs not recomputed): for
    copying records between files that p3data itself wrote a moment ago."""
    return _frames(handle, name, verify=False)


def _frames(handle: BinaryIO, name: str, verify: bool) -> Iterator[bytes]:
    number = 0
    while header := handle.read(12):
        if len(header) < 12:
            raise CorruptRecordError(f"{name}: record {number} header is truncated")
        (length,) = struct.unpack("<Q", header[:8])
        if verify and struct.unpack("<I", header[8:])[0] != masked_crc(header[:8]):
            raise CorruptRecordError(f"{name}: record {number} length fails its CRC")
        body = handle.read(length + 4)
        if len(body) < length + 4:
            raise CorruptRecordError(f"{name}: record {number} is truncated")
        if verify and struct.unpack("<I", body[-4:])[0] != masked_crc(body[:-4]):
            raise CorruptRecordError(f"{name}: record {number} payload fails its CRC")
        number += 1
        yield header + body
