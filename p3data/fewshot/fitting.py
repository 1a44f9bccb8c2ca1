"""Fitting in token space: where an over-long query's passage cut falls, from the tokens its
words already have, confirmed by rendering and tokenizing only next to it.

`shorten`'s rule cuts every passage field to a common cap, at a word boundary, and takes the
largest cap whose render fits. The cut changes only where a field's word ends: between two
such caps every cap gives the same render (`cut_points`), so the answer is the cap just below
the first of them that does not fit. The query's ids already say how many tokens each of its
words has (`Tokenizer.word_lengths`); aligned with the words of each field where the render
holds its text as it is, they estimate every cut's tokens (`Estimate`). `search` renders and
tokenizes the cut the estimate names as the last that fits, and the one after it; each exact
answer moves the estimate's anchor, so a miss by a word or two (a word glued to the template's
text after the passage) costs one more render. The answer is taken only from exact renders: a
cap that fits next to the first cap above it that does not, which is the bisection's answer
whenever fitting is monotone in the cap. An estimate that does not settle within
`MAX_PROBES` renders, or none at all (a model that does not split texts into words, words
that do not line up), leaves the query to the bisection.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from p3data.fewshot.pool import id_count
from p3data.tokenize import Entry, Tokenizer

MAX_PROBES = 4
# Python's whitespace (`str.isspace`, where `cut_text` cuts), by code point: none is above U+3000.
_SPACE = np.array([chr(code).isspace() for code in range(0x3001)])
# How much of a passage's start finds it in the query's text.
_FIND_CHARS = 64


def _space_mask(text: str) -> np.ndarray:
    """Per character of `text`, whether it is whitespace."""
    if text.isascii():
        return _SPACE[np.frombuffer(text.encode("ascii"), np.uint8)]
    codes = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), np.uint32)
    return _SPACE[np.minimum(codes, len(_SPACE) - 1)] & (codes < len(_SPACE))


def _words(text: str) -> tuple[np.ndarray, np.ndarray]:
    """Where each word (a run of non-whitespace) of `text` starts and ends."""
    space = np.ones(len(text) + 2, bool)
    space[1:-1] = _space_mask(text)
    edges = np.flatnonzero(space[1:] != space[:-1])
    return edges[0::2], edges[1::2]


@dataclass(frozen=True, slots=True)
class _Field:
    """A passage field's cut points (`cut_points`, in order), the tokens each adds (those of
    the word ending there, 0 where a list's text ends without one), and the tokens of its
    words that the query's text holds."""

    points: np.ndarray
    costs: np.ndarray
    held: float


def _field(value: str | list[str], *, text: str, starts: np.ndarray, lengths: np.ndarray,
           rate: float) -> _Field:
    """The field's cut points and their costs: a word's tokens as the query's ids have them
    where the query's text holds the word as the field does (found by its start), else
    `rate` per character and space."""
    points, costs, held, found, offset = [], [], 0.0, 0, 0
    for item in [value] if isinstance(value, str) else value:
        item_starts, item_ends = _words(item)
        cost = rate * (item_ends - item_starts + 1)
        where = text.find(item[:_FIND_CHARS], found) if item else -1
        if where >= 0:
            shown = item_ends <= _common_prefix(text, where, item)
            words = np.searchsorted(starts, where + item_starts[shown], side="right") - 1
            cost[shown] = lengths[words]
            held += float(cost[shown].sum())
            found = where + len(item)
        points.append(item_ends + offset)
        costs.append(cost)
        if not item_ends.size or item_ends[-1] != len(item):  # ends in a space, or is empty
            points.append(np.array([offset + len(item)]))
            costs.append(np.zeros(1))
        offset += len(item)
    return _Field(np.concatenate(points), np.concatenate(costs), held)


def cut_points(value: str | list[str]) -> np.ndarray:
    """The caps above 0 at which `cut_value(value, cap)` differs from the cap below: where a
    word ends (a list's texts end to end, each one's end a word's), and the value's length."""
    none = np.zeros(0, np.int64)
    points = _field(value, text="", starts=none, lengths=none, rate=0.0).points
    return np.unique(points[points > 0])


@dataclass(frozen=True)
class Estimate:
    """Every distinct cut of a query's passage fields, and what it is estimated to cost.

    `caps[j]`: the j-th cap at which the fields' cut changes (`caps[0]` 0, the last the
    longest field's length: the query as it is); `weights[j]`: tokens of the words that cut
    keeps; `offset`: the query's tokens less the weights of the words its text holds, so that
    `offset + weights[j]` estimates the tokens of the render at `caps[j]`.
    """

    caps: np.ndarray
    weights: np.ndarray
    offset: float

    def first_over(self, budget: int, offset: float) -> int:
        """The index of the first cap estimated over `budget` with this offset."""
        return int(np.searchsorted(self.weights, budget - offset, side="right"))


def estimate(values: Sequence[str | list[str]], text: str, ids: Entry,
             tokenizer: Tokenizer) -> Estimate | None:
    """The estimate for cutting `values` (the passage fields') in the query whose input is
    `text` with these ids; None if the model does not split texts into words, or the text's
    words and the ids' do not line up."""
    lengths = tokenizer.word_lengths(ids)
    starts = _words(text)[0]
    if lengths is None or len(lengths) != len(starts) or not starts.size:
        return None
    tokens = id_count(ids)
    rate = tokens / len(text)  # per character, for words the text does not hold
    fields = [_field(value, text=text, starts=starts, lengths=lengths, rate=rate)
              for value in values]
    points = np.concatenate([field.points for field in fields])
    costs = np.concatenate([field.costs for field in fields])
    if len(fields) > 1:
        order = np.argsort(points, kind="stable")
        points, costs = points[order], costs[order]
    last = np.ones(len(points), bool)  # the last of equal points, and above 0
    last[:-1] = points[1:] != points[:-1]
    last &= points > 0
    cumulative = np.cumsum(costs)
    return Estimate(np.concatenate(([0], points[last])),
                    np.concatenate(([0.0], cumulative[last])),
                    tokens - sum(field.held for field in fields))


def _common_prefix(text: str, start: int, other: str) -> int:
    """How many characters of `other` `text` holds from `start` on."""
    if text.startswith(other, start):
        return len(other)
    lo, hi = 0, min(len(other), len(text) - start)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if text.startswith(other[:mid], start):
            lo = mid
        else:
            hi = mid - 1
    return lo


@dataclass(frozen=True, slots=True)
class Probe:
    """An exact render at one cap: whether it fits, its tokens (None: the render changed the
    target or the choices) and what the caller keeps of it."""

    fits: bool
    tokens: int | None
    kept: object = None


UNFIT = -1  # `search`'s cap when even cap 0 does not fit


def search(plan: Estimate, budget: int,
           probe: Callable[[int], Probe]) -> tuple[int, object] | None:
    """The largest cap below the first that does not fit, and what the probe of its render
    kept; (`UNFIT`, None) if cap 0 does not fit (as the bisection, which tries it first); None
    if `MAX_PROBES` more renders did not find two neighbouring caps, one fitting and the next
    not. The query itself, the last cap, does not fit."""
    found = probe(0)
    if not found.fits:
        return UNFIT, None
    caps, weights = plan.caps, plan.weights
    lo, hi, kept = 0, len(caps) - 1, found.kept  # caps[lo] fits, caps[hi] does not
    offset = plan.offset  # anchored at the query's own count: cap 0 is far from the cut
    for _ in range(MAX_PROBES):
        if hi - lo == 1:
            break
        first_over = min(max(plan.first_over(budget, offset), lo + 1), hi)
        index = first_over - 1 if first_over - 1 > lo else first_over
        found = probe(int(caps[index]))
        if found.tokens is not None:  # anchored at an exact count from now on
            offset = found.tokens - float(weights[index])
        if found.fits:
            lo, kept = index, found.kept
        else:
            hi = index
    return (int(caps[hi]) - 1, kept) if hi - lo == 1 else None
