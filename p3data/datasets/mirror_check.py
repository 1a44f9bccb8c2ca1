"""`p3data fetch --verify`: a mirror checked against the snapshot records fetch wrote (sizes,
sha256, footers' rows, the records' own sums), and files fetch wrote whose record is missing
(a fetch that died before writing it) found. What a build checks on every read is the cheap
part of this, `snapshot.record_problems`."""

from __future__ import annotations

import contextlib
import dataclasses
from dataclasses import dataclass

from p3data import fs
from p3data.datasets.catalog import DatasetEntry
from p3data.datasets.errors import SourceError
from p3data.datasets.parquet import ParquetRows
from p3data.datasets.snapshot import (
    SNAPSHOT,
    SnapshotError,
    SnapshotRecord,
    changed,
    fetched_dataset,
    read_snapshot,
    record_problems,
    unrecorded,
)
from p3data.datasets.stores import MirrorStore, sha256_of


def verify_snapshot(mirror: str, record: SnapshotRecord) -> list[str]:
    """Problems of one dataset's snapshot in `mirror`, one line each (none: the files the
    mirror serves for it are those recorded, intact: sizes, sha256 and footers' rows)."""
    store = MirrorStore(mirror, DatasetEntry(
        record.dataset, record.subset, {split: s.rows for split, s in record.splits.items()},
        record.features))
    problems = []
    for split, recorded in record.splits.items():
        sizes = {fs.name_of(path): fs.size(path) for path in store.served(split)}
        rows, unread = {}, []
        for name, file in recorded.files.items():
            path = fs.join(store.folder, name)
            if sizes.get(name) != file.size:
                continue  # `record_problems` says so
            if sha256_of(path) != file.sha256:
                unread.append(changed(path, record.key.name, mirror))
                continue
            try:
                rows[name] = ParquetRows(path, f"{record.key} {split}").metadata().num_rows
            except SourceError as err:
                unread.append(str(err))
        problems += record_problems(record, split, mirror=mirror, sizes=sizes, rows=rows)
        problems += unread
    return problems


@dataclass
class MirrorCheck:
    """What `verify_mirror` found: the snapshots checked and one line per problem."""

    records: list[SnapshotRecord] = dataclasses.field(default_factory=list)
    problems: list[str] = dataclasses.field(default_factory=list)

    @property
    def files(self) -> int:
        return sum(len(split.files) for record in self.records
                   for split in record.splits.values())


def verify_mirror(mirror: str) -> MirrorCheck:
    """Check every snapshot in `mirror` against its record, and find files fetch wrote whose
    record is missing (a fetch that died)."""
    if not fs.is_dir(mirror):
        if fs.exists(mirror):
            raise SnapshotError(f"{mirror}: a file, not a mirror folder; name the folder "
                                "p3data fetch --to filled")
        raise SnapshotError(f"{mirror}: no such mirror folder; fill one with p3data fetch "
                            f"--to {mirror}")
    check = MirrorCheck()
    every = fs.walk_files(mirror)
    paths = [path for path in every if fs.name_of(path) == SNAPSHOT]
    if not paths:
        check.problems.append(f"{mirror}: no {SNAPSHOT} in this mirror; fill it with p3data "
                              f"fetch --to {mirror}")
    for path in paths:
        try:
            record = read_snapshot(fs.parent_of(path))
        except SnapshotError as err:
            check.problems.append(str(err))
            continue
        assert record is not None  # listed just now
        folder = record.key.folder(mirror)
        if fs.canonical(folder) != fs.canonical(fs.parent_of(path)):
            check.problems.append(f"{path}: records {record.key}, whose folder is {folder}")
            continue
        check.records.append(record)
        check.problems += verify_snapshot(mirror, record)
    recorded = {fs.parent_of(path) for path in paths}
    for path in every:
        if (path.endswith(".parquet") and fs.parent_of(path) not in recorded
                and not fs.name_of(path).startswith(fs.TEMP_PREFIX)):
            with contextlib.suppress(SourceError):  # a hand-made file: not a snapshot's
                if dataset := fetched_dataset(ParquetRows(path).metadata().metadata):
                    check.problems.append(unrecorded(path, dataset, mirror))
    return check
