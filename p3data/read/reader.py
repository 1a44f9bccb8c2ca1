"""Reading a cache without TensorFlow: its complete tasks, their splits, and their examples as
numpy arrays and strings, in order or by number.

Reads p3data caches (manifest.json: its format version is checked, its files are the shards),
caches written by stock `seqio_cache_tasks`, and P3's `data/<task>/` folders (no manifest: the
shards are found as seqio finds them, `<split>.tfrecord-*-of-*<num_shards>`). Only folders
holding COMPLETED are read, as seqio does. Shards are read through their format
(`p3data.format.shard_format`), which checks every record (TFRecord's CRCs): a corrupt or
truncated record is an error naming its file and byte offset, never skipped. Records are
counted too (seqio does not): a shard against its record index once it is read, a whole split
against its stats, so a shard cut at a record boundary is an error, not a shorter split.

Examples come shard after shard, each shard's in file order; `shard=(k, n)` reads output shards
k, k + n, ... (one data-parallel host's share, as seqio's `ShardInfo`). Random access is the
format's: for TFRecord, the record index (`p3data.format.index`) where the cache has one, else
the records' offsets found by reading their headers, once per shard.
"""

from __future__ import annotations

import bisect
import posixpath
from collections.abc import Iterator, Sequence
from typing import Any

import msgspec
import numpy as np

from p3data import fs
from p3data.errors import NotFoundError, P3DataError
from p3data.format import layout
from p3data.format.cache_folder import (
    is_complete,
    not_a_cache,
    scan,
    splits_with_info,
    task_names,
)
from p3data.format.example_decoding import ExampleDecoder, FeatureInfo
from p3data.format.manifest import Manifest, read_manifest
from p3data.format.shard_format import RecordAccess, format_of, seqio_shards
from p3data.read.shard_files import (
    Example,
    ShardFile,
    decode_batch,
    read_examples,
    shard_records,
)

__all__ = ["CacheReader", "Example", "TaskSplit", "open_cache", "shard_records"]


class TaskSplit(Sequence[Example]):
    """One split of one complete task: its examples, in order (`iter`, `examples`) or by
    number (`ts[i]`)."""

    def __init__(self, *, task: str, split: str, folder: str, files: dict[str, ShardFile],
                 manifest: Manifest | None):
        self.task, self.split, self.folder = task, split, folder
        self._files, self._manifest = files, manifest
        info = self._json(layout.info_name(split))
        self._stats = self._json(layout.stats_name(split))
        legacy = "seqio_version" not in info  # seqio reads such a cache's int64 as int32
        self.features: dict[str, FeatureInfo] = {
            name: FeatureInfo("int32" if legacy and spec["dtype"] == "int64" else spec["dtype"],
                              tuple(spec["shape"]))
            for name, spec in info.get("features", {}).items()}
        self._shards = self._find_shards(info.get("num_shards"))
        self._access: dict[int, RecordAccess] = {}
        self._first_numbers: list[int] = []
        self._all_features: ExampleDecoder | None = None

    def _find_shards(self, num_shards: int | None) -> list[ShardFile]:
        if self._manifest is not None:
            names = self._manifest.splits[self.split].shards
            if missing := [name for name in names if name not in self._files]:
                raise P3DataError(f"{fs.join(self.folder, missing[0])}: missing (listed in "
                                  f"{layout.MANIFEST}); check the cache with p3data verify")
        else:
            names = seqio_shards(self._files, self.split, num_shards)
        return [self._files[name] for name in names]

    def __repr__(self) -> str:
        return f"TaskSplit({self.task!r}, {self.split!r}, {len(self)} examples)"

    def __getstate__(self) -> dict[str, Any]:
        """Pickled without what it has loaded (shards opened by number, the decoder): a worker
        process it is sent to loads the indexes it needs itself."""
        return {**self.__dict__, "_access": {}, "_first_numbers": [], "_all_features": None}

    def __len__(self) -> int:
        return self._stats.get("examples", 0)

    @property
    def stats(self) -> dict[str, int]:
        """What `stats.<split>.json` holds: examples, and tokens per token feature."""
        return dict(self._stats)

    @property
    def shards(self) -> list[str]:
        """The output shards' paths, in order."""
        return [shard.path for shard in self._shards]

    def __iter__(self) -> Iterator[Example]:
        return self.examples()

    def examples(self, features: Sequence[str] | None = None, *,
                 shard: tuple[int, int] | None = None, workers: int = 1) -> Iterator[Example]:
        """The examples in order: shard after shard, or one host's shards `(index, count)`;
        only `features` if given. `workers` threads read ahead; the order stays the same."""
        decoder = self._decoder(features)
        numbers = range(len(self._shards))
        if shard is not None:
            index, count = shard
            if not 0 <= index < count <= len(numbers):
                raise P3DataError(f"{self.task}/{self.split}: cannot read shard {index} of "
                                  f"{count}: the split has {len(numbers)} output shards")
            numbers = numbers[index::count]
        return self._counted(decoder, numbers, workers, whole=shard is None)

    def _counted(self, decoder: ExampleDecoder, numbers: Sequence[int], workers: int, *,
                 whole: bool) -> Iterator[Example]:
        """The examples of shards `numbers`, counted: a shard with a record index must hold
        as many records as it says, and the whole split as many as its stats say. A shard cut
        at a record boundary is sound framing: only counting tells it is short. (One host's
        share of a split without indexes cannot be counted: nothing records its shards'.)"""
        number_of = {self._shards[number].path: number for number in numbers}
        read = 0

        def ended(shard: ShardFile, records: int) -> None:
            nonlocal read
            read += records
            if format_of(shard.path).index_name(fs.name_of(shard.path)) in self._files:
                indexed = len(self.records(number_of[shard.path]))
                if records != indexed:
                    raise P3DataError(f"{shard.path}: holds {records} records, its record "
                                      f"index {indexed}; check the cache with p3data verify")

        yield from read_examples(decoder, [self._shards[number] for number in numbers],
                                 workers, ended)
        if whole and read != len(self):
            raise self._miscounted(read)

    def __getitem__(self, number: int) -> Example:  # type: ignore[override]
        return decode_batch(self._decoder(None), [self._record(number)])[0]

    def __getitems__(self, numbers: Sequence[int]) -> list[Example]:
        """Several examples by number, decoded together (faster than one at a time): what
        torch's DataLoader asks of a dataset that has this method."""
        return decode_batch(self._decoder(None), [self._record(number) for number in numbers])

    def _record(self, number: int) -> tuple[ShardFile, int, bytes]:
        """Example `number`'s record: (shard, where it starts, payload), checked."""
        if not isinstance(number, int | np.integer):
            raise TypeError(f"examples are numbered by int, not {type(number).__name__}")
        size = len(self)
        if not -size <= number < size:
            raise IndexError(f"{self.task}/{self.split}: example {number} of {size}")
        number %= size
        firsts = self._firsts()
        shard_number = bisect.bisect_right(firsts, number) - 1
        where, payload = self.records(shard_number).read(number - firsts[shard_number])
        return self._shards[shard_number], where, payload

    def records(self, shard_number: int) -> RecordAccess:
        """Shard `shard_number`'s records by number, opened once as its format opens them
        (TFRecord's: from its record index, or by reading its records' headers)."""
        if shard_number not in self._access:
            shard = self._shards[shard_number]
            shard_format = format_of(shard.path)
            index_name = shard_format.index_name(fs.name_of(shard.path))
            index = self._files.get(index_name) if index_name else None
            self._access[shard_number] = shard_format.random_access(
                shard.path, size=shard.size, index=index.path if index else None,
                read_range=lambda start, end, shard=shard: shard.filesystem.cat_file(
                    shard.local, start, end))
        return self._access[shard_number]

    def _firsts(self) -> list[int]:
        """The number of each shard's first example (checked against the stats)."""
        if not self._first_numbers:
            firsts = [0]
            for number in range(len(self._shards)):
                firsts.append(firsts[-1] + len(self.records(number)))
            if firsts[-1] != len(self):
                raise self._miscounted(firsts[-1])
            self._first_numbers = firsts[:-1]
        return self._first_numbers

    def _miscounted(self, records: int) -> P3DataError:
        return P3DataError(f"{self.folder}: split {self.split}: its shards hold {records} "
                           f"records, {layout.stats_name(self.split)} says {len(self)}; check "
                           "the cache with p3data verify")

    def _json(self, name: str) -> dict:
        if name not in self._files:
            raise P3DataError(f"{fs.join(self.folder, name)}: missing; seqio cannot read this "
                              "split either")
        path = self._files[name].path
        try:
            return msgspec.json.decode(fs.read_bytes(path))
        except msgspec.DecodeError as err:
            raise P3DataError(f"{path}: not valid JSON ({err})") from None

    def _decoder(self, features: Sequence[str] | None) -> ExampleDecoder:
        if features is None:
            if self._all_features is None:
                self._all_features = ExampleDecoder(self.features)
            return self._all_features
        if not self.features and not len(self):  # an empty split's info is `{}`: no example
            return ExampleDecoder({})            # to have the features: it yields none
        if unknown := [name for name in features if name not in self.features]:
            raise NotFoundError(f"{self.task}/{self.split}: no feature {unknown[0]!r}; it has "
                                f"{', '.join(self.features)}")
        return ExampleDecoder({name: self.features[name] for name in features})


class CacheReader:
    """A cache's complete tasks (the folders holding COMPLETED) and their splits."""

    def __init__(self, root: str):
        self.root = fs.canonical(fs.without_trailing_slash(root))
        self._fs, _ = fs.resolve(self.root)
        folders = scan(self.root).folders
        if not any(is_complete(names) for names in folders.values()):
            raise _unreadable(self.root, folders)
        named = task_names(self.root, folders)
        self._folders = {task: folder for task, folder in named.items()
                         if is_complete(folders[folder])}
        self._unfinished = {task: folder for task, folder in named.items()
                            if task not in self._folders}
        self._listings: dict[str, tuple[dict[str, ShardFile], Manifest | None]] = {}

    def __repr__(self) -> str:
        return f"CacheReader({self.root!r}, {len(self._folders)} tasks)"

    @property
    def tasks(self) -> list[str]:
        """The complete tasks, sorted."""
        return sorted(self._folders)

    @property
    def unfinished(self) -> list[str]:
        """The tasks whose folders are there without COMPLETED (seqio reads none), sorted."""
        return sorted(self._unfinished)

    def folder(self, task: str) -> str:
        if task in self._unfinished:
            raise NotFoundError(f"{self._unfinished[task]}: not complete (no "
                                f"{layout.COMPLETED}: a run is writing it or crashed); rerun "
                                "p3data cache to finish it")
        if task not in self._folders:
            raise NotFoundError(f"{self.root}: no complete task {task!r}" + _known(self.tasks))
        return self._folders[task]

    def manifest(self, task: str) -> Manifest | None:
        """The task's manifest (None for a cache written by seqio, or P3's)."""
        return self._listing(task)[1]

    def splits(self, task: str) -> list[str]:
        files, manifest = self._listing(task)
        if manifest is not None:
            return list(manifest.splits)
        return splits_with_info(files)

    def split(self, task: str, split: str) -> TaskSplit:
        files, manifest = self._listing(task)
        if split not in self.splits(task):
            raise NotFoundError(f"{self.folder(task)}: no split {split!r}"
                                + _known(self.splits(task)))
        return TaskSplit(task=task, split=split, folder=self.folder(task), files=files,
                         manifest=manifest)

    def _listing(self, task: str) -> tuple[dict[str, ShardFile], Manifest | None]:
        """The task folder's files (read once), and its manifest if it has one."""
        if task not in self._listings:
            folder = self.folder(task)
            _, local = fs.resolve(folder)
            files = {posixpath.basename(entry["name"]): entry
                     for entry in self._fs.ls(local, detail=True) if entry["type"] == "file"}
            listing = {name: ShardFile(fs.join(folder, name), entry["name"], entry["size"],
                                       self._fs) for name, entry in files.items()}
            manifest = read_manifest(folder) if layout.MANIFEST in listing else None
            self._listings[task] = listing, manifest
        return self._listings[task]


def _known(names: list[str]) -> str:
    shown = ", ".join(names[:10]) + (f" and {len(names) - 10} more" if len(names) > 10 else "")
    return f"; it has {shown}" if names else ""


def _unreadable(root: str, folders: dict[str, list[str]]) -> P3DataError:
    if not folders:
        return not_a_cache(root)
    first = next(iter(folders))
    return P3DataError(f"{first}: no {layout.COMPLETED}, so not a complete task (a run is "
                       f"writing it or crashed; seqio would not read it either)"
                       + (f"; and {len(folders) - 1} more such folders"
                          if len(folders) > 1 else ""))


def open_cache(root: str) -> CacheReader:
    """The cache at `root` (a local path or any fsspec URL: gs://, memory://, file://), as a
    `CacheReader`: its complete `tasks`, their `splits(task)`, and `split(task, split)`, a
    `TaskSplit` of examples (numpy arrays and strings) by number or in order. A folder that is
    no cache is one `P3DataError` saying so; nothing is read until asked for."""
    return CacheReader(root)
