"""`snapshot.json`: the record `p3data fetch` writes last in each dataset folder of a mirror,
saying what was read from the Hub and what was written; `fetch --verify` checks a mirror
against it, and a build reads the declared drifts from it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import msgspec

from p3data import fs
from p3data.dataset_key import DatasetKey
from p3data.datasets.catalog import DatasetEntry
from p3data.errors import P3DataError

SNAPSHOT = "snapshot.json"
SNAPSHOT_VERSION = 1  # of what snapshot.json holds; bump it when that changes


class SnapshotError(P3DataError):
    """A snapshot record cannot be read, or a mirror cannot be written or checked."""


@dataclass(frozen=True)
class FileRecord:
    size: int
    sha256: str
    rows: int


@dataclass(frozen=True)
class SplitSnapshot:
    rows: int
    source_files: dict[str, int]  # path in the repository -> size
    files: dict[str, FileRecord]  # name in the dataset's mirror folder -> what was written


@dataclass(frozen=True)
class SnapshotRecord:
    dataset: str
    subset: str | None
    repo: str
    revision: str  # as the catalog asks
    commit: str  # what was read: the revision's commit on the Hub; under a Hub root, its name
    commit_resolved: bool  # False: `commit` names a folder of a Hub root, not a checked SHA
    source: str  # the Hub (HUB_URL) or the Hub root read
    files: dict[str, list[str]]  # split -> globs in the repository, as the catalog declares
    columns: dict[str, str]  # declared renames, Hub column -> 2021 name
    labels: dict[str, dict[str, str]]  # declared label maps, column -> {Hub name: 2021 name}
    features: dict[str, Any]  # the checked schema: the catalog's 2021 features and class names
    drift: list[str]  # declared, accepted differences from T0's 2021 rows
    splits: dict[str, SplitSnapshot]
    p3data_version: str
    fetched_at: str  # UTC, ISO 8601
    format_version: int = SNAPSHOT_VERSION

    @property
    def key(self) -> DatasetKey:
        return DatasetKey(self.dataset, self.subset)

    @property
    def rows(self) -> int:
        return sum(split.rows for split in self.splits.values())

    @property
    def size(self) -> int:
        """Bytes of the written files."""
        return sum(f.size for split in self.splits.values() for f in split.files.values())

    def asks_for(self, entry: DatasetEntry) -> bool:
        """Whether this is a snapshot of what `entry` asks for: the same files, adapted the
        same way, to the same schema and sizes."""
        hub = entry.hub
        return (self.key == entry.key and self.repo == hub.repo
                and self.revision == hub.revision and self.columns == hub.columns
                and self.labels == hub.labels and self.features == entry.features
                and self.files == {split: list(globs) for split, globs in hub.files.items()}
                and {split: s.rows for split, s in self.splits.items()} == entry.splits)

    def to_json(self) -> bytes:
        return msgspec.json.format(msgspec.json.encode(self), indent=2) + b"\n"


def read_snapshot(folder: str) -> SnapshotRecord | None:
    """The record in a dataset's mirror folder; None when there is none."""
    path = fs.join(folder, SNAPSHOT)
    try:
        raw = msgspec.json.decode(fs.read_bytes(path))
    except FileNotFoundError:
        return None
    except msgspec.DecodeError as err:
        raise SnapshotError(f"{path}: not valid JSON ({err})") from None
    version = raw.get("format_version") if isinstance(raw, dict) else None
    if version != SNAPSHOT_VERSION:
        raise SnapshotError(f"{path}: not a snapshot record of version {SNAPSHOT_VERSION} "
                            f"(format_version {version}); fetch the dataset again with --force")
    try:
        return msgspec.convert(raw, SnapshotRecord)
    except msgspec.ValidationError as err:
        raise SnapshotError(f"{path}: {err}") from None
