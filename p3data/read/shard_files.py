"""Reading a cache's shard files on any filesystem: their records in order, a block at a time
(threads read ahead), checked by their format (`format.shard_format`), decoded in batches; a
record that does not decode is named by its file and where it starts.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from itertools import groupby
from operator import itemgetter
from typing import Any

from fsspec import AbstractFileSystem

from p3data import fs
from p3data.errors import P3DataError
from p3data.format.example_decoding import ExampleDecodeError, ExampleDecoder
from p3data.format.shard_format import format_of

Example = dict[str, Any]
ShardEnded = Callable[["ShardFile", int], None]  # a shard read to its end, and its records

BLOCK = 8 << 20  # bytes read at a time from a shard
BATCH = 512  # records decoded at a time


@dataclass(frozen=True)
class ShardFile:
    """A file to read records from, with its size (listed once, not asked again)."""

    path: str  # as the user spelled the cache, protocol included
    local: str  # as its filesystem spells it
    size: int
    filesystem: AbstractFileSystem

    @classmethod
    def at(cls, path: str) -> ShardFile:
        filesystem, local = fs.resolve(path)
        try:
            return cls(path, local, filesystem.size(local), filesystem)
        except FileNotFoundError:
            raise P3DataError(f"{path}: missing; check the folder (p3data verify checks a "
                              "cache)") from None


def read_examples(decoder: ExampleDecoder, shards: list[ShardFile], workers: int,
                  ended: ShardEnded) -> Iterator[Example]:
    """The shards' examples in order, decoded a batch at a time."""
    batch: list[tuple[ShardFile, int, bytes]] = []
    for record in records_of_shards(shards, workers, ended):
        batch.append(record)
        if len(batch) == BATCH:
            yield from decode_batch(decoder, batch)
            batch = []
    yield from decode_batch(decoder, batch)


def shard_records(paths: Sequence[str], *, workers: int = 1) -> Iterator[bytes]:
    """The serialized examples of shard files, in order, checked."""
    for _, _, payload in records_of_shards([ShardFile.at(path) for path in paths], workers):
        yield payload


def records_of_shards(shards: list[ShardFile], workers: int,
                      ended: ShardEnded = lambda shard, records: None
                      ) -> Iterator[tuple[ShardFile, int, bytes]]:
    """(shard, where the record starts, payload) of every record of `shards`, in order,
    checked; `ended` hears how many records each shard held once it is read."""
    for shard, blocks in groupby(_blocks(shards, workers), key=itemgetter(0)):
        records = 0
        for offset, payload in format_of(shard.path).records_in_blocks(
                map(itemgetter(1), blocks), name=shard.path):
            records += 1
            yield shard, offset, payload
        ended(shard, records)


def _blocks(shards: list[ShardFile], workers: int) -> Iterator[tuple[ShardFile, bytes]]:
    """The shards' bytes, a block at a time, in order; `workers` threads read ahead."""
    ranges = [(shard, start, min(start + BLOCK, shard.size))
              for shard in shards for start in range(0, shard.size or 1, BLOCK)]
    if workers <= 1:
        for shard, start, end in ranges:
            yield shard, _read(shard, start, end)
        return
    with ThreadPoolExecutor(workers) as pool:
        ahead: deque[tuple[ShardFile, Future[bytes]]] = deque()
        try:
            for shard, start, end in ranges:
                ahead.append((shard, pool.submit(_read, shard, start, end)))
                if len(ahead) > workers:
                    shard_read, future = ahead.popleft()
                    yield shard_read, future.result()
            while ahead:
                shard_read, future = ahead.popleft()
                yield shard_read, future.result()
        finally:
            for _, future in ahead:
                future.cancel()


def _read(shard: ShardFile, start: int, end: int) -> bytes:
    """Bytes `start` to `end` of a shard; an empty shard is one empty block, so that every
    shard is seen (and counted) as it is read."""
    return shard.filesystem.cat_file(shard.local, start, end) if end > start else b""


def decode_batch(decoder: ExampleDecoder,
                 batch: list[tuple[ShardFile, int, bytes]]) -> list[Example]:
    """Records decoded together; one that does not decode is named by file and offset."""
    try:
        return decoder.decode([payload for _, _, payload in batch])
    except ExampleDecodeError:
        for shard, offset, payload in batch:  # find the record, to say where it is
            try:
                decoder.decode([payload])
            except ExampleDecodeError as err:
                raise ExampleDecodeError(f"{shard.path}: the record at byte {offset}: "
                                         f"{err}") from None
        raise
