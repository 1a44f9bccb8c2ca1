"""Python's garbage collector kept off p3data's hot paths.

Allocations trigger collections, and each older-generation collection walks every object the
process tracks: TensorFlow's and Beam's heaps, a run's plan, a tokenizer's memos (~10^5
entries). Reference counting frees acyclic objects anyway: where code makes many objects that
form no cycles, collection is paused (`collection_paused`); where a worker starts building,
what it holds for the whole run is frozen out of later collections (`long_lived_frozen`).
"""

from __future__ import annotations

import contextlib
import functools
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


@functools.cache
def long_lived_frozen() -> None:
    """Once per process, after a full collection: the objects held now (modules, the plan,
    the model) are left out of every later collection, which would walk them all again (on
    new text, ~15% of a build's CPU). They are still freed when no longer referenced; only
    cycles among them would never be, and the collection just before took those."""
    gc.collect()
    gc.freeze()
