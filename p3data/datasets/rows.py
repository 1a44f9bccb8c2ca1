"""Reading rows from files on any filesystem (JSON Lines, parquet, CSV) with errors that say
where (`errors.py`). Paths are strings any fsspec filesystem knows (see `p3data.fs`).
"""

from __future__ import annotations

import csv
import io
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from p3data import fs
from p3data.datasets.errors import LocatedFile, RowFileError, one_line
from p3data.datasets.parquet import ParquetRows


@dataclass(frozen=True)
class RowFile(LocatedFile):
    """A file of rows: JSON Lines, parquet or CSV."""

    def rows(self) -> Iterator[dict[str, Any]]:
        """The rows of a `.parquet` file, or of a JSON Lines file (any other name)."""
        return self._parquet_rows() if self._is_parquet else self._jsonl_rows()

    def count(self) -> int:
        """How many rows `rows()` yields: parquet metadata, or the non-blank lines (decoded,
        so a file that is not UTF-8 fails when it is planned, not half-way through)."""
        if self._is_parquet:
            return self._parquet().metadata().num_rows
        return sum(map(bool, map(str.strip, self._lines())))

    def csv_rows(self) -> Iterator[dict[str, str]]:
        """The rows of a CSV file with a header line, as strings keyed by the header."""
        reader = csv.DictReader(self._lines())
        try:
            yield from reader
        except csv.Error as err:
            raise self.error(f"not valid CSV: {err}", line=reader.line_num) from err

    @property
    def _is_parquet(self) -> bool:
        return self.path.endswith(".parquet")

    def _lines(self) -> Iterator[str]:
        """The lines as text mode splits them (at LF, CRLF or CR), endings kept as CSV needs.
        Decoding in large blocks is fast; `_raw_lines` locates a bad byte afterwards."""
        try:
            raw = fs.open_read(self.path)
        except FileNotFoundError as err:
            raise self.missing() from err
        except OSError as err:
            raise self.error(f"cannot open rows file: {err.strerror or err}") from err
        with raw, io.TextIOWrapper(raw, encoding="utf-8", newline="") as handle:
            try:
                yield from handle
            except UnicodeDecodeError as err:
                raise self._not_utf8() from err
            except OSError as err:
                raise self.error(f"cannot read: {one_line(err)}") from err

    def _raw_lines(self) -> Iterator[tuple[int, int, bytes]]:
        """(line number, byte offset, bytes) of every line, numbered as `_lines` numbers them."""
        number = offset = 0
        with fs.open_read(self.path) as handle:
            for chunk in handle:  # ends at LF: a CRLF is never cut in two
                for raw in chunk.splitlines(keepends=True):
                    number += 1
                    yield number, offset, raw
                    offset += len(raw)

    def _not_utf8(self) -> RowFileError:
        for number, offset, raw in self._raw_lines():
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError as err:
                return self.error(f"not UTF-8 at byte {offset + err.start:,} "
                                  f"({err.reason} 0x{raw[err.start]:02x})", line=number)
        return self.error("not UTF-8")  # only if the file changed while it was read

    def _jsonl_rows(self) -> Iterator[dict[str, Any]]:
        for number, line in enumerate(self._lines(), start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as err:
                start = next(o for n, o, _ in self._raw_lines() if n == number)
                at = start + len(line[: err.pos].encode())
                raise self.error(f"not valid JSON: {err.msg} (byte {at:,})", number) from err
            if not isinstance(row, dict):
                raise self.error(f"expected a JSON object, got {row!r:.60}", number)
            yield row

    def _parquet(self) -> ParquetRows:
        return ParquetRows(self.path, self.about)

    def _parquet_rows(self) -> Iterator[dict[str, Any]]:
        for table in self._parquet().tables():
            yield from table.to_pylist()


def read_jsonl(path: str | os.PathLike) -> list[dict[str, Any]]:
    return list(RowFile(path)._jsonl_rows())
