"""Rows go through rendering and tokenizing in batches: big enough to amortise per-call work,
small enough to keep a worker's memory flat."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from itertools import islice
from typing import Any, TypeVar

ROWS_PER_BATCH = 512
# A batch of rows also stops at about this many characters of their text: a template renders
# and tokenizes a batch at once, and 512 news articles are ~2M characters where 512 short rows
# are a few tens of thousands.
CHARS_PER_BATCH = 1 << 19

T = TypeVar("T")


def batched(items: Iterable[T], size: int = ROWS_PER_BATCH) -> Iterator[list[T]]:
    """Lists of `size` items, the last one shorter (`itertools.batched` is Python 3.12's)."""
    iterator = iter(items)
    while batch := list(islice(iterator, size)):
        yield batch


def row_batches(rows: Iterable[Mapping[str, Any]]) -> Iterator[list[Mapping[str, Any]]]:
    """Lists of rows, each of at most `ROWS_PER_BATCH` rows and, unless one row holds more,
    about `CHARS_PER_BATCH` characters of top-level text."""
    batch: list[Mapping[str, Any]] = []
    chars = 0
    for row in rows:
        batch.append(row)
        chars += sum(len(value) for value in row.values() if isinstance(value, str))
        if len(batch) == ROWS_PER_BATCH or chars >= CHARS_PER_BATCH:
            yield batch
            batch, chars = [], 0
    if batch:
        yield batch
