"""What goes wrong reading rows, said in one line that names where.

A row file's errors name the dataset split it serves, the file and the line or rows
concerned; the library's own exception stays chained as the cause.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from p3data.errors import P3DataError


class SourceError(P3DataError):
    """The rows of a dataset split cannot be found, loaded, read or decoded."""


class DataNotFoundError(SourceError):
    """The rows are not where they were expected (no file, no Hub location)."""


class RowFileError(SourceError):
    """A file of rows exists but cannot be read or decoded."""


class MirrorError(SourceError):
    """A mirror's files for a split are not what its snapshot record, or its layout, says."""


def one_line(err: BaseException) -> str:
    """A library's message on one line (Arrow and `datasets` messages may span several)."""
    return " ".join(str(err).split())


@dataclass(frozen=True)
class LocatedFile:
    """A file of rows at any fsspec path; `about` (e.g. "super_glue/copa validation") heads
    its errors."""

    path: str
    about: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "path", os.fspath(self.path))  # a Path is welcome too

    def error(self, reason: str, line: int | None = None) -> RowFileError:
        """An error about this file (at this line)."""
        return RowFileError(self.message(reason, line))

    def missing(self) -> DataNotFoundError:
        return DataNotFoundError(self.message("cannot open rows file: no such file"))

    def message(self, reason: str, line: int | None = None) -> str:
        """`reason`, located: what the file serves, the file and the line."""
        place = f"{self.path}:{line}" if line else self.path
        return f"{self.about}: {place}: {reason}" if self.about else f"{place}: {reason}"
