"""ArrayRecord shards, as `shard_format.ShardFormat`: the files seqio's ArrayRecord sink names
`<split>.array_record-SSSSS-of-NNNNN`, written and read through the `array_record` package's
own writer and reader, which open a file on this machine's disk themselves. A shard anywhere
else (gs://, any filesystem fsspec knows) is written to a local file first and then copied
there as `fs.atomic_writers` writes any file (on an object store: uploaded whole, or not at
all), and read from a local copy; a local copy is unnamed (unlinked once ArrayRecord's
reader or writer has it open), so nothing is left behind, not even by a killed process.
Every record is its own chunk (`group_size:1`), so any record is read without its
neighbours and no side index is needed; records are compressed as `WRITER_OPTIONS` says
(docs/commands.md gives the measurements behind the choice).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import BinaryIO, TypeVar

from p3data import fs
from p3data.errors import STORAGE_ERRNOS, P3DataError
from p3data.format.tfrecord import HEADER, CorruptRecordError, whole_frames

WRITER_OPTIONS = "group_size:1,snappy"  # docs/commands.md: why snappy
BATCH = 512  # records read at a time in order
BLOCK = 8 << 20  # bytes copied at a time to or from a local copy
T = TypeVar("T")
EXTRA = "arrayrecord"  # p3data's extra installing array_record


def package():
    """array_record's reader and writer, or one line naming the extra that installs them."""
    try:
        from array_record.python import array_record_module
    except ImportError:
        raise P3DataError(f"ArrayRecord shards need the array_record package: pip install "
                         f"'p3data[{EXTRA}]'") from None
    return array_record_module


class ArrayRecordShards:
    name = "arrayrecord"
    infix = "array_record"
    extra = EXTRA

    @staticmethod
    def writers(paths: Sequence[str], *, later: bool = False
                ) -> contextlib.AbstractContextManager[dict[str, ShardSink]]:
        if all(fs.on_local_disk(path) is not None for path in paths):
            return _writers_in_place(paths)
        return _writers_elsewhere(paths, later=later)

    def read_records(self, handle: BinaryIO, name: str) -> Iterator[bytes]:
        blocks = iter(lambda: handle.read(BLOCK), b"")
        for _, payload in _numbered(ArrayRecordAccess(name, blocks)):
            yield payload

    @staticmethod
    def records_in_blocks(blocks: Iterable[bytes], *, name: str) -> Iterator[tuple[int, bytes]]:
        """The records by number (a shard on this machine's disk is read by ArrayRecord's
        reader itself, not from `blocks`); where each starts is its number: a record has no
        byte offset of its own."""
        yield from _numbered(ArrayRecordAccess(name, blocks))

    @staticmethod
    def index_name(shard: str) -> None:
        return None

    @staticmethod
    def index_bytes(lengths: Sequence[int]) -> bytes:
        raise TypeError("ArrayRecord shards need no record index")

    @staticmethod
    def random_access(path: str, *, size: int, index: str | None,
                      read_range: Callable[[int, int], bytes]) -> ArrayRecordAccess:
        blocks = (read_range(start, min(start + BLOCK, size)) for start in range(0, size, BLOCK))
        return ArrayRecordAccess(path, blocks)


def _numbered(access: ArrayRecordAccess) -> Iterator[tuple[int, bytes]]:
    for start in range(0, len(access), BATCH):
        yield from enumerate(access.read_range(start, min(start + BATCH, len(access))),
                             start=start)


class ArrayRecordAccess:
    """An ArrayRecord shard by record number; damage (a file cut short, a flipped byte) is a
    `CorruptRecordError` naming the file and the record, never fewer records. A shard not on
    this machine's disk is read from an unnamed local copy of `blocks`, its bytes in order."""

    def __init__(self, path: str, blocks: Iterable[bytes] = ()):
        self.path = path
        if (local := fs.on_local_disk(path)) is not None:
            self._reader = _reader(local)
        else:
            with _local_file(_reader, blocks) as (reader, _):
                self._reader = reader
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


def _reader(name: str):
    return package().ArrayRecordReader(name, "readahead_buffer_size:0")


def _writer(name: str):
    return package().ArrayRecordWriter(name, WRITER_OPTIONS)


@contextlib.contextmanager
def _local_file(opener: Callable[[str], T], blocks: Iterable[bytes] = ()
                ) -> Iterator[tuple[T, BinaryIO]]:
    """A temporary file on this machine's disk holding `blocks`, opened by `opener`
    (ArrayRecord's reader or writer, which open files by name) and then unlinked: it lives
    on while they or our handle (also given) have it open, and goes with the process."""
    descriptor, name = tempfile.mkstemp(prefix="p3data-", suffix=".array_record")
    try:
        with os.fdopen(descriptor, "w+b") as handle:
            for block in blocks:
                handle.write(block)
            handle.flush()
            opened = opener(name)
            os.unlink(name)
            yield opened, handle
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(name)


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
def _written(path: str, writer) -> Iterator[ShardSink]:
    """The shard `path` through ArrayRecord's `writer` (of a local file), whole once the block
    ends. A write the storage refuses (a full disk, which the writer tells only as it closes)
    is an `OSError` naming `path`, as any other file's."""
    sink = ShardSink(path, writer)
    try:
        yield sink
        sink.finish()
        if not writer.ok():
            raise RuntimeError(f"{path}: ArrayRecord's writer failed")
    finally:
        try:
            writer.close()
        except RuntimeError as err:
            raise _refusal(err, path) or err from None


def _refusal(err: RuntimeError, path: str) -> OSError | None:
    """The writer's error as the `OSError` it reports in words, when the storage refused."""
    for number in STORAGE_ERRNOS:
        if os.strerror(number) in str(err):
            return OSError(number, os.strerror(number), path)
    return None


@contextlib.contextmanager
def _writers_in_place(paths: Sequence[str]) -> Iterator[dict[str, ShardSink]]:
    """Shards on this machine's disk, each written to a temporary sibling renamed onto its
    path once whole (nothing if the block raises); a sink's `sha256` is its file's, after."""
    with contextlib.ExitStack() as stack:
        temporaries = {path: stack.enter_context(fs.local_atomic_path(fs.on_local_disk(path)))
                       for path in paths}
        with contextlib.ExitStack() as writing:
            sinks = {path: writing.enter_context(_written(path, _writer(temporaries[path])))
                     for path in paths}
            yield sinks
        for path, temporary in temporaries.items():
            with open(temporary, "rb") as written:
                sinks[path].sha256 = hashlib.file_digest(written, "sha256").hexdigest()


@contextlib.contextmanager
def _writers_elsewhere(paths: Sequence[str], *, later: bool) -> Iterator[dict[str, ShardSink]]:
    """Shards anywhere else (gs://): each written to an unnamed local file, then copied to its
    path as `fs.atomic_writers` writes files (on an object store, uploads: with `later`, the
    small ones in the background); none appears if the block raises."""
    with contextlib.ExitStack() as stack:
        files = {path: stack.enter_context(_local_file(_writer)) for path in paths}
        with contextlib.ExitStack() as writing:
            sinks = {path: writing.enter_context(_written(path, files[path][0]))
                     for path in paths}
            yield sinks
        with fs.atomic_writers(paths, later=later) as targets:
            for path, (_, handle) in files.items():
                digest = hashlib.sha256()
                handle.seek(0)
                while block := handle.read(BLOCK):
                    targets[path].write(block)
                    digest.update(block)
                sinks[path].sha256 = digest.hexdigest()


ARRAYRECORD = ArrayRecordShards()
