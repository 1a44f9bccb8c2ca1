"""The export formats, registered in one place: each one's name (`p3data export --format`), its
files' extension and its writer. The command line's choices, the writers' lookup and which
files of a task folder are exported data all come from `EXPORT_FORMATS`: a new format is one
entry here (and its writer's module)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, BinaryIO, Protocol

from p3data.export.jsonl import JsonlShard
from p3data.export.naming import export_file_pattern
from p3data.export.parquet import ParquetShard

if TYPE_CHECKING:
    import pyarrow as pa


class RowWriter(Protocol):
    """One exported file being written: rows in batches, then closed (also on failure)."""

    def write(self, examples: Sequence[Mapping[str, Any]]) -> int:
        """Write a batch of rows; returns their size in Arrow, as `datasets` cards count it."""
        ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class ExportFormat:
    name: str
    extension: str  # of its files, dot included
    writer: Callable[[BinaryIO, pa.Schema], RowWriter]  # given the open file, the columns


EXPORT_FORMATS: dict[str, ExportFormat] = {f.name: f for f in (
    ExportFormat("parquet", ".parquet", ParquetShard),
    ExportFormat("jsonl", ".jsonl", JsonlShard),
)}


def export_format(name: str) -> ExportFormat:
    return EXPORT_FORMATS[name]


def is_export_file(name: str) -> bool:
    """Whether a task folder's file is exported data, of any registered format."""
    pattern = export_file_pattern(f.extension for f in EXPORT_FORMATS.values())
    return pattern.fullmatch(name) is not None
