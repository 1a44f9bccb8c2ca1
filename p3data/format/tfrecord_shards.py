"""TFRecord shards, as `shard_format.ShardFormat`: TFRecord framing (`tfrecord`) and, for
random access, the record index written beside each shard (`index`), or, where a cache has
none, the records' offsets found by reading their headers."""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import BinaryIO

import numpy as np

from p3data import fs
from p3data.format import index as record_index
from p3data.format import tfrecord
from p3data.format.tfrecord import HEADER, CorruptRecordError, whole_frames


class TFRecordShards:
    name = "tfrecord"
    infix = "tfrecord"
    extra = None  # p3data's own code

    @staticmethod
    def writers(paths: Sequence[str], *, later: bool = False
                ) -> contextlib.AbstractContextManager[dict[str, HashingSink]]:
        return _writers(paths, later=later)

    @staticmethod
    def read_records(handle: BinaryIO, name: str) -> Iterator[bytes]:
        return tfrecord.read_records(handle, name)

    @staticmethod
    def records_in_blocks(blocks: Iterable[bytes], *, name: str) -> Iterator[tuple[int, bytes]]:
        for offset, data, start, end in tfrecord.records_in_blocks(blocks, name=name):
            yield offset, data[start + HEADER:end - 4]

    @staticmethod
    def index_name(shard: str) -> str:
        return record_index.index_for(shard)

    @staticmethod
    def index_bytes(lengths: Sequence[int]) -> bytes:
        offsets = record_index.offsets_from_lengths(np.asarray(lengths, np.uint64))
        return record_index.index_bytes(offsets)

    @staticmethod
    def random_access(path: str, *, size: int, index: str | None,
                      read_range: Callable[[int, int], bytes]) -> TFRecordAccess:
        return TFRecordAccess(path, _offsets(path, size, index), read_range)


class TFRecordAccess:
    """A TFRecord shard by record number, through its records' offsets (then its size)."""

    def __init__(self, path: str, offsets: np.ndarray, read_range: Callable[[int, int], bytes]):
        self.path, self.offsets, self._read_range = path, offsets, read_range

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def read(self, number: int) -> tuple[int, bytes]:
        start, end = int(self.offsets[number]), int(self.offsets[number + 1])
        data = self._read_range(start, end)
        spans, used = whole_frames(data, name=self.path, base=start, number=number)
        if len(spans) != 1 or used != end - start:
            raise CorruptRecordError(f"{self.path}: record {number} does not end where its "
                                     f"index says (it starts at byte {start}); rebuild the "
                                     "index with p3data index")
        return start, data[HEADER:-4]


class HashingSink:
    """A shard's framed records, written as they are, hashed on the way."""

    def __init__(self, handle: BinaryIO):
        self._handle, self._digest, self.sha256 = handle, hashlib.sha256(), ""

    def write(self, framed: bytes) -> None:
        self._handle.write(framed)
        self._digest.update(framed)

    def finish(self) -> None:
        self.sha256 = self._digest.hexdigest()


@contextlib.contextmanager
def _writers(paths: Sequence[str], *, later: bool) -> Iterator[dict[str, HashingSink]]:
    with fs.atomic_writers(paths, later=later) as handles:
        sinks = {path: HashingSink(handle) for path, handle in handles.items()}
        yield sinks
        for sink in sinks.values():
            sink.finish()


def _offsets(path: str, size: int, index_path: str | None) -> np.ndarray:
    """A shard's record offsets: from its index, or found by reading its records' headers."""
    if index_path is None:
        return record_index.scan_offsets(path, size)
    try:
        return record_index.read_index(index_path, size)
    except record_index.RecordIndexError:  # which of the two changed, only verify can tell
        raise record_index.RecordIndexError(
            f"{index_path} does not describe {path} ({size:,} bytes): the shard or its index "
            "changed since it was indexed; check the cache with p3data verify") from None


TFRECORD = TFRecordShards()
