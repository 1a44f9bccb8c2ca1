"""Every registered shard format keeps the contract the builder, verify, peek, the report and
the reader rely on: seqio's names, records read back in order as framed, by number with or
without the side index the builder writes, and damage named by file and record."""

from __future__ import annotations

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
from p3data.format.tfrecord import CorruptRecordError

RECORDS = [b"", b"a", b"\x00" * 300, bytes(range(256)) * 40]
FORMATS = list(SHARD_FORMATS.values())


def shard_bytes(shard_format, records) -> bytes:
    return b"".join(piece for record in records for piece in shard_format.frame_pieces(record))


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
    data = shard_bytes(shard_format, RECORDS)
    path = str(tmp_path / shard_name("train", 0, 1, shard_format))
    assert list(read_shard(io.BytesIO(data), path)) == RECORDS
    blocks = [data[i:i + 7] for i in range(0, len(data), 7)]
    assert [payload for _, payload in shard_format.records_in_blocks(blocks, name=path)
            ] == RECORDS
    index = shard_format.index_name(path)
    if index is not None:
        with open(index, "wb") as handle:
            handle.write(shard_format.index_bytes([len(r) for r in RECORDS]))
    with open(path, "wb") as handle:
        handle.write(data)
    for side in {index, None}:
        access = shard_format.random_access(path, size=len(data), index=side,
                                            read_range=lambda start, end: data[start:end])
        assert len(access) == len(RECORDS)
        assert [access.read(k)[1] for k in (3, 0, 2, 1)] == [RECORDS[k] for k in (3, 0, 2, 1)]


@pytest.mark.parametrize("shard_format", FORMATS, ids=lambda f: f.name)
def test_damage_names_the_file_and_the_record(shard_format):
    data = shard_bytes(shard_format, RECORDS)
    path = shard_name("train", 0, 1, shard_format)
    with pytest.raises(CorruptRecordError, match=rf"^{path}: record 3 .*truncated"):
        list(read_shard(io.BytesIO(data[:-1]), path))
    flipped = data[:-10] + bytes([data[-10] ^ 1]) + data[-9:]
    with pytest.raises(CorruptRecordError, match=rf"^{path}: record 3 "):
        list(read_shard(io.BytesIO(flipped), path))
