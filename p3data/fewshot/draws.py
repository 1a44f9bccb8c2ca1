"""Random draws that are a pure function of (seed, task, split, query row): `Draws`.

FLAN drew exemplars from a shuffle buffer fed in file order, and picked a separator with an
unseeded `random.choice` at import: the result depended on sharding, workers and process. Here
each query gets its own stream, a keyed hash (BLAKE2b) of a counter, so no state is shared
between queries: the same draws whatever the sharding, rows per shard, workers, runner or order.
A keyed hash rather than numpy's Philox: numpy promises no stable stream for `Generator`'s
methods across versions, and p3data runs on numpy 1 and 2.
"""

from __future__ import annotations

import hashlib

_PERSON = b"p3data-fewshot"  # BLAKE2b's personalization: these draws, not another use's
_SPACE = 1 << 64


def draw_key(seed: int, task: str, split: str, row: int) -> bytes:
    """The key of one query's draws (unambiguous: the fields are length-prefixed)."""
    parts = [str(seed), task, split, str(row)]
    text = "".join(f"{len(part)}:{part}" for part in parts)
    return hashlib.blake2b(text.encode(), digest_size=16, person=_PERSON).digest()


class Draws:
    """A stream of exactly uniform whole numbers, keyed: draw `n` of a key is always the same."""

    __slots__ = ("_hash", "count")

    def __init__(self, key: bytes):
        self._hash = hashlib.blake2b(key=key, digest_size=8, person=_PERSON)
        self.count = 0  # draws taken so far

    def _next(self) -> int:
        h = self._hash.copy()
        h.update(self.count.to_bytes(8, "little"))
        self.count += 1
        return int.from_bytes(h.digest(), "little")

    def below(self, n: int) -> int:
        """A whole number in [0, n), each equally likely: 64-bit values past the largest
        multiple of n are drawn again, so the modulo favours no number."""
        if n <= 0:
            raise ValueError(f"nothing to draw from: n={n}")
        limit = _SPACE - _SPACE % n
        while (value := self._next()) >= limit:
            pass
        return value % n
