"""The complete tasks of a p3data cache as their manifests record them, and their examples,
read by `p3data.read` (the one home for reading a cache).

Both sides of a comparison with P3 are read here, and every example comes out in one form
whatever it was read from: a serialized `tf.train.Example` (a parquet row is serialized as
p3data serializes its records). Equal examples are then found equal without decoding them,
which is what costs; only those that differ are taken apart, feature by feature.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import BinaryIO

from p3data import fs
from p3data.errors import P3DataError
from p3data.format import layout
from p3data.format.cache_folder import not_a_cache
from p3data.format.example import encode_example
from p3data.format.example_decoding import (
    ExampleDecodeError,
    feature_spans,
    feature_values,
    fields,
)
from p3data.format.manifest import Manifest, ManifestError
from p3data.read.reader import CacheReader, open_cache, shard_records
from p3data.varints import varint


@dataclass(frozen=True)
class CachedTask:
    """A complete task of a cache, and its manifest."""

    cache: CacheReader
    name: str
    manifest: Manifest

    @property
    def folder(self) -> str:
        return self.cache.folder(self.name)

    def shards(self, split: str) -> list[str]:
        """The split's shards in order (`-00000-of-N` first), as the manifest lists them."""
        return self.cache.split(self.name, split).shards


@dataclass(frozen=True)
class CachedTasks:
    tasks: dict[str, CachedTask]  # task name -> its folder and manifest
    unreadable: list[str]  # why complete task folders' manifests could not be read


def cached_tasks(root: str) -> CachedTasks:
    """Every complete task of the cache at `root` (unfinished folders are not data yet)."""
    if not fs.exists(root):  # named as given (the reader names it as its absolute path)
        raise not_a_cache(root)
    cache = open_cache(root)
    tasks: dict[str, CachedTask] = {}
    unreadable = []
    for name in cache.tasks:
        try:
            manifest = cache.manifest(name)
        except ManifestError as err:
            unreadable.append(str(err))
            continue
        if manifest is None:
            unreadable.append(f"{fs.join(cache.folder(name), layout.MANIFEST)}: missing")
            continue
        tasks.setdefault(manifest.task, CachedTask(cache, name, manifest))
    return CachedTasks(tasks, unreadable)


def records(paths: Iterable[str]) -> Iterator[bytes]:
    """The serialized examples of TFRecord shards, in order, streamed."""
    return shard_records(list(paths))


def row_record(row: Mapping[str, object]) -> bytes:
    """A parquet row of P3 (where a feature the task does not have is None), serialized as
    p3data serializes its records: equal values give equal bytes."""
    return encode_example({name: value for name, value in row.items() if value is not None})


def entries_of(record: bytes) -> list[bytes]:
    """A serialized Example's feature map entries (name and feature) as they are serialized,
    sorted: equal lists are equal examples, whatever order their features were written in."""
    try:
        return sorted(record[start - 1 - len(varint(end - start)):end]
                      for _, _, features_start, features_end in fields(record, 0, len(record))
                      for _, _, start, end in fields(record, features_start, features_end))
    except IndexError as err:
        raise ExampleDecodeError(f"not a serialized tf.train.Example ({err})") from None


def features_of(record: bytes) -> dict[str, bytes]:
    """A serialized Example's features, each still serialized."""
    try:
        return {name.decode(): record[start:end] for name, start, end in feature_spans(record)}
    except (IndexError, UnicodeDecodeError) as err:
        raise ExampleDecodeError(f"not a serialized tf.train.Example ({err})") from None


def values_of(feature: bytes | None) -> tuple | None:
    """A serialized feature's values: text as str, bools as 0/1 (None: the feature is absent)."""
    if feature is None:
        return None
    return tuple(value.decode("utf-8", "surrogateescape") if isinstance(value, bytes) else value
                 for value in feature_values(feature, 0, len(feature)))


def open_data(path: str) -> BinaryIO:
    """A data file, opened to read; a missing one is one error line."""
    try:
        return fs.open_read(path)
    except FileNotFoundError:
        raise P3DataError(f"{path}: missing; check the folder (p3data verify checks a "
                          "cache)") from None
