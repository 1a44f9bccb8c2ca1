"""Snapshots of Hub datasets in a mirror, so that a build reads verified, reproducible rows.

A snapshot is a dataset's catalog splits read through `HubStore` (columns renamed, class ids
remapped by name, every split checked against the catalog before anything is written) and
written as parquet where `MirrorStore` (`--data-dir`) reads them, on any filesystem:
`<mirror>/<dataset>[/<subset>]/<split>.parquet`, or `<split>-NNNNN-of-MMMMM.parquet` for a big
split, in row groups of ROW_GROUP_ROWS rows so the split shards without rescanning. Beside the
files, written last, `snapshot.json` records what was read and written: the repository, the
revision asked and the commit read, the source files, each written file's size, sha256 and
rows, the checked schema and the declared drifts. A snapshot whose files match their record is
skipped by a rerun and passes `mirror_check.verify_snapshot`.

Every value is written as the Hub's file holds it or not at all: columns are cast to the
catalog's types safely (a 0.7 is never cut to 0). A fetch replaces only files p3data wrote
(listed in the dataset's record, or marked in their footers, `snapshot.FETCHED`): rows someone
else put in a dataset's folder fail that dataset instead. Its caller holds the mirror's lock
(`p3data fetch` does), and only that caller sweeps temporaries.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from itertools import islice
from typing import TYPE_CHECKING, Any

from p3data import __version__, fs
from p3data.datasets.catalog import DatasetEntry
from p3data.datasets.errors import DataNotFoundError, SourceError, one_line
from p3data.datasets.hub import HubStore
from p3data.datasets.mirror_check import verify_snapshot
from p3data.datasets.parquet import ParquetRows, with_retries
from p3data.datasets.schema import catalog_arrow_schema
from p3data.datasets.shards import Shard
from p3data.datasets.snapshot import (
    FETCHED,
    SNAPSHOT,
    FileRecord,
    SnapshotError,
    SnapshotRecord,
    SplitSnapshot,
    fetched_dataset,
    read_snapshot,
)
from p3data.datasets.stores import MirrorStore

if TYPE_CHECKING:
    import pyarrow as pa

HUB_URL = "https://huggingface.co"
# A fifth of a default source shard (stores.ROWS_PER_SHARD): shards of whole row groups stay
# close to the size a build asks for.
ROW_GROUP_ROWS = 10_000
FILE_BYTES = 512 << 20  # a split is cut into files of about this much source parquet
_COMMIT_SHA = re.compile(r"[0-9a-f]{40}")

RowsWritten = Callable[[int, int], None]  # (rows, bytes) just written


@dataclass(frozen=True)
class Snapshot:
    """A dataset's snapshot in a mirror; `fetched` is False when the mirror already held it,
    intact."""

    record: SnapshotRecord
    fetched: bool


def snapshot(entry: DatasetEntry, mirror: str, *, hub_root: str | None = None,
             force: bool = False, row_group_rows: int = ROW_GROUP_ROWS,
             file_bytes: int = FILE_BYTES, on_rows: RowsWritten | None = None) -> Snapshot:
    """Snapshot `entry` from the Hub (or `hub_root`) into `mirror`, unless the mirror already
    holds an intact snapshot of what the catalog asks for (`force`: fetch it anyway).
    `on_rows` hears of every row group written. The caller holds the mirror's lock."""
    folder = entry.key.folder(mirror)
    if not force and (kept := _intact_snapshot(entry, mirror)):
        return Snapshot(kept, fetched=False)
    store = HubStore(entry, hub_root=hub_root)
    commit, resolved = resolve_commit(entry, store.hub_root)
    if store.hub_root is None:  # read the commit resolved, even if the branch moves meanwhile
        pinned = dataclasses.replace(entry.hub, revision=commit)
        store = HubStore(dataclasses.replace(entry, hub=pinned))
    shards = {split: store.list_shards(split) for split in entry.splits}  # checks every split
    _refuse_foreign_rows(entry, mirror)
    fs.delete([fs.join(folder, SNAPSHOT)])
    writer = _SplitWriter(store, mirror, row_group_rows=row_group_rows, file_bytes=file_bytes,
                          on_rows=on_rows or (lambda rows, size: None))
    splits = {split: writer.write(split, split_shards) for split, split_shards in shards.items()}
    hub = entry.hub
    assert hub.repo is not None and hub.revision is not None  # HubStore requires them
    record = SnapshotRecord(
        dataset=entry.dataset, subset=entry.subset, repo=hub.repo, revision=hub.revision,
        commit=commit, commit_resolved=resolved, source=store.hub_root or HUB_URL,
        files={split: list(globs) for split, globs in hub.files.items()},
        columns=dict(hub.columns), labels=dict(hub.labels), features=entry.features,
        drift=list(hub.drift), splits=splits, p3data_version=__version__,
        fetched_at=datetime.now(UTC).isoformat(timespec="seconds"))
    path = fs.join(folder, SNAPSHOT)
    with _writing(path):
        fs.write_bytes(path, record.to_json())
    return Snapshot(record, fetched=True)


def _intact_snapshot(entry: DatasetEntry, mirror: str) -> SnapshotRecord | None:
    """The mirror's snapshot of `entry` if it is of what the catalog asks for now and its
    files match their record (else the dataset is fetched again, its record replaced)."""
    try:
        record = read_snapshot(entry.key.folder(mirror))
    except SnapshotError:
        return None
    if record is None or not record.asks_for(entry) or verify_snapshot(mirror, record):
        return None
    return record


def _refuse_foreign_rows(entry: DatasetEntry, mirror: str) -> None:
    """Fail the dataset if its folder is a file, or serves rows p3data did not write: a fetch
    would replace or delete them (or leave them served beside its own)."""
    store = MirrorStore(mirror, entry)
    if fs.exists(store.folder) and not fs.is_dir(store.folder):
        raise SnapshotError(f"{entry.name}: {store.folder} is a file, where the dataset's "
                            "folder goes: move it out of the mirror, then fetch again")
    try:
        record = store.record
    except SnapshotError:
        record = None
    splits = record.splits.values() if record else ()
    recorded = {name for split in splits for name in split.files}
    for split in entry.splits:
        for path in store.served(split):
            if fs.name_of(path) not in recorded and not _written_by_fetch(path):
                raise SnapshotError(
                    f"{entry.name}/{split}: {path}: rows p3data did not fetch, which --data-dir "
                    "would read with the fetched ones: move it out of the mirror, then fetch "
                    "again")


def _written_by_fetch(path: str) -> bool:
    if not path.endswith(".parquet"):
        return False
    try:
        return fetched_dataset(ParquetRows(path).metadata().metadata) is not None
    except SourceError:  # unreadable: not a file fetch wrote (it writes whole files only)
        return False


def resolve_commit(entry: DatasetEntry, hub_root: str | None) -> tuple[str, bool]:
    """(the commit the entry's revision names, whether it is known to be one). The Hub says
    which commit a branch or ref is at; under a Hub root a revision is only a folder name,
    taken as a commit when it is spelt as a full SHA."""
    repo, revision = entry.hub.repo, entry.hub.revision
    assert repo is not None and revision is not None
    if hub_root:
        return revision, bool(_COMMIT_SHA.fullmatch(revision))
    from huggingface_hub import HfApi
    from huggingface_hub.errors import (
        GatedRepoError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    where = f"{entry.name}: {repo}@{revision}"
    try:
        info = with_retries(lambda: HfApi().dataset_info(repo, revision=revision), about=where)
    except GatedRepoError as err:
        raise SourceError(f"{where}: not allowed ({one_line(err)}); for a gated dataset, "
                          "accept its conditions on the Hub and log in") from err
    except (RepositoryNotFoundError, RevisionNotFoundError) as err:
        raise DataNotFoundError(f"{where}: {one_line(err)}") from err
    return info.sha, True


class _SplitWriter:
    """Writes the splits of one dataset read from `store` into its folder of `mirror`."""

    def __init__(self, store: HubStore, mirror: str, *, row_group_rows: int, file_bytes: int,
                 on_rows: RowsWritten):
        self.store, self.entry = store, store.entry
        self.mirror = MirrorStore(mirror, store.entry)
        self.schema = catalog_arrow_schema(store.entry.features).with_metadata(
            {FETCHED: store.entry.name.encode()})
        self.row_group_rows, self.file_bytes, self.on_rows = row_group_rows, file_bytes, on_rows

    def write(self, split: str, shards: list[Shard]) -> SplitSnapshot:
        """The split's rows in files of whole row groups; files of an earlier snapshot that
        these do not replace are deleted, or the mirror would serve them too."""
        rows = self.entry.splits[split]
        source_files: dict[str, int] = self.store.identity(split)["files"]
        count = max(1, -(-sum(source_files.values()) // self.file_bytes))
        per_file = -(-max(rows, 1) // count)
        per_file = -(-per_file // self.row_group_rows) * self.row_group_rows
        count = max(1, -(-rows // per_file))
        groups = _row_groups(self._tables(split, shards), self.row_group_rows)
        files = {}
        for number in range(count):
            name = (f"{split}.parquet" if count == 1
                    else f"{split}-{number:05d}-of-{count:05d}.parquet")
            files[name] = self._write_file(fs.join(self.mirror.folder, name),
                                           islice(groups, per_file // self.row_group_rows))
        written = sum(record.rows for record in files.values())
        if written != rows:
            raise SourceError(f"{self.entry.name}/{split}: read {written:,} rows where the "
                              f"files' footers say {rows:,} (did they change while read?)")
        fs.delete([path for path in self.mirror.served(split)
                   if fs.name_of(path) not in files])
        return SplitSnapshot(rows, source_files, files)

    def _tables(self, split: str, shards: list[Shard]) -> Iterator[pa.Table]:
        """The split's rows in the mirror's schema: every column cast safely, so a value the
        catalog's type cannot hold exactly fails the split (never 0.7 cut to 0)."""
        import pyarrow as pa

        start = 0
        for shard in shards:
            for table in self.store.tables(split, shard):
                columns = []
                for field in self.schema:
                    try:
                        columns.append(table[field.name].cast(field.type, safe=True))
                    except (KeyError, pa.ArrowException) as err:
                        raise SourceError(
                            f"{self.entry.name}/{split}: rows {start:,} to "
                            f"{start + table.num_rows - 1:,} do not fit the catalog's schema: "
                            f"{field.name}: {one_line(err)}") from err
                yield pa.Table.from_arrays(columns, schema=self.schema)
                start += table.num_rows

    def _write_file(self, path: str, groups: Iterable[pa.Table]) -> FileRecord:
        """One file of row groups."""
        import pyarrow.parquet as pq

        written = reported = 0
        with _writing(path), fs.atomic_writer(path) as handle:
            sink = _Digesting(handle)
            with pq.ParquetWriter(sink, self.schema) as writer:
                for group in groups:
                    writer.write_table(group, row_group_size=self.row_group_rows)
                    written += group.num_rows
                    self.on_rows(group.num_rows, sink.size - reported)
                    reported = sink.size
        self.on_rows(0, sink.size - reported)  # the footer
        return FileRecord(sink.size, sink.sha256.hexdigest(), written)


def _row_groups(tables: Iterable[pa.Table], rows: int) -> Iterator[pa.Table]:
    """The tables' rows again, in tables of `rows` rows (the last one fewer)."""
    import pyarrow as pa

    pending: list[pa.Table] = []
    held = 0
    for table in tables:
        pending.append(table)
        held += table.num_rows
        while held >= rows:
            whole = pa.concat_tables(pending)
            yield whole.slice(0, rows)
            pending, held = [whole.slice(rows)], held - rows
    if held:
        yield pa.concat_tables(pending)


class _Digesting:
    """A write-only file that hashes and counts what goes through it to `handle`."""

    def __init__(self, handle: Any):
        self.handle = handle
        self.sha256 = hashlib.sha256()
        self.size = 0
        self.closed = False

    def write(self, data: bytes) -> int:
        self.sha256.update(data)
        self.size += len(data)
        return self.handle.write(data)

    def tell(self) -> int:
        return self.size

    def writable(self) -> bool:
        return True

    def flush(self) -> None:
        self.handle.flush()

    def close(self) -> None:  # the handle is the atomic writer's to close
        self.closed = True


@contextlib.contextmanager
def _writing(path: str) -> Iterator[None]:
    """Failing to write `path` in the mirror is one line naming it."""
    try:
        yield
    except OSError as err:
        raise SnapshotError(f"{path}: cannot write it ({err.strerror or one_line(err)})") from err
