"""`snapshot.json`: the record `p3data fetch` writes last in each dataset folder of a mirror,
saying what was read from the Hub and what was written; `fetch --verify` checks a mirror
against it, and a build checks what it reads against it (`record_problems`) and reads the
declared drifts from it. The parquet files fetch writes also say so in their footers
(`FETCHED`), so files left by a fetch that died before its record are known for what they
are: neither a hand-made mirror's rows nor complete."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import msgspec

from p3data import fs
from p3data.dataset_key import DatasetKey
from p3data.datasets.catalog import DatasetEntry
from p3data.errors import P3DataError

SNAPSHOT = "snapshot.json"
SNAPSHOT_VERSION = 1  # of what snapshot.json holds; bump it when that changes
FETCHED = b"p3data.fetched"  # footer metadata of the files fetch writes: the dataset's name


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
    """The record in a dataset's mirror folder; None when there is none (nor a folder)."""
    path = fs.join(folder, SNAPSHOT)
    try:
        raw = msgspec.json.decode(fs.read_bytes(path))
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as err:
        raise SnapshotError(f"{path}: cannot read it ({err.strerror or err})") from None
    except msgspec.DecodeError as err:
        raise SnapshotError(f"{path}: not valid JSON ({err}); fetch the dataset again with "
                            "--force") from None
    version = raw.get("format_version") if isinstance(raw, dict) else None
    if version != SNAPSHOT_VERSION:
        raise SnapshotError(f"{path}: not a snapshot record of version {SNAPSHOT_VERSION} "
                            f"(format_version {version}); fetch the dataset again with --force")
    try:
        return msgspec.convert(raw, SnapshotRecord)
    except msgspec.ValidationError as err:
        raise SnapshotError(f"{path}: {err}") from None


def refetch(dataset: str, mirror: str) -> str:
    """The fix for a snapshot that is not what its record says."""
    return f"fetch it again: p3data fetch {dataset} --to {mirror}"


def fetched_dataset(footer: Mapping[bytes, bytes] | None) -> str | None:
    """The dataset a parquet file was fetched for, by its footer's metadata (None: a file
    `p3data fetch` did not write)."""
    name = (footer or {}).get(FETCHED)
    return name.decode() if name is not None else None


def changed(path: str, dataset: str, mirror: str) -> str:
    """The problem of a fetched file whose sha256 is not the recorded one."""
    return f"{path}: sha256 differs from the snapshot record (the file changed); " + refetch(
        dataset, mirror)


def unrecorded(path: str, dataset: str, mirror: str) -> str:
    """The problem of a fetched file whose dataset has no record."""
    record = fs.join(fs.parent_of(path), SNAPSHOT)
    return (f"{path}: written by p3data fetch, but {record} (written last) is missing: an "
            f"interrupted fetch? {refetch(dataset, mirror)}")


def record_problems(record: SnapshotRecord, split: str, *, mirror: str,
                    sizes: Mapping[str, int], rows: Mapping[str, int] | None = None,
                    catalog_rows: int | None = None) -> list[str]:
    """How the files a mirror serves for `split` differ from `record`, one line each with its
    fix: their names and `sizes` (by name) and, once their footers are read, their `rows`,
    then the record's own sum and the catalog's split size. Cheap: listings and footers."""
    folder = record.key.folder(mirror)
    path = fs.join(folder, SNAPSHOT)
    fix = refetch(record.key.name, mirror)
    recorded = record.splits.get(split)
    files = recorded.files if recorded else {}
    problems = [f"{fs.join(folder, name)}: not in {path}, yet --data-dir reads it too: move it "
                "out of the mirror" for name in sorted(set(sizes) - set(files))]
    for name, file in files.items():
        where = fs.join(folder, name)
        if name not in sizes:
            problems.append(f"{where}: missing ({path} records it); {fix}")
        elif sizes[name] != file.size:
            problems.append(f"{where}: {sizes[name]:,} bytes, the snapshot record says "
                            f"{file.size:,}; {fix}")
        elif rows is not None and name in rows and rows[name] != file.rows:
            problems.append(f"{where}: {rows[name]:,} rows in its footer, the snapshot record "
                            f"says {file.rows:,}; {fix}")
    if recorded is None:
        problems.append(f"{path}: records no split {split!r}; {fix}")
    elif (total := sum(file.rows for file in files.values())) != recorded.rows:
        problems.append(f"{path}: {split} has {total:,} rows by its files' records but says "
                        f"{recorded.rows:,} (the record was edited); {fix}")
    elif not problems and catalog_rows is not None and recorded.rows != catalog_rows:
        problems.append(f"{path}: {split} has {recorded.rows:,} rows, the catalog "
                        f"{catalog_rows:,} (fetched for another catalog?); {fix}")
    return problems
