"""ArrayRecord shards, as `shard_format.ShardFormat`: the files seqio's ArrayRecord sink names
`<split>.array_record-SSSSS-of-NNNNN`, written and read through the `array_record` package's
own writer and reader, which need a file on this machine (ArrayRecord's writer cannot write
gs://). Every record is its own chunk (`group_size:1`), so any record is read without its
neighbours and no side index is needed; records are compressed as `WRITER_OPTIONS` says
(docs/commands.md gives the measurements behind the choice).
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import BinaryIO

from fsspec.implementations.local import LocalFileSystem

from p3data import fs
from p3data.errors import P3DataError
from p3data.format.tfrecord import HEADER, CorruptRecordError, whole_frames

WRITER_OPTIONS = "group_size:1,snappy"  # docs/commands.md: why snappy
BATCH = 512  # records read at a time in order
EXTRA = "pip install 'p3data[arrayrecord]'"


def package():
    """array_record's reader and writer, or one line naming the extra that installs them."""
    try:
        from array_record.python import array_record_module
    except ImportError:
        raise P3DataError(f"ArrayRecord shards need the array_record package: {EXTRA}") from None
    return array_record_module


def local_path(path: str) -> str:
    """The path on this machine's disk (ArrayRecord's reader and writer open files themselves,
    and its writer cannot write to an object store)."""
    filesystem, local = fs.resolve(path)
    if not isinstance(filesystem, LocalFileSystem):
        raise P3DataError(f"{path}: ArrayRecord shards are read and written on this machine's "
                          "disk only; build or copy the cache to a local folder")
    return local


class ArrayRecordShards:
    name = "arrayrecord"
    infix = "array_record"

    @staticmethod
    def writers(paths: Sequence[str], *, later: bool = False
                ) -> contextlib.AbstractContextManager[dict[str, ShardSink]]:
        return _writers(paths)

    def read_records(self, handle: BinaryIO, name: str) -> Iterator[bytes]:
        for _, payload in self.records_in_blocks((), name=name):
            yield payload

    @staticmethod
    def records_in_blocks(blocks: Iterable[bytes], *, name: str) -> Iterator[tuple[int, bytes]]:
        """The records by number (ArrayRecord's reader reads the file itself, not `blocks`);
        where each starts is its number: a record has no byte offset of its own."""
        access = ArrayRecordAccess(name)
        for start in range(0, len(access), BATCH):
            yield from enumerate(access.read_range(start, min(start + BATCH, len(access))),
                                 start=start)

    @staticmethod
    def index_name(shard: str) -> None:
        return None

    @staticmethod
    def index_bytes(lengths: Sequence[int]) -> bytes:
        raise TypeError("ArrayRecord shards need no record index")

    @staticmethod
    def random_access(path: str, *, size: int, index: str | None,
                      read_range: Callable[[int, int], bytes]) -> ArrayRecordAccess:
        return ArrayRecordAccess(path)


class ArrayRecordAccess:
    """An ArrayRecord shard by record number; damage (a file cut short, a flipped byte) is a
    `CorruptRecordError` naming the file and the record, never fewer records."""

    def __init__(self, path: str):
        self.path = path
        self._reader = package().ArrayRecordReader(local_path(path), "readahead_buffer_size:0")
        if not self._reader.ok():  # a file cut short opens with no records, not ok
            raise CorruptRecordError(f"{path}: record 0 and after unreadable: not a whole "
                                     "ArrayRecord file (cut short, or its footer damaged)")
        self._count = self._reader.num_records()

    def __len__(self) -> int:
        return self._count

    def read(self, number: int) -> tuple[int, bytes]:
        try:
            return number, self._reader.read([number])[0]
        except RuntimeError as err:
            raise CorruptRecordError(f"{self.path}: record {number} is damaged "
                                     f"({str(err).partition(';')[0]})") from None

    def read_range(self, start: int, end: int) -> list[bytes]:
        """Records `start` to `end` at once; where they are damaged, one at a time, to name
        the first damaged one."""
        try:
            return self._reader.read(start, end)
        except RuntimeError:
            return [self.read(number)[1] for number in range(start, end)]


class ShardSink:
    """Takes a shard's records TFRecord-framed (the builder's parts' framing, in blocks that
    may cut a record) and writes their payloads through ArrayRecord's writer."""

    def __init__(self, path: str, writer):
        self.path, self.sha256, self._writer = path, "", writer
        self._pending, self._number = b"", 0

    def write(self, framed: bytes) -> None:
        data = self._pending + framed if self._pending else framed
        spans, used = whole_frames(data, name=self.path, number=self._number, verify=False)
        for start, end in spans:
            self._writer.write(data[start + HEADER:end - 4])
        self._number += len(spans)
        self._pending = data[used:]

    def finish(self) -> None:
        if self._pending:
            raise RuntimeError(f"{self.path}: its records end mid-record "
                               f"({len(self._pending)} bytes after record {self._number})")


@contextlib.contextmanager
def shard_writer(path: str) -> Iterator[ShardSink]:
    """The shard, written to a temporary sibling renamed onto `path` once whole (nothing if
    the block raises); the sink's `sha256` is the file's, after."""
    module = package()
    with fs.local_atomic_path(local_path(path)) as temporary:
        writer = module.ArrayRecordWriter(temporary, WRITER_OPTIONS)
        sink = ShardSink(path, writer)
        try:
            yield sink
            sink.finish()
            if not writer.ok():
                raise RuntimeError(f"{path}: ArrayRecord's writer failed")
        finally:
            writer.close()
        with open(temporary, "rb") as written:
            sink.sha256 = hashlib.file_digest(written, "sha256").hexdigest()


@contextlib.contextmanager
def _writers(paths: Sequence[str]) -> Iterator[dict[str, ShardSink]]:
    with contextlib.ExitStack() as stack:
        yield {path: stack.enter_context(shard_writer(path)) for path in paths}


ARRAYRECORD = ArrayRecordShards()
