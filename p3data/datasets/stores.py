"""Where a dataset's rows come from: a local mirror, a manual-download folder, or the Hub.

A store lists a split's shards (row ranges, possibly across files) and reads one shard at a
time, numbering rows by their position in the whole split, so a split can be processed by
many workers and every row keeps the same index however it is sharded. Nothing is read until
a shard is listed or read; a source that cannot be found, loaded or decoded raises a
`SourceError` naming the dataset split, the file and the place in it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from p3data.datasets.catalog import DatasetEntry, HubLocation
from p3data.datasets.rows import DataNotFoundError, RowFile, SourceError, one_line

ENV_DATA_DIR = "P3DATA_DATA_DIR"
ENV_MANUAL_DIR = "P3DATA_MANUAL_DIR"
DEFAULT_MANUAL_DIR = Path("~/.cache/p3data/manual")
ROWS_PER_SHARD = 50_000


@dataclass(frozen=True)
class Shard:
    """Rows [start, stop) of a split; `path` when they come from one file of a mirror."""

    name: str
    start: int
    stop: int
    path: str | None = None
    offset: int = 0  # row number of the file's first row within the split


class RowStore(Protocol):
    def list_shards(self, split: str) -> list[Shard]: ...

    def read(self, split: str, shard: Shard) -> Iterator[dict[str, Any]]: ...


def _row_ranges(prefix: str, total: int, rows_per_shard: int, **extra: Any) -> list[Shard]:
    offset = extra.get("offset", 0)
    return [
        Shard(f"{prefix}[{start}:{min(start + rows_per_shard, total)}]",
              offset + start, offset + min(start + rows_per_shard, total), **extra)
        for start in range(0, max(total, 1), rows_per_shard)
    ]


_SPLIT_FILE = re.compile(r"^(?P<split>.+?)(-\d{5}-of-\d{5})?\.(?P<ext>jsonl|parquet)$")


class MirrorStore:
    """`<root>/<dataset>[/<subset>]/<split>.{jsonl,parquet}` or `<split>-NNNNN-of-MMMMM.*`."""

    def __init__(self, root: Path, entry: DatasetEntry, rows_per_shard: int = ROWS_PER_SHARD):
        self.folder = Path(entry.key.folder(root))
        self.entry = entry
        self.rows_per_shard = rows_per_shard

    def files(self, split: str) -> list[Path]:
        found = sorted(
            path for path in self.folder.glob(f"{split}*")
            if (m := _SPLIT_FILE.match(path.name)) and m["split"] == split
        )
        if not found:
            raise DataNotFoundError(
                f"{self.entry.name}: no rows for split {split!r} in the mirror; expected "
                f"{self.folder / (split + '.parquet')} or {self.folder / (split + '.jsonl')}"
            )
        return found

    def list_shards(self, split: str) -> list[Shard]:
        shards, offset = [], 0
        for path in self.files(split):
            count = RowFile(path, f"{self.entry.name} {split}").count()
            shards += _row_ranges(path.name, count, self.rows_per_shard,
                                  path=str(path), offset=offset)
            offset += count
        return shards

    def read(self, split: str, shard: Shard) -> Iterator[dict[str, Any]]:
        assert shard.path is not None
        first, last = shard.start - shard.offset, shard.stop - shard.offset
        rows = RowFile(Path(shard.path), f"{self.entry.name} {split}").rows()
        for number, row in enumerate(rows):
            if number >= last:
                return
            if number >= first:
                yield row


class ManualStore:
    """Files a user downloaded by hand (e.g. Story Cloze), mapped onto the original schema."""

    def __init__(self, root: Path, entry: DatasetEntry, rows_per_shard: int = ROWS_PER_SHARD):
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
        return RowFile(self.path(split), f"{self.entry.name} {split}")

    def list_shards(self, split: str) -> list[Shard]:
        file = self._file(split)
        count = sum(1 for _ in file.csv_rows())
        return _row_ranges(file.path.name, count, self.rows_per_shard, path=str(file.path))

    def read(self, split: str, shard: Shard) -> Iterator[dict[str, Any]]:
        columns = self.spec.get("columns") or {}
        file = self._file(split)
        for number, raw in enumerate(file.csv_rows()):
            if number >= shard.stop:
                return
            if number >= shard.start:
                row = {columns.get(k, k): v for k, v in raw.items()}
                yield _typed(row, self.entry.features, file, number)


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


class HubStore:
    """`datasets.load_dataset` of the catalog's Hub location (honours HF offline settings).

    `revision` may be a commit or a branch such as `refs/convert/parquet`, where the Hub keeps
    parquet copies of datasets whose main branch still holds only a loading script.
    """

    def __init__(self, entry: DatasetEntry, rows_per_shard: int = ROWS_PER_SHARD):
        if not entry.hub.repo:
            raise DataNotFoundError(
                f"{entry.name}: no Hub location is known ({entry.hub.notes or 'see the catalog'});"
                f" serve it from a local mirror with {ENV_DATA_DIR}"
            )
        self.entry = entry
        self.rows_per_shard = rows_per_shard
        self._loaded: dict[str, Any] = {}

    def _split(self, split: str):
        if split not in self._loaded:
            import datasets

            hub = self.entry.hub
            try:
                data = datasets.load_dataset(hub.repo, hub.config, split=split,
                                             revision=hub.revision)
            # what `datasets` raises for missing, unreachable or unloadable repos, configs and
            # splits (RuntimeError: the repo only has a loading script)
            except (datasets.exceptions.DatasetsError, OSError, ValueError, RuntimeError) as err:
                kind = DataNotFoundError if isinstance(err, FileNotFoundError) else SourceError
                raise kind(f"{self.entry.name} {split}: cannot load {_describe(hub)} from the "
                           f"Hub: {one_line(err)}") from err
            if hub.columns:
                data = data.rename_columns(hub.columns)
            # Modern copies sometimes add columns; keep the schema the templates were written for.
            data = data.select_columns([c for c in data.column_names if c in self.entry.features])
            self._loaded[split] = data
        return self._loaded[split]

    def list_shards(self, split: str) -> list[Shard]:
        return _row_ranges(split, self.entry.splits[split], self.rows_per_shard)

    def read(self, split: str, shard: Shard) -> Iterator[dict[str, Any]]:
        data = self._split(split)
        yield from data.select(range(shard.start, min(shard.stop, len(data))))


def _describe(hub: HubLocation) -> str:
    config = f", config {hub.config!r}" if hub.config else ""
    revision = f", revision {hub.revision}" if hub.revision else ""
    return f"{hub.repo!r}{config}{revision}"


def mirror_dir(data_dir: str | os.PathLike | None = None) -> Path | None:
    """The local mirror to read rows from: `data_dir`, else `$P3DATA_DATA_DIR`; None when there
    is none (rows then come from manual downloads or the Hub)."""
    root = data_dir or os.environ.get(ENV_DATA_DIR)
    return Path(root) if root else None


def open_store(entry: DatasetEntry, data_dir: str | os.PathLike | None = None,
               rows_per_shard: int = ROWS_PER_SHARD) -> RowStore:
    """The mirror when one is set (it is then authoritative), else manual files, else the Hub."""
    root = mirror_dir(data_dir)
    if root is not None:
        return MirrorStore(root, entry, rows_per_shard)
    if entry.manual_download:
        manual = os.environ.get(ENV_MANUAL_DIR) or DEFAULT_MANUAL_DIR
        return ManualStore(Path(manual).expanduser(), entry, rows_per_shard)
    return HubStore(entry, rows_per_shard)
