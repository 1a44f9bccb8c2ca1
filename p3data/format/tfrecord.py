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
HEADER = 12  # a record's length (u64) and its masked CRC (u32)
FRAMING = HEADER + 4  # and its payload's masked CRC (u32) after the payload
_HEADER, _LENGTH, _CRC = struct.Struct("<QI"), struct.Struct("<Q"), struct.Struct("<I")
READ_BLOCK = 1 << 16  # bytes read at a time


def masked_crc(data: bytes) -> int:
    crc = google_crc32c.value(data)
    return (((crc >> 15) | (crc << 17)) + _MASK_DELTA) & 0xFFFFFFFF


def frame_pieces(record: bytes) -> tuple[bytes, bytes, bytes]:
    """The framed record as (head, record, tail): a writer joins many at once, copying each
    record once."""
    length = _LENGTH.pack(len(record))
    return length + _CRC.pack(masked_crc(length)), record, _CRC.pack(masked_crc(record))


def frame(record: bytes) -> bytes:
    return b"".join(frame_pieces(record))


def write_framed(handle: BinaryIO, records: Iterable[bytes]) -> int:
    """Write records, each framed; returns how many."""
    count = 0
    for record in records:
        handle.write(frame(record))
        count += 1
    return count


class CorruptRecordError(P3DataError):
    """A TFRecord file is truncated or fails its checksums (the message names file and record)."""


def whole_frames(data: bytes, *, name: str, base: int = 0, number: int = 0,
                 verify: bool = True) -> tuple[list[tuple[int, int]], int]:
    """The whole records at the start of `data` (byte `base` of file `name`, where its record
    `number` starts) as (start, end) in `data`, framing included, and how many bytes they
    take. `verify` checks the payloads' CRCs too (lengths' CRCs are always checked)."""
    spans: list[tuple[int, int]] = []
    position, size = 0, len(data)
    while position + HEADER <= size:
        length, crc = _HEADER.unpack_from(data, position)
        if crc != masked_crc(data[position:position + 8]):
            raise CorruptRecordError(f"{name}: record {number + len(spans)} length fails its "
                                     f"CRC (it starts at byte {base + position})")
        end = position + length + FRAMING
        if end > size:
            break
        if verify and (_CRC.unpack_from(data, end - 4)[0]
                       != masked_crc(data[position + HEADER:end - 4])):
            raise CorruptRecordError(f"{name}: record {number + len(spans)} payload fails its "
                                     f"CRC (it starts at byte {base + position})")
        spans.append((position, end))
        position = end
    return spans, position


def _truncated(name: str, pending: bytes, base: int, number: int) -> CorruptRecordError:
    """The error for a file's bytes after its last whole record (`pending`, at byte `base`,
    where its record `number` starts)."""
    what = "header" if len(pending) < HEADER else "record"
    return CorruptRecordError(f"{name}: record {number} is truncated (its {what} starts at byte "
                              f"{base}; {len(pending)} bytes are there)")


def records_in_blocks(blocks: Iterable[bytes], *, name: str,
                      verify: bool = True) -> Iterator[tuple[int, bytes, int, int]]:
    """Each record of a file given as consecutive blocks of its bytes: (its byte offset in the
    file, the bytes holding it, its start and end there, framing included). A record split
    across blocks is joined with the rest of it; bytes left after the last whole one raise."""
    pending, base, number = b"", 0, 0
    for block in blocks:
        data = pending + block if pending else block
        spans, used = whole_frames(data, name=name, base=base, number=number, verify=verify)
        for start, end in spans:
            yield base + start, data, start, end
        pending, base, number = data[used:], base + used, number + len(spans)
    if pending:
        raise _truncated(name, pending, base, number)


def read_records(handle: BinaryIO, name: str = "<stream>") -> Iterator[bytes]:
    """Yield payloads, checking both CRCs; a truncated or corrupt file raises."""
    for _, data, start, end in records_in_blocks(_blocks(handle), name=name):
        yield data[start + HEADER:end - 4]


def read_frames(handle: BinaryIO, name: str = "<stream>") -> Iterator[bytes]:
    """Yield whole framed records as they are (payload CRCs not recomputed): for copying
    records between files that p3data itself wrote a moment ago."""
    for _, data, start, end in records_in_blocks(_blocks(handle), name=name, verify=False):
        yield data[start:end]


def _blocks(handle: BinaryIO) -> Iterator[bytes]:
    while block := handle.read(READ_BLOCK):
        yield block
