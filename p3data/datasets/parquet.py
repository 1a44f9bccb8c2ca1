"""Parquet files of rows on any filesystem (`p3data.fs`), read by whole row groups.

A parquet file's footer says how many rows each row group holds, so a split can be cut into
shards of whole row groups without reading any rows, and a shard is read by fetching only its
own row groups: a worker never rescans a file from its start, however far in its shard lies.
Reading a remote file retries transient failures (connection resets, timeouts, HTTP 429 and
5xx) with exponential backoff; anything else fails at once with one line naming the file.
Reads run in the calling thread only (no pyarrow thread pool, no pre-buffering): a corrupt
file's error then leaves no decoder running, which could abort the interpreter at its exit;
parallelism comes from shards read side by side instead.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, BinaryIO, TypeVar

from p3data import fs
from p3data.datasets.errors import LocatedFile, SourceError, one_line

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.parquet as pq

PARQUET_BATCH_ROWS = 2048
TRIES = 4
FIRST_WAIT = 0.5  # seconds before the second try, doubled before each further one
_T = TypeVar("_T")
# What HTTP clients (httpx and its kin, used by huggingface_hub) call their network failures.
_TRANSPORT_ERRORS = frozenset({"TransportError", "TimeoutException", "NetworkError"})


def is_transient(err: BaseException) -> bool:
    """A failure that trying again may cure: network trouble, HTTP 429 or 5xx."""
    if isinstance(err, ConnectionError | TimeoutError):
        return True
    response = getattr(err, "response", None)
    status = getattr(response, "status_code", None) or getattr(err, "code", None)
    if isinstance(status, int):
        return status == 429 or 500 <= status < 600
    return any(kind.__name__ in _TRANSPORT_ERRORS for kind in type(err).__mro__)


def with_retries(action: Callable[[], _T], *, about: str, tries: int = TRIES,
                 wait: float = FIRST_WAIT) -> _T:
    """`action()`, tried again after transient failures; `about` heads the error when every
    try failed. Other errors pass through untouched on the first try."""
    attempt = 1
    while True:
        try:
            return action()
        except Exception as err:
            if not is_transient(err):
                raise
            if attempt == tries:
                raise SourceError(f"{about}: {one_line(err) or type(err).__name__} "
                                  f"(failed {tries} times)") from err
        time.sleep(wait * 2 ** (attempt - 1))
        attempt += 1


def row_group_runs(metadata: pq.FileMetaData, rows_per_shard: int) -> list[tuple[int, int]]:
    """Row ranges [start, stop) of a file cut between row groups, each about `rows_per_shard`
    rows (a larger row group is one range); one empty range for a file without rows."""
    runs: list[tuple[int, int]] = []
    start = stop = 0
    for group in range(metadata.num_row_groups):
        rows = metadata.row_group(group).num_rows
        if stop > start and stop - start + rows > rows_per_shard:
            runs.append((start, stop))
            start = stop
        stop += rows
    if stop > start or not runs:
        runs.append((start, stop))
    return runs


def hub_features(schema: pa.Schema) -> dict[str, Any] | None:
    """The `datasets` features a file was written with (its `huggingface` schema metadata:
    types and ClassLabel names), or None when it has none."""
    raw = (schema.metadata or {}).get(b"huggingface")
    if raw is None:
        return None
    try:
        features = json.loads(raw)["info"]["features"]
    except (ValueError, KeyError, TypeError):
        return None
    return features if isinstance(features, dict) else None


@dataclass(frozen=True)
class ParquetRows(LocatedFile):
    """One parquet file of a split. Holds no open file, so it pickles."""

    def metadata(self) -> pq.FileMetaData:
        """The footer: row counts, row groups and schema (reads no rows)."""
        handle, parquet = with_retries(self._open, about=self.message("cannot open"))
        with handle:
            return parquet.metadata

    def tables(self, start: int = 0, stop: int | None = None, *,
               columns: Sequence[str] | None = None) -> Iterator[pa.Table]:
        """Rows [start, stop) of the file in tables of at most PARQUET_BATCH_ROWS rows, read
        from the row groups that hold them only. `columns` (None: all) that the file lacks are
        skipped; every table keeps the file's schema metadata."""
        reader = _GroupReader(self)
        try:
            metadata = reader.file().metadata
            stop = metadata.num_rows if stop is None else stop
            wanted = None if columns is None else [
                name for name in columns if name in reader.file().schema_arrow.names]
            first = 0
            for group in range(metadata.num_row_groups):
                rows = metadata.row_group(group).num_rows
                if first < stop and first + rows > start:
                    table = reader.read(group, first, wanted)
                    table = table.slice(max(start - first, 0), min(stop, first + rows)
                                        - max(start, first))
                    for offset in range(0, table.num_rows, PARQUET_BATCH_ROWS):
                        yield table.slice(offset, PARQUET_BATCH_ROWS)
                first += rows
        finally:
            reader.close()

    def _open(self) -> tuple[BinaryIO, pq.ParquetFile]:
        """The open file and its footer; transient failures are raised as they are, to retry."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        try:
            handle = fs.open_read(self.path)
        except FileNotFoundError as err:
            raise self.missing() from err
        except OSError as err:
            if is_transient(err):
                raise
            raise self.error(f"cannot open rows file: {err.strerror or err}") from err
        try:
            return handle, pq.ParquetFile(handle, pre_buffer=False)
        except (pa.ArrowException, OSError) as err:
            handle.close()
            if is_transient(err):
                raise
            reason = f"not a parquet file (or truncated/corrupt): {one_line(err)}"
            raise self.error(reason) from err
        except BaseException:
            handle.close()
            raise


class _GroupReader:
    """Row groups of one file, read through one open handle that is reopened after a
    transient failure (a broken connection does not heal)."""

    def __init__(self, rows: ParquetRows):
        self.rows = rows
        self._opened: tuple[BinaryIO, pq.ParquetFile] | None = None

    def file(self) -> pq.ParquetFile:
        if self._opened is None:
            self._opened = with_retries(self.rows._open,
                                        about=self.rows.message("cannot open"))
        return self._opened[1]

    def read(self, group: int, first_row: int, columns: list[str] | None) -> pa.Table:
        import pyarrow as pa

        def attempt() -> pa.Table:
            try:
                return self.file().read_row_group(group, columns=columns, use_threads=False)
            except BaseException:
                self.close()
                raise

        try:
            return with_retries(attempt, about=self.rows.message(
                f"cannot read the rows from row {first_row:,} on"))
        except (pa.ArrowException, OSError) as err:
            reason = (f"cannot decode the rows from row {first_row:,} on (corrupt file?): "
                      f"{one_line(err)}")
            raise self.rows.error(reason) from err

    def close(self) -> None:
        if self._opened is not None:
            self._opened[0].close()
            self._opened = None
