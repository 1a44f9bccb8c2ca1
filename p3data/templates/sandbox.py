"""The Jinja environment templates render in: promptsource's globals and filters, sandboxed.

Differences from promptsource, on purpose:
- `SandboxedEnvironment`: a template cannot reach Python internals (`__class__`, `__globals__`...).
- A name that is neither a field of the row nor set by the template raises instead of rendering
  as "", so a template that reads a field the row lacks fails loudly on that row. A missing
  attribute or item of a value that exists stays lenient (renders "", is falsy), exactly as in
  promptsource, because real rows rely on it.
- `choice` draws from a per-row RNG seeded by (template id, row index, user seed), never from
  the global `random` state, so renders are reproducible across runs, workers and shards.
"""

from __future__ import annotations

import hashlib
import random
from collections import Counter
from collections.abc import Sequence
from typing import Any

from jinja2 import Undefined, pass_context
from jinja2.runtime import Context
from jinja2.sandbox import SandboxedEnvironment
from jinja2.utils import missing

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
def _choice(context: Context, items: Sequence[Any]) -> Any:
    """promptsource's `choice` (and Jinja's `random`), drawing from the row's own RNG.

    Taking the context also keeps Jinja from folding `[...] | choice` over a constant list at
    compile time, so a compiled template still draws once per row, as promptsource did.
    """
    rng = context.get(RNG_KEY)
    if rng is None:
        raise RuntimeError("the 'choice' filter needs a row RNG; render through p3data")
    return rng.choice(items)


def _most_frequent(items: Sequence[Any]) -> list[Any] | None:
    """Every item that occurs as often as the most common one (None for no items)."""
    if not items:
        return None
    counts = Counter(items).most_common()
    top = counts[0][1]
    return [item for item, count in counts if count == top]


def _highlight(text: str) -> str:
    return "<span style='color: #F08080'>" + text + "</span>"


class FieldUndefined(Undefined):
    """Strict for unknown top-level names, promptsource's lenient `Undefined` otherwise."""

    __slots__ = ()

    def _check_name(self) -> None:
        if self._undefined_obj is missing:
            self._fail_with_undefined_error()

    def __str__(self) -> str:
        self._check_name()
        return super().__str__()

    def __iter__(self):
        self._check_name()
        return super().__iter__()

    def __len__(self) -> int:
        self._check_name()
        return super().__len__()

    def __bool__(self) -> bool:
        self._check_name()
        return super().__bool__()

    def __eq__(self, other: object) -> bool:
        self._check_name()
        return super().__eq__(other)

    def __ne__(self, other: object) -> bool:
        self._check_name()
        return super().__ne__(other)

    __hash__ = Undefined.__hash__


def make_environment() -> SandboxedEnvironment:
    env = SandboxedEnvironment(undefined=FieldUndefined)
    env.globals["zip"] = zip
    env.filters["choice"] = _choice
    env.filters["random"] = _choice  # Jinja's own would draw from the global RNG
    env.filters["most_frequent"] = _most_frequent
    env.filters["highlight"] = _highlight
    return env


ENVIRONMENT = make_environment()
