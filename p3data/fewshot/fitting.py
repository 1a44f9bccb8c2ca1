"""Fitting in token space: where an over-long query's passage cut falls, from the tokens its
words already have, confirmed by rendering and tokenizing only next to it.

`shorten`'s rule cuts every passage field to a common cap, at a word boundary, and takes the
largest cap whose render fits. The cut changes only where a field's word ends (`Cuts`):
between two such caps every cap gives the same render, so the answer is the cap just below
the first of them that does not fit. The query's ids already say how many tokens each of its
words has (`Tokenizer.word_lengths`); where the query's text holds a field as it is, they say
what each cut keeps (`Estimate`). `search` renders and tokenizes cap 0 (as the bisection,
which gives up on a query whose passages emptied do not fit), the cut the estimate names as
the last that fits, and the cut after it; each exact count re-anchors the estimate, so a miss
by a word (a word glued to the template's text) costs one render more. The answer comes only
from exact renders: a cut that fits next to the first one above it that does not, which is
the bisection's answer whenever fitting is monotone in the cap. An estimate that does not
settle within `MAX_ROUNDS` rounds of renders, or none at all (a model that does not split texts into
words, words that do not line up), leaves the query to the bisection.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from p3data.fewshot.pool import id_count
from p3data.tokenize import Tokenizer
from p3data.tokenize.entries import Entry

MAX_ROUNDS = 3
UNFIT = -1  # `search`'s cap when even cap 0 does not fit
# Python's whitespace (`str.isspace`, where `cut_text` cuts), by code point: none is above U+3000.
_SPACE = np.array([chr(code).isspace() for code in range(0x3001)])
_ASCII_SPACE = bytes(_SPACE[:128].tolist() + [False] * 128)  # a `bytes.translate` table
_WORD_END = re.compile(r"(?<=\S)\s")
# How much of a passage's start finds it in the query's text.
_FIND_CHARS = 64

Value = str | list[str]


def _items(value: Value) -> list[str]:
    return [value] if isinstance(value, str) else value


def _length(value: Value) -> int:
    return len(value) if isinstance(value, str) else sum(map(len, value))


class Cuts:
    """Where the passage fields' cut changes, as `cut_value` cuts them to a common cap: at
    each word's end (a list's texts end to end, each one's end a word's) and each field's
    length. `kept(value, cap)` is the rule's own cut, whose length is the cap's segment start."""

    def __init__(self, values: Sequence[Value], kept: Callable[[Value, int], Value]):
        self.values, self._kept = values, kept
        self.longest = max(map(_length, values))

    def start(self, cap: int) -> int:
        """The largest cap at most `cap` at which the cut changes (0 if none): every cap from
        it up to `cap` gives the same cut."""
        return max(_length(self._kept(value, cap)) for value in self.values)

    def after(self, cap: int) -> int:
        """The smallest cap above `cap` at which the cut changes (`longest` if none)."""
        found = [_after(value, cap) for value in self.values]
        return min((after for after in found if after is not None), default=self.longest)


def _after(value: Value, cap: int) -> int | None:
    """The first cap above `cap` at which `value`'s cut changes (None if none)."""
    offset = 0
    for item in _items(value):
        if cap < offset + len(item):
            found = _WORD_END.search(item, max(cap - offset, 0) + 1)
            return offset + (found.start() if found else len(item))
        offset += len(item)
    return None


def _words(text: str) -> tuple[np.ndarray, np.ndarray]:
    """Where each word (a run of non-whitespace) of `text` starts and ends."""
    padded = f" {text} "
    if padded.isascii():  # marked by table, in C
        space = np.frombuffer(padded.encode("ascii").translate(_ASCII_SPACE), np.bool_)
    else:
        codes = np.frombuffer(padded.encode("utf-32-le", "surrogatepass"), np.uint32)
        space = _SPACE[np.minimum(codes, len(_SPACE) - 1)] & (codes < len(_SPACE))
    edges = np.flatnonzero(space[1:] != space[:-1])
    return edges[0::2], edges[1::2]


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


@dataclass(frozen=True)
class Estimate:
    """What each cut is estimated to cost: `weights[i]` tokens of the fields' words that end
    at or below cap `caps[i]` (ascending, from 0), as the query's ids have them where its text
    holds them, else at the query's tokens per character; `offset` the query's tokens less the
    weights of the words its text holds. A cut's tokens: an exact count at another cut plus
    the weights between them."""

    caps: np.ndarray
    weights: np.ndarray
    offset: float

    def weight(self, cap: int) -> float:
        """The weights of the words a cut to `cap` keeps."""
        return float(self.weights[self.caps.searchsorted(cap, "right") - 1])

    def last_within(self, weight: float) -> int:
        """The largest cap whose kept words weigh at most `weight` (0 if none)."""
        return int(self.caps[max(self.weights.searchsorted(weight, "right") - 1, 0)])


def estimate(values: Sequence[Value], text: str, ids: Entry,
             tokenizer: Tokenizer) -> Estimate | None:
    """The estimate for cutting `values` (the passage fields') in the query whose input is
    `text` with these ids; None if the model does not split texts into words, or the text's
    words and the ids' do not line up."""
    lengths = tokenizer.word_lengths(ids)
    starts, ends = _words(text)
    if lengths is None or len(lengths) != len(starts) or not starts.size:
        return None
    tokens = id_count(ids)
    rate = tokens / len(text)  # per character, for text the query does not hold
    caps, weights, held = [np.zeros(1, np.int64)], [np.zeros(1)], 0
    for value in values:
        found, offset, done = 0, 0, None
        for item in _items(value):
            where = text.find(item[:_FIND_CHARS], found) if item else -1
            shown = _common_prefix(text, where, item) if where >= 0 else 0
            if shown:  # the query's words that hold the item's text as it is, and those
                # between it and the list's text before (its markup, gone with it)
                own = max(int(starts.searchsorted(where, "right")) - 1, 0)
                first = own if done is None else min(own, done)
                done = int(starts.searchsorted(where + shown))
                caps.append((ends[first:done] - where).clip(ends[own] - where, shown) + offset)
                weights.append(lengths[first:done])
                held += int(lengths[first:done].sum())
                found = where + shown
            caps.append(np.array([offset + len(item)]))
            weights.append(np.array([rate * (len(item) - shown)]))
            offset += len(item)
    cap_array, weight_array = np.concatenate(caps), np.concatenate(weights)
    if len(values) > 1:  # fields' caps interleave; a field's are in order
        order = cap_array.argsort(kind="stable")
        cap_array, weight_array = cap_array[order], weight_array[order]
    return Estimate(cap_array, weight_array.cumsum(), tokens - held)


@dataclass(frozen=True, slots=True)
class Probe:
    """An exact render at one cap: whether it fits, its tokens (None: the render changed the
    target or the choices) and what the caller keeps of it."""

    fits: bool
    tokens: int | None
    kept: object = None


def search(cuts: Cuts, plan: Estimate, budget: int,
           probe: Callable[[list[int]], list[Probe]]) -> tuple[int, object] | None:
    """The largest cap below the first that does not fit, and what the probe of its render
    kept; (`UNFIT`, None) if cap 0 does not fit (as the bisection, which tries it first); None
    if `MAX_ROUNDS` more rounds of renders did not find two neighbouring cuts, one fitting and
    the next not. The query itself, the longest field uncut, does not fit. Each round renders
    the cut the estimate names as the last that fits and the one after it (`probe` measures
    them together: their texts share all but a word)."""
    [found] = probe([0])
    if not found.fits:
        return UNFIT, None
    lo, hi, kept = 0, cuts.longest, found.kept  # cuts at lo fit, at hi do not
    offset = plan.offset  # anchored at the query's own count: cap 0 is far from the cut
    for _ in range(MAX_ROUNDS):
        above = cuts.after(lo)
        if above >= hi:
            return hi - 1, kept
        guess = cuts.start(plan.last_within(budget - offset))
        cap = guess if lo < guess < hi else above if guess <= lo else cuts.start(hi - 1)
        caps = [cap, after] if (after := cuts.after(cap)) < hi else [cap]
        for cap, found in zip(caps, probe(caps), strict=True):
            if found.tokens is not None:  # anchored at an exact count from now on
                offset = found.tokens - plan.weight(cap)
            if not found.fits:
                hi = cap
                break
            lo, kept = cap, found.kept
    return (hi - 1, kept) if cuts.after(lo) >= hi else None
