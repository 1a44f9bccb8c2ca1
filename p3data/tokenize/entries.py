"""What the memos hold for a word, a sentence or a text: its ids packed as varints, and how far
float32 rounding of its score can be trusted (see `segment`)."""

from __future__ import annotations

import math
from typing import NamedTuple

from p3data.varints import packed

# Float32 exponents of a text's score magnitude (see `segment`): beyond any text's, below any.
ALWAYS, NEVER = 1 << 20, -(1 << 20)


class Entry(NamedTuple):
    """A word's, sentence's or text's ids packed as varints, how many are neither 0 nor 1, the
    magnitude of its score (a bound on how much it adds to a text's), and the largest float32
    exponent of a text's magnitude it can sit in."""

    varints: bytes
    tokens: int
    magnitude: float
    exponent: int


def entry_of(ids: list[int], magnitude: float = 0.0, exponent: int = ALWAYS) -> Entry:
    """A word's entry."""
    return Entry(packed(ids), len(ids) - ids.count(0) - ids.count(1), magnitude, exponent)


_EMPTY = Entry(b"", 0, 0.0, ALWAYS)


def joined(parts: list[Entry]) -> Entry:
    """The entry of a sentence or a text made of these (their magnitudes' sum bounds its)."""
    if len(parts) == 1:
        return parts[0]
    if not parts:
        return _EMPTY
    varints, tokens, magnitudes, exponents = zip(*parts, strict=False)  # 4 fields each
    return Entry(b"".join(varints), sum(tokens), sum(magnitudes), min(exponents))



def trusted(entry: Entry) -> bool:
    """Whether the entry's words keep their ids at its score's magnitude: joined ids are the
    text's ids only where float32 rounding cannot move a tie (see `segment`)."""
    return math.frexp(entry.magnitude)[1] <= entry.exponent
