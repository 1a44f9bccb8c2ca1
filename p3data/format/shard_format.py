"""The cache's shard file format, behind one interface: what the builder, `verify`, `peek`, the
report and the reader need of a shard file, and the formats registered by name.

A format names its files as seqio does (`<split>.<infix>-SSSSS-of-NNNNN`), writes a shard from
the builder's TFRecord-framed part records (which are dealt and assembled into shards),
reads a file's records in order with their checks (damage is a `CorruptRecordError` naming the
file and the record), and opens a shard for random access (from a side index the builder writes
beside it, where the format needs one). TFRecord (`tfrecord_shards`, the default) and
ArrayRecord (`arrayrecord_shards`) are registered: a format is one module implementing
`ShardFormat` and its entry in `SHARD_FORMATS`.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from typing import BinaryIO, Protocol

from p3data.format.arrayrecord_shards import ARRAYRECORD
from p3data.format.tfrecord_shards import TFRECORD

ReadRange = Callable[[int, int], bytes]  # a shard's bytes from start to end


class RecordAccess(Protocol):
    """One shard's records by number."""

    def __len__(self) -> int: ...

    def read(self, number: int) -> tuple[int, bytes]:
        """Record `number`: where it starts in the file (for messages) and its payload, checked."""
        ...


class ShardSink(Protocol):
    """One shard being written, from its records as TFRecord frames (the builder's parts'
    framing), in blocks that may cut a record; `sha256` is the file's once written."""

    sha256: str

    def write(self, framed: bytes) -> None: ...


class ShardFormat(Protocol):
    name: str  # the registry's key
    infix: str  # seqio's file name: `<split>.<infix>-SSSSS-of-NNNNN`
    extra: str | None  # p3data's extra installing the package it needs (staged for workers)

    def writers(self, paths: Sequence[str], *,
                later: bool = False) -> AbstractContextManager[dict[str, ShardSink]]:
        """Shards by path, each appearing whole once the block ends, none if it raises (on an
        object store, with `later`, uploaded in the background: `fs.atomic_writers`)."""
        ...

    def read_records(self, handle: BinaryIO, name: str) -> Iterator[bytes]:
        """The payloads of a file, in order, checked; damage raises naming `name` and record."""
        ...

    def records_in_blocks(self, blocks: Iterable[bytes], *,
                          name: str) -> Iterator[tuple[int, bytes]]:
        """(where it starts, payload) of each record of a file given as consecutive blocks of
        its bytes, checked as `read_records` checks them."""
        ...

    def index_name(self, shard: str) -> str | None:
        """The side file random access reads, named from the shard's name or path (None: the
        format needs none)."""
        ...

    def index_bytes(self, lengths: Sequence[int]) -> bytes:
        """The side file of a shard holding records of these payload lengths."""
        ...

    def random_access(self, path: str, *, size: int, index: str | None,
                      read_range: ReadRange) -> RecordAccess:
        """A shard of `size` bytes by record number; `index` is its side file's path, if
        there (without it, the format finds what it needs by reading the shard)."""
        ...


SHARD_FORMATS: dict[str, ShardFormat] = {TFRECORD.name: TFRECORD, ARRAYRECORD.name: ARRAYRECORD}
DEFAULT_SHARD_FORMAT: ShardFormat = TFRECORD
# A shard's name, read back: its split, format, index and count.
SHARD_NAME = re.compile(r"(?P<split>.+)\.(?P<infix>{})-(?P<index>\d{{5}})-of-(?P<count>\d{{5}})"
                        .format("|".join(re.escape(f.infix) for f in SHARD_FORMATS.values())))
SHARD_GLOBS = tuple(f"*.{f.infix}-*" for f in SHARD_FORMATS.values())  # seqio's, loosely


def shard_format(name: str) -> ShardFormat:
    return SHARD_FORMATS[name]


def shard_name(split: str, index: int, count: int,
               shard_format: ShardFormat = DEFAULT_SHARD_FORMAT) -> str:
    return f"{split}.{shard_format.infix}-{index:05d}-of-{count:05d}"


def format_of(name: str) -> ShardFormat:
    """The format of a shard, from its name (the default for a name that is no shard's)."""
    match = SHARD_NAME.fullmatch(name.rpartition("/")[2])
    infix = match["infix"] if match else DEFAULT_SHARD_FORMAT.infix
    return next(f for f in SHARD_FORMATS.values() if f.infix == infix)


def is_shard(name: str) -> bool:
    """Whether a task folder's file is a shard, as seqio's loose pattern `*.<infix>-*` sees it."""
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in SHARD_GLOBS)


def seqio_shards(names: Iterable[str], split: str, num_shards: int | None = None, *,
                 infix: str | None = None) -> list[str]:
    """The shards of `split` among `names` (of the format `infix` names, or any), as seqio finds
    them without a manifest: `<split>.<infix>-*-of-*<num_shards>`, sorted."""
    names = list(names)
    return sorted(name for f in SHARD_FORMATS.values() if infix in (None, f.infix)
                  for name in fnmatch.filter(names, f"{split}.{f.infix}-*-of-*{num_shards or ''}"))


def read_shard(handle: BinaryIO, path: str) -> Iterator[bytes]:
    """A shard's payloads in order, checked, in the format its name says."""
    return format_of(path).read_records(handle, path)
