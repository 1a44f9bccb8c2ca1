"""Garbage collection paused while code makes many objects that form no cycles.

Allocations trigger collections, and each older-generation collection walks every object the
process tracks: a tokenizer's memo (~10^5 entries), TensorFlow's heap, a run's plan. Reference
counting frees acyclic objects anyway; paused, the collections are left for later.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def collection_paused() -> Iterator[None]:
    """Collection off inside, restored after (it stays off if it was off)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
