"""Every registered shard format keeps the contract the builder, verify, peek, the report and
the reader rely on: seqio's names, records written from TFRecord frames in blocks that cut
them, read back in order, by number with or without the side index the builder writes, and
damage named by file and record."""

from __future__ import annotations

import errno
import hashlib
import io
import tempfile
import uuid
from pathlib import Path

import pytest

from p3data import fs
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


def write_shard(shard_format, path: str, records, *, read=None) -> bytes:
    """The shard written from its records' frames, 7 bytes at a time; its bytes."""
    framed = b"".join(map(frame, records))
    with shard_format.writers([path]) as writers:
        for start in range(0, len(framed), 7):
            writers[path].write(framed[start:start + 7])
    data = read(path) if read else Path(path).read_bytes()
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


@pytest.mark.parametrize("shard_format", FORMATS, ids=lambda f: f.name)
def test_a_shard_off_this_machines_disk(shard_format, tmp_path, monkeypatch):
    """On memory:// (as on gs://, a filesystem ArrayRecord's own reader and writer cannot
    open): the bytes written on local disk, read back in order, in blocks and by number;
    nothing appears if the writing fails, and no local copy is left behind."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    name = shard_name("train", 0, 1, shard_format)
    path = f"memory://shard-format/{uuid.uuid4().hex}/{name}"
    data = write_shard(shard_format, path, RECORDS, read=fs.read_bytes)
    assert data == write_shard(shard_format, str(tmp_path / name), RECORDS)
    with fs.open_read(path) as handle:
        assert list(read_shard(handle, path)) == RECORDS
    blocks = [data[i:i + 7] for i in range(0, len(data), 7)]
    assert [payload for _, payload in shard_format.records_in_blocks(blocks, name=path)
            ] == RECORDS
    access = shard_format.random_access(path, size=len(data), index=None,
                                        read_range=lambda start, end: data[start:end])
    assert [access.read(k)[1] for k in (3, 0, 2, 1)] == [RECORDS[k] for k in (3, 0, 2, 1)]
    other = path.replace("train.", "validation.")
    with pytest.raises(RuntimeError, match="the worker died"), \
            shard_format.writers([other]) as writers:
        writers[other].write(frame(b"half"))
        raise RuntimeError("the worker died")
    assert not fs.exists(other)
    assert not list((tmp_path / "tmp").iterdir())


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs Linux's /dev/full")
def test_a_full_disk_under_arrayrecords_writer_is_the_oserror_of_any_write():
    """array_record tells a refused write only as its writer closes, in words: it is the
    `OSError` (ENOSPC) naming the shard that any other file's write raises, which a build
    says in one line (`errors.storage_refusal`)."""
    from p3data.errors import storage_refusal
    from p3data.format.arrayrecord_shards import _writer, _written

    shard = "/cache/task/train.array_record-00000-of-00001"
    with pytest.raises(OSError) as caught, _written(shard, _writer("/dev/full")) as sink:
        sink.write(frame(b"x" * 100_000))
    assert caught.value.errno == errno.ENOSPC and caught.value.filename == shard
    assert storage_refusal(caught.value) == "no space left on the device writing in /cache/task"
