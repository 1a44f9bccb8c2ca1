"""promptsource's `choice` filter (and Jinja's `random`), drawing from a per-row RNG seeded by
(template id, row index, user seed), never from the global `random` state, so that renders are
reproducible across runs, workers and shards."""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from typing import Any

from jinja2 import pass_context
from jinja2.runtime import Context

# The context key under which a row's RNG travels. Not an identifier, so templates cannot read it.
RNG_KEY = "p3data:rng"


def choice_seed(template_id: str, index: int, seed: int) -> int:
    """The seed of the RNG behind `choice` for one row of one template."""
    digest = hashlib.blake2b(f"{template_id}\0{index}\0{seed}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little")


class RowRandom:
    """A row's RNG, created only if the template actually draws from it."""

    __slots__ = ("_seed", "_rng")

    def __init__(self, template_id: str, index: int, seed: int):
        self._seed = (template_id, index, seed)
        self._rng: random.Random | None = None

    def choice(self, items: Sequence[Any]) -> Any:
        if self._rng is None:
            self._rng = random.Random(choice_seed(*self._seed))
        return self._rng.choice(items)


@pass_context
def choice(context: Context, items: Sequence[Any]) -> Any:
    """promptsource's `choice` (and Jinja's `random`), drawing from the row's own RNG.

    Taking the context also keeps Jinja from folding `[...] | choice` over a constant list at
    compile time, so a compiled template still draws once per row, as promptsource did.
    """
    rng = context.get(RNG_KEY)
    if rng is None:
        raise RuntimeError("the 'choice' filter needs a row RNG; render through p3data")
    return rng.choice(items)


@pass_context
def random_item(context: Context, items: Sequence[Any]) -> Any:
    """Jinja's own `random` filter, drawing from the row's RNG: an empty sequence gives an
    undefined value (it renders as ""), where `choice` fails."""
    try:
        return choice(context, items)
    except IndexError:
        return context.environment.undefined("No random item, sequence was empty.")
