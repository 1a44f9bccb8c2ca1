"""Where a dataset's rows come from: a mirror on any filesystem, a manual-download folder, or
pinned parquet files on the Hub (`hub.py`).

Every store keeps one contract, `RowStore`. Nothing is read until a shard is listed or read;
a source that cannot be found, loaded or decoded raises a `SourceError` naming the dataset
split, the file and the place in it.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterator
from functools import cached_property
from pathlib import Path
from typing import Any

from p3data import fs
from p3data.datasets.catalog import DatasetEntry
from p3data.datasets.errors import DataNotFoundError, MirrorError
from p3data.datasets.hub import HubStore
from p3data.datasets.parquet import ParquetRows, row_group_runs
from p3data.datasets.rows import RowFile
from p3data.datasets.sample_rules import RuleStore, is_samples, rule_splits
from p3data.datasets.shards import ROWS_PER_SHARD, RowStore, Shard, file_shards, row_runs
from p3data.datasets.snapshot import (
    SnapshotRecord,
    changed,
    fetched_dataset,
    read_snapshot,
    record_problems,
    unrecorded,
)

ENV_DATA_DIR = "P3DATA_DATA_DIR"
ENV_MANUAL_DIR = "P3DATA_MANUAL_DIR"
DEFAULT_MANUAL_DIR = Path("~/.cache/p3data/manual")


# What gcsfs and s3fs list for an object: its digest, known without reading it.
_LISTED_CHECKSUMS = ("md5Hash", "crc32c", "ETag", "etag")


def file_identity(path: str) -> dict[str, Any]:
    """A file's size and digest: the filesystem's checksum when it lists one, else sha256."""
    filesystem, local = fs.resolve(path)
    info = filesystem.info(local)
    for key in _LISTED_CHECKSUMS:
        if info.get(key):
            return {"size": info["size"], key: info[key]}
    return {"size": info["size"], "sha256": sha256_of(path)}


def sha256_of(path: str) -> str:
    digest = hashlib.sha256()
    with fs.open_read(path) as handle:
        while block := handle.read(1 << 22):
            digest.update(block)
    return digest.hexdigest()


_SPLIT_FILE = re.compile(
    r"^(?P<split>.+?)(-(?P<index>\d{5})-of-(?P<count>\d{5}))?\.(?P<ext>jsonl|parquet)$")


class MirrorStore:
    """`<root>/<dataset>[/<subset>]/<split>.{jsonl,parquet}` or `<split>-NNNNN-of-MMMMM.*`,
    on any filesystem. Parquet files are sharded by row groups, JSON Lines by line counts.

    What a split is read from is checked first, cheaply (a listing and the footers that
    sharding reads anyway). A dataset `p3data fetch` wrote is read as its snapshot record says
    or not at all: the same files, sizes and rows, and the catalog's split size. A hand-made
    mirror (no record) may hold any rows, fewer than the catalog's too (samples, tests), but a
    split is one file or one complete `-NNNNN-of-MMMMM` set, and files fetch wrote without
    their record (a fetch that died) are refused.
    """

    def __init__(self, root: str | os.PathLike, entry: DatasetEntry,
                 rows_per_shard: int = ROWS_PER_SHARD):
        self.root = os.fspath(root)
        self.folder = entry.key.folder(root)
        self.entry = entry
        self.rows_per_shard = rows_per_shard

    @cached_property
    def record(self) -> SnapshotRecord | None:
        """`p3data fetch`'s record of the dataset (None: hand-made). Read once: the planner
        asks per split, for the shards, the identity and the drift."""
        return read_snapshot(self.folder)

    @property
    def drift(self) -> tuple[str, ...]:
        """The accepted drifts `p3data fetch` recorded in the dataset's snapshot, so a build
        from a fetched mirror shows and records them as one from the Hub does (a hand-made
        mirror has none)."""
        return tuple(self.record.drift) if self.record else ()

    def served(self, split: str) -> list[str]:
        """The files `--data-dir` reads for `split`, sorted; none is an empty list."""
        return [fs.join(self.folder, name) for name in fs.files_in(self.folder)
                if (m := _SPLIT_FILE.match(name)) and m["split"] == split]

    def files(self, split: str) -> list[str]:
        found = self.served(split)
        if not found:
            raise self._missing(split)
        return found

    def list_shards(self, split: str) -> list[Shard]:
        record, paths = self.record, self.served(split)
        if record is not None:
            sizes = {fs.name_of(path): fs.size(path) for path in paths}
            self._refuse(split, record_problems(record, split, mirror=self.root, sizes=sizes))
        if not paths:
            raise self._missing(split)
        if record is None:
            self._refuse(split, _layout_problems(self.folder, split, paths))
        shards, rows, offset = [], {}, 0
        for path in paths:
            if path.endswith(".parquet"):
                metadata = ParquetRows(path, self._about(split)).metadata()
                if record is None and (dataset := fetched_dataset(metadata.metadata)):
                    self._refuse(split, [unrecorded(path, dataset, self.root)])
                runs, count = row_group_runs(metadata, self.rows_per_shard), metadata.num_rows
            else:
                count = RowFile(path, self._about(split)).count()
                runs = row_runs(count, self.rows_per_shard)
            shards += file_shards(path, runs, offset)
            rows[fs.name_of(path)] = count
            offset += count
        if record is not None:
            self._refuse(split, record_problems(
                record, split, mirror=self.root, sizes=sizes, rows=rows,
                catalog_rows=self.entry.splits.get(split)))
        return shards

    def read(self, split: str, shard: Shard) -> Iterator[dict[str, Any]]:
        assert shard.path is not None
        first, last = shard.start - shard.offset, shard.stop - shard.offset
        if shard.path.endswith(".parquet"):
            for table in ParquetRows(shard.path, self._about(split)).tables(first, last):
                yield from table.to_pylist()
            return
        for number, row in enumerate(RowFile(shard.path, self._about(split)).rows()):
            if number >= last:
                return
            if number >= first:
                yield row

    def identity(self, split: str) -> dict[str, Any]:
        """The files' sizes and digests; a sha256 computed here (local files) is also held
        against the snapshot record, at no further cost."""
        files = {fs.name_of(path): file_identity(path) for path in self.files(split)}
        recorded = self.record.splits.get(split) if self.record else None
        for name, found in files.items():
            expected = recorded.files.get(name) if recorded else None
            if expected and found.get("sha256", expected.sha256) != expected.sha256:
                self._refuse(split, [changed(fs.join(self.folder, name), self.entry.name,
                                             self.root)])
        return {"files": files, "drift": list(self.drift)}

    def _missing(self, split: str) -> DataNotFoundError:
        return DataNotFoundError(
            f"{self.entry.name}: no rows for split {split!r} in the mirror; expected "
            f"{fs.join(self.folder, split + '.parquet')} or "
            f"{fs.join(self.folder, split + '.jsonl')}")

    def _refuse(self, split: str, problems: list[str]) -> None:
        if problems:
            raise MirrorError(f"{self.entry.name}/{split}: " + "; ".join(problems))

    def _about(self, split: str) -> str:
        return f"{self.entry.name} {split}"


def _layout_problems(folder: str, split: str, paths: list[str]) -> list[str]:
    """A hand-made split read from more than one file or one complete set of files (a copy,
    a second format, a set missing a file) would be read twice or in part."""
    names = [fs.name_of(path) for path in paths]
    if names in ([f"{split}.jsonl"], [f"{split}.parquet"]):
        return []
    found = [m for name in names if (m := _SPLIT_FILE.match(name))]
    kinds = {(m["count"], m["ext"]) for m in found}
    if len(kinds) == 1 and (count := next(iter(kinds))[0]) and [
            int(m["index"]) for m in found] == list(range(int(count))):
        return []
    return [f"{folder}: {split} would be read from {', '.join(names)}; a split is one "
            f"{split}.jsonl or {split}.parquet, or every file of one {split}-NNNNN-of-MMMMM "
            "set: move the others out of the mirror"]


class ManualStore:
    """Files a user downloaded by hand (e.g. Story Cloze), mapped onto the original schema."""

    drift: tuple[str, ...] = ()

    def __init__(self, root: str | os.PathLike, entry: DatasetEntry,
                 rows_per_shard: int = ROWS_PER_SHARD):
        self.entry = entry
        self.rows_per_shard = rows_per_shard
        self.spec = entry.manual_download or {}
        self.folder = Path(entry.key.folder(root))

    def path(self, split: str) -> Path:
        files = self.spec.get("files") or {}
        if split not in files:
            raise DataNotFoundError(f"{self.entry.name}: no manual file is known for {split!r}")
        path = self.folder / files[split]
        if not path.is_file():
            raise DataNotFoundError(
                f"{self.entry.name} needs a manual download: get it from "
                f"{self.spec.get('url', 'its publisher')} and put {files[split]!r} at {path} "
                f"(folder set by {ENV_MANUAL_DIR}); {self.spec.get('instructions', '')}".strip()
            )
        return path

    def _file(self, split: str) -> RowFile:
        return RowFile(str(self.path(split)), f"{self.entry.name} {split}")

    def list_shards(self, split: str) -> list[Shard]:
        file = self._file(split)
        count = sum(1 for _ in file.csv_rows())
        return file_shards(file.path, row_runs(count, self.rows_per_shard))

    def read(self, split: str, shard: Shard) -> Iterator[dict[str, Any]]:
        columns = self.spec.get("columns") or {}
        file = self._file(split)
        for number, raw in enumerate(file.csv_rows()):
            if number >= shard.stop:
                return
            if number >= shard.start:
                row = {columns.get(k, k): v for k, v in raw.items()}
                yield _typed(row, self.entry.features, file, number)

    def identity(self, split: str) -> dict[str, Any]:
        path = str(self.path(split))
        return {"files": {fs.name_of(path): file_identity(path)}}


def _typed(row: dict[str, Any], features: dict[str, Any], file: RowFile,
           number: int) -> dict[str, Any]:
    """CSV gives strings: cast integer and class-label fields back to ints."""
    for name, kind in features.items():
        if name in row and (kind in ("int32", "int64") or isinstance(kind, dict)
                            and "class_label" in kind):
            try:
                row[name] = int(row[name])
            except (TypeError, ValueError) as err:  # None: the row has too few fields
                raise file.error(f"row {number}: field {name!r} is not an integer: "
                                 f"{row[name]!r}") from err
    return row


def mirror_dir(data_dir: str | os.PathLike | None = None) -> str | None:
    """The mirror to read rows from (a local path or any fsspec URL: file://, gs://,
    memory://...): `data_dir`, else `$P3DATA_DATA_DIR`; None when there is none (rows then
    come from manual downloads or the Hub)."""
    root = data_dir or os.environ.get(ENV_DATA_DIR)
    return os.fspath(root) if root else None


def manual_dir() -> Path:
    """The folder of files downloaded by hand: `$P3DATA_MANUAL_DIR`, else the default."""
    return Path(os.environ.get(ENV_MANUAL_DIR) or DEFAULT_MANUAL_DIR).expanduser()


def open_store(entry: DatasetEntry, data_dir: str | os.PathLike | None = None,
               rows_per_shard: int = ROWS_PER_SHARD, *, hub_root: str | None = None) -> RowStore:
    """The mirror when one is set (it is then authoritative; the bundled samples' rule families
    are made by their rule), else manual files, else the Hub (through `hub_root`, else
    `$P3DATA_HUB_ROOT`, else huggingface.co)."""
    root = mirror_dir(data_dir)
    if root is not None and is_samples(root) and rule_splits(entry.key) is not None:
        return RuleStore(entry, rows_per_shard)
    if root is not None:
        return MirrorStore(root, entry, rows_per_shard)
    if entry.manual_download:
        return ManualStore(manual_dir(), entry, rows_per_shard)
    return HubStore(entry, hub_root=hub_root, rows_per_shard=rows_per_shard)
