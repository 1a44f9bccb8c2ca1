"""Rows go through rendering and tokenizing in batches: big enough to amortise per-call work,
small enough to keep a worker's memory flat."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from itertools import islice
from typing import TypeVar

ROWS_PER_BATCH = 512

T = TypeVar("T")


def batched(items: Iterable[T], size: int = ROWS_PER_BATCH) -> Iterator[list[T]]:
    """Lists of `size` items, the last one shorter (`itertools.batched` is Python 3.12's)."""
    iterator = iter(items)
    while batch := list(islice(iterator, size)):
        yield batch
