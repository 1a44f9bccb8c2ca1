"""Rows from the parquet files the catalog pins on the Hugging Face Hub, read directly.

Each catalog entry names a repository, a revision and, per split, globs of parquet files in it
(`hub:` in catalog.yaml). Those files are read with pyarrow through fsspec, by row groups, so
no loading script ever runs and no worker downloads a whole split. Where the files live:

- `hf://datasets/<owner>/<name>@<revision>/<path>`: the Hub itself (huggingface_hub's
  HfFileSystem; the revision is URL-quoted, so `refs/convert/parquet` and any branch work);
- `<root>/<owner>/<name>/<revision>/<path>` under a Hub root (`P3DATA_HUB_ROOT`, a local
  folder or any fsspec URL), the revision as literal folders (`refs/convert/parquet` is three
  nested folders): an organisation's internal copy of the Hub, and the tests' offline Hub.

Columns are renamed and class ids remapped by name as the catalog declares, columns the
catalog does not know are never read, and the files are checked against the catalog when a
split is opened (`drift.py`).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from p3data import fs
from p3data.datasets import drift
from p3data.datasets.catalog import DatasetEntry
from p3data.datasets.errors import DataNotFoundError, SourceError, one_line
from p3data.datasets.parquet import ParquetRows, row_group_runs, with_retries
from p3data.datasets.shards import ROWS_PER_SHARD, Shard, file_shards

if TYPE_CHECKING:
    import pyarrow as pa

ENV_HUB_ROOT = "P3DATA_HUB_ROOT"


def hub_path(repo: str, revision: str, path: str = "", hub_root: str | None = None) -> str:
    """Where `path` of `repo` at `revision` is: under `hub_root` if given, else on the Hub."""
    if hub_root:
        return fs.join(fs.without_trailing_slash(hub_root), repo, revision, path)
    return f"hf://datasets/{repo}@{quote(revision, safe='')}/{path}"


class HubStore:
    """The catalog's pinned parquet files of one dataset (see the module's docstring)."""

    def __init__(self, entry: DatasetEntry, *, hub_root: str | None = None,
                 rows_per_shard: int = ROWS_PER_SHARD):
        if not entry.hub.repo:
            raise DataNotFoundError(
                f"{entry.name}: no Hub location is known ({entry.hub.notes or 'see the catalog'});"
                " serve it from a mirror", setting="rows")
        self.entry = entry
        self.hub_root = hub_root or os.environ.get(ENV_HUB_ROOT) or None
        self.rows_per_shard = rows_per_shard
        self._hub_names = {new: old for old, new in entry.hub.columns.items()}  # 2021 -> hub
        self._listed: dict[str, dict[str, int]] = {}  # split -> {file: size}, once per split

    @property
    def drift(self) -> tuple[str, ...]:
        return self.entry.hub.drift

    @property
    def location(self) -> str:
        """The repository at its revision, as messages name it."""
        return f"{self.entry.hub.repo}@{self.entry.hub.revision}"

    def files(self, split: str) -> dict[str, int]:
        """The split's files, sorted, with their sizes; partial exports refused."""
        if split not in self._listed:
            found: dict[str, int] = {}
            for pattern in self._patterns(split):
                found.update(self._glob(split, pattern))
            if not found:
                raise self._nothing_found(split)
            drift.refuse_partial(self.entry, split, [self.in_repo(path) for path in found])
            self._listed[split] = dict(sorted(found.items()))
        return self._listed[split]

    def list_shards(self, split: str) -> list[Shard]:
        """Shards of whole row groups, after checking every footer against the catalog."""
        footers = [ParquetRows(path, self._about(split)).metadata() for path in self.files(split)]
        drift.check(self.entry, split, schemas=[m.schema.to_arrow_schema() for m in footers],
                    rows=sum(m.num_rows for m in footers),
                    files=", ".join(self._patterns(split)))
        shards, offset = [], 0
        for path, metadata in zip(self.files(split), footers, strict=True):
            shards += file_shards(path, row_group_runs(metadata, self.rows_per_shard), offset)
            offset += metadata.num_rows
        return shards

    def read(self, split: str, shard: Shard) -> Iterator[dict[str, Any]]:
        for table in self.tables(split, shard):
            yield from table.to_pylist()

    def tables(self, split: str, shard: Shard) -> Iterator[pa.Table]:
        """The shard's rows as Arrow tables (what `read` yields as dicts), in the Hub's column
        types but for integers, at the catalog's widths (`drift.fit_integers`): a fetch writes
        them without a round trip through Python values."""
        assert shard.path is not None
        columns = [self._hub_names.get(name, name) for name in self.entry.features]
        rows = ParquetRows(shard.path, self._about(split))
        first = shard.start - shard.offset
        for table in rows.tables(first, shard.stop - shard.offset, columns=columns):
            yield self._as_2021(drift.fit_integers(self.entry, table, rows, first_row=first))
            first += table.num_rows

    def identity(self, split: str) -> dict[str, Any]:
        hub = self.entry.hub
        return {"repo": hub.repo, "revision": hub.revision, "drift": list(hub.drift),
                "files": {self.in_repo(path): size for path, size in self.files(split).items()}}

    def in_repo(self, path: str) -> str:
        """A listed file's path inside the repository."""
        base = fs.canonical(self._url("")).rstrip("/") + "/"
        return path.removeprefix(base)

    def _as_2021(self, table: pa.Table) -> pa.Table:
        """Class ids remapped by name onto the catalog's (negative ids, e.g. hidden test
        labels, kept), then columns renamed."""
        import pyarrow as pa
        import pyarrow.compute as pc

        hub = self.entry.hub
        for column, label_map in hub.labels.items():
            name = self._hub_names.get(column, column)
            names = drift.class_names(table.schema, name)
            if names is None or name not in table.column_names:
                continue  # never so in a split that was opened: `drift.check` requires both
            catalog = self.entry.features[column]["class_label"]
            lookup = pa.array([catalog.index(label_map[hub_name]) for hub_name in names],
                              pa.int64())
            ids = table[name]
            mapped = pc.if_else(pc.less(ids, 0), ids,
                                pc.take(lookup, pc.max_element_wise(ids, 0)))
            table = table.set_column(table.column_names.index(name), name, mapped)
        return table.rename_columns([hub.columns.get(n, n) for n in table.column_names])

    def _patterns(self, split: str) -> tuple[str, ...]:
        patterns = self.entry.hub.files.get(split)
        if not patterns:
            raise DataNotFoundError(f"{self.entry.name}/{split}: the catalog names no Hub files "
                                    f"for this split in {self.location}")
        return patterns

    def _url(self, path: str) -> str:
        hub = self.entry.hub
        assert hub.repo is not None and hub.revision is not None
        return hub_path(hub.repo, hub.revision, path, self.hub_root)

    def _glob(self, split: str, pattern: str) -> dict[str, int]:
        where = f"{self.entry.name}/{split}: {self.location} {pattern}"
        try:
            return with_retries(lambda: {path: fs.size(path) for path in fs.glob(self._url(
                pattern)) if path.endswith(".parquet")}, about=where)
        except FileNotFoundError as err:  # the Hub: no such repository or revision
            raise DataNotFoundError(f"{where}: {one_line(err)}") from err
        except PermissionError as err:
            raise SourceError(f"{where}: not allowed ({one_line(err)}); for a gated dataset, "
                              "accept its conditions on the Hub and log in") from err

    def _nothing_found(self, split: str) -> SourceError:
        where = f"{self.entry.name}/{split}: {self.entry.hub.repo}"
        patterns = ", ".join(self._patterns(split))
        revision = self.entry.hub.revision
        folder = self._url("").rstrip("/")
        if self.hub_root and not fs.is_dir(folder):
            return DataNotFoundError(f"{where}: no revision {revision} under the Hub root "
                                     f"({folder} does not exist)")
        if partial := self._partial_export(split):
            return DataNotFoundError(
                f"{where}: only a partial export of this split at {revision} ({partial}: a "
                "partial-* folder holds the first rows of a split too big to convert); pin "
                "the complete files, or build a mirror from the dataset's source")
        if with_retries(lambda: fs.glob(self._url("*.py")), about=where):
            return DataNotFoundError(
                f"{where}: the repository holds a loading script only at {revision}: pin "
                f"refs/convert/parquet or build a mirror (no parquet file matches {patterns})")
        return DataNotFoundError(f"{where}: no parquet file matches {patterns} at {revision}")

    def _partial_export(self, split: str) -> str | None:
        """A file the Hub's converter left in `partial-<folder>/` beside a folder the split's
        patterns name (`default/train/*.parquet`: `default/partial-train/`), if any."""
        for pattern in self._patterns(split):
            parts = pattern.split("/")
            if len(parts) < 2:  # no folder to have a partial-* sibling
                continue
            partial = "/".join([*parts[:-2], f"partial-{parts[-2]}", parts[-1]])
            if found := with_retries(lambda p=partial: fs.glob(self._url(p)),
                                     about=f"{self.entry.name}/{split}"):
                return self.in_repo(found[0])
        return None

    def _about(self, split: str) -> str:
        return f"{self.entry.name} {split}"
