"""Reading rows from JSON Lines files, with errors that name the file and line."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from p3data.errors import P3DataError


class RowFileError(P3DataError):
    """A rows file is missing or has a line that is not a JSON object."""


def iter_jsonl(path: str | Path) -> Iterator[dict[str, Any]]:
    """Yield one dict per non-blank line; a bad line raises with its file and line number."""
    path = Path(path)
    try:
        handle = path.open(encoding="utf-8")
    except OSError as err:
        raise RowFileError(f"{path}: cannot open rows file: {err.strerror}") from None
    with handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as err:
                raise RowFileError(f"{path}:{number}: not valid JSON: {err.msg}") from None
            if not isinstance(row, dict):
                raise RowFileError(f"{path}:{number}: expected a JSON object, got {row!r:.60}")
            yield row


def read_jsonl(path: str | Path) -> list[dict[str, Any]]:
    return list(iter_jsonl(path))
