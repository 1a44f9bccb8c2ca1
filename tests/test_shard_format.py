"""Every registered shard format keeps the contract the builder, verify, peek, the report and
the reader rely on: seqio's names, records written from TFRecord frames in blocks that cut
them, read back in order, by number with or without the side index the builder writes, and
damage named by file and record."""

from __future__ import annotations

import hashlib
import io

import pytest

from p3data.format.shard_format import (
    SHARD_FORMATS,
    format_of,
    is_shard,
    read_shard,
    seqio_shards,
    shard_name,
)
from p3data.format.tfrecord import CorruptRecordError, frame

RECORDS = [b"", b"a", b"\x00" * 300, bytes(range(256)) * 40]
FORMATS = list(SHARD_FORMATS.values())


def write_shard(shard_format, path: str, records) -> bytes:
    """The shard written from its records' frames, 7 bytes at a time; its bytes."""
    framed = b"".join(map(frame, records))
    with shard_format.writers([path]) as writers:
        for start in range(0, len(framed), 7):
            writers[path].write(framed[start:start + 7])
    with open(path, "rb") as handle:
        data = handle.read()
    assert writers[path].sha256 == hashlib.sha256(data).hexdigest()
    return data


@pytest.mark.parametrize("shard_format", FORMATS, ids=lambda f: f.name)
def test_names_are_seqios(shard_format):
    name = shard_name("train_r1", 3, 10, shard_format)
    assert name == f"train_r1.{shard_format.infix}-00003-of-00010"
    assert format_of(f"/c/t/{name}") is shard_format and is_shard(name)
    names = [shard_name("train", k, 2, shard_format) for k in (1, 0)] + [
        shard_name("train", 0, 3, shard_format), "info.train.json",
        shard_format.index_name(name) or "stats.train.json"]
    assert seqio_shards(names, "train", 2) == sorted(names[:2])
    assert not is_shard(names[-1])  # a side index is not seen as data


@pytest.mark.parametrize("shard_format", FORMATS, ids=lambda f: f.name)
def test_records_read_back_in_order_and_by_number(shard_format, tmp_path):
    path = str(tmp_path / shard_name("train", 0, 1, shard_format))
    data = write_shard(shard_format, path, RECORDS)
    assert list(read_shard(io.BytesIO(data), path)) == RECORDS
    blocks = [data[i:i + 7] for i in range(0, len(data), 7)]
    assert [payload for _, payload in shard_format.records_in_blocks(blocks, name=path)
            ] == RECORDS
    index = shard_format.index_name(path)
    if index is not None:
        with open(index, "wb") as handle:
            handle.write(shard_format.index_bytes([len(r) for r in RECORDS]))
    for side in {index, None}:
        access = shard_format.random_access(path, size=len(data), index=side,
                                            read_range=lambda start, end: data[start:end])
        assert len(access) == len(RECORDS)
        assert [access.read(k)[1] for k in (3, 0, 2, 1)] == [RECORDS[k] for k in (3, 0, 2, 1)]


@pytest.mark.parametrize("shard_format", FORMATS, ids=lambda f: f.name)
def test_damage_names_the_file_and_the_record(shard_format, tmp_path):
    path = str(tmp_path / shard_name("train", 0, 1, shard_format))
    data = write_shard(shard_format, path, RECORDS)
    # byte 70: TFRecord's third record's payload, ArrayRecord's first chunk's header (much of
    # an ArrayRecord file is padding, whose bytes no record reads)
    flipped = data[:70] + bytes([data[70] ^ 1]) + data[71:]
    for damaged in (data[:len(data) // 2], flipped):
        with open(path, "wb") as handle:
            handle.write(damaged)
        with pytest.raises(CorruptRecordError, match=rf"^{path}: record [0-3] "):
            list(read_shard(io.BytesIO(damaged), path))
