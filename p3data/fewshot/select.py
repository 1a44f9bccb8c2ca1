"""Choosing a query's exemplars: a pure function of its draws, the pool and the room left.

The rules (each tested):
- never the query: not its row (when the pool is its own split), and not any exemplar whose
  whitespace-normalized input is the query's;
- no exemplar twice, and no two exemplars with the same input;
- uniform over the whole pool, not a window near the query: each step draws uniformly among
  the exemplars that still fit. That is exactly what drawing from the whole pool and passing
  over those that do not fit would give, without spending draws on them; so fewer shots are
  given only when no allowed exemplar fits the room left, or the pool has too few;
- the k-shot exemplars are the first k of the (k+m)-shot ones when all fit: step i draws the
  same whatever k.
Allowed exemplars are found by rejection (`MAX_TRIES` draws), then, if the query's duplicates
crowd the room, by listing the allowed ones: a bounded amount of work, never a failure.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from p3data.fewshot.draws import Draws
from p3data.fewshot.pool import ExemplarPool

MAX_TRIES = 32
# Why a query got fewer exemplars than asked.
SHORT_POOL = "short_pool"  # the query is shown every exemplar it may be: the pool has no more
NO_ROOM = "no_room"  # the pool has more, but none of them fits the room left


@dataclass(frozen=True, slots=True)
class Selection:
    """The chosen pool positions in prompt order, and how many exemplars the query could be
    shown at most (`allowed_count`)."""

    positions: tuple[int, ...]
    allowed: int

    def first(self, k: int) -> Selection:
        """The selection at k shots: its first k exemplars (step i draws the same for any k)."""
        return Selection(self.positions[:k], self.allowed)

    def shortfall(self, k: int, shown: int) -> str | None:
        """Why `shown` exemplars are fewer than k: SHORT_POOL (all the query may be shown are),
        NO_ROOM (more would not fit) or None (not fewer)."""
        if shown >= k:
            return None
        return SHORT_POOL if shown >= self.allowed else NO_ROOM


def allowed_count(pool: ExemplarPool, query_key: int) -> int:
    """How many exemplars with distinct inputs a query may be shown at most (its own input,
    and so its own row, left out)."""
    return pool.distinct_inputs - (1 if len(pool.positions_with_key(query_key)) else 0)


def select_exemplars(pool: ExemplarPool, draws: Draws, *, shots: int, budget: int,
                     query_key: int, query_row: int | None = None) -> Selection:
    """Up to `shots` exemplars whose costs sum to at most `budget` tokens.

    `query_row`: the query's row number when the pool is the query's own split (its row is
    then kept out even if its input were to differ), else None.
    """
    keep_out = set() if query_row is None else {pool.position_of_row(query_row)} - {None}
    forbidden = {query_key}
    positions: list[int] = []
    cost = 0
    for _ in range(shots):
        position = _draw(pool, draws, pool.fitting(budget - cost), keep_out=keep_out,
                         forbidden=forbidden)
        if position is None:
            break
        positions.append(position)
        forbidden.add(int(pool.keys[position]))
        cost += int(pool.costs[position])
    return Selection(tuple(positions), allowed_count(pool, query_key))


def _draw(pool: ExemplarPool, draws: Draws, fitting: int, *, keep_out: set[int],
          forbidden: set[int]) -> int | None:
    """A uniform draw among the allowed positions of [0, fitting), or None if there is none."""
    if fitting <= 0:
        return None
    for _ in range(MAX_TRIES):
        position = draws.below(fitting)
        if position not in keep_out and int(pool.keys[position]) not in forbidden:
            return position
    keys = np.asarray(pool.keys[:fitting])
    allowed = ~np.isin(keys, np.fromiter(forbidden, dtype=np.uint64, count=len(forbidden)))
    allowed[[p for p in keep_out if p < fitting]] = False
    candidates = np.flatnonzero(allowed)
    return int(candidates[draws.below(len(candidates))]) if len(candidates) else None
