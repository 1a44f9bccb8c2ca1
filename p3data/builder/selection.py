"""Which examples a capped task split keeps (xP3's cap): a pure function of the run's seed and
of each row's number, so that any runner and any sharding keep the same ones.

xP3's recipe shuffled each (config, split, template) without a seed, rendered the first
500,000 rows (wmt22's: 50,000), its candidates, and kept the 100,000 examples whose inputs sort
first. Here the shuffle is a keyed hash of the row number (`row_hashes`, keyed by the seed, the
dataset split and the template, so different templates see different rows, as in xP3): the
candidates are the `pool` rows of smallest hash, which the driver finds from the split's row
count alone (`Selection.last`), so every shard knows its own. The kept examples are the `cap`
of smallest sort key over the whole split, which takes every part's keys (`cap_threshold`):

- `xp3`, xP3's own rule: the inputs text, in code point order (as `datasets`' sort of a string
  column), ties by row number;
- `uniform`: the row's hash, so a uniform sample of the examples that render.
"""

from __future__ import annotations

import hashlib
import heapq
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from p3data.builder.defaults import SELECTIONS
from p3data.builder.work_folder import PartMeta, read_keys
from p3data.datasets.catalog import DatasetEntry
from p3data.taskset import SplitCap

XP3, UNIFORM = SELECTIONS
# Why a row of a capped split gives no example (besides the row rule's and the step's reasons):
NOT_SELECTED = "not_selected"  # not among the split's candidates for the template
OVER_CAP = "over_cap"  # rendered, but past the cap
_PERSON = b"p3data-select"  # BLAKE2b's personalization: these keys, not another use's
_CHUNK = 1 << 22  # row numbers hashed at a time on the driver

SortKey = tuple  # (the inputs text or the row's hash, the row number): smaller is kept first


def selection_key(seed: int, entry: DatasetEntry, split: str, template_id: str) -> int:
    """The key of one template's row hashes on one dataset split (fields length-prefixed)."""
    parts = [str(seed), entry.dataset, entry.subset or "", split, template_id]
    text = "".join(f"{len(part)}:{part}" for part in parts)
    digest = hashlib.blake2b(text.encode(), digest_size=8, person=_PERSON).digest()
    return int.from_bytes(digest, "little")


def row_hashes(key: int, rows: np.ndarray) -> np.ndarray:
    """SplitMix64's finalizer of `key + row`, for many rows at once: a bijection of 64-bit
    numbers, so no two rows tie, and integer arithmetic, the same on every numpy (the driver
    hashes every row number of a split: BLAKE2b's row at a time would take seconds a split)."""
    x = rows.astype(np.uint64) + np.uint64(key)
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def last_candidate(key: int, rows: int, pool: int) -> int | None:
    """The largest of the `pool` smallest hashes of rows 0..rows-1: a row is a candidate when
    its hash is at most this (None: every row is one)."""
    if rows <= pool:
        return None
    smallest = np.empty(0, np.uint64)
    for start in range(0, rows, _CHUNK):
        numbers = np.arange(start, min(rows, start + _CHUNK), dtype=np.uint64)
        hashes = np.concatenate([smallest, row_hashes(key, numbers)])
        smallest = np.partition(hashes, pool - 1)[:pool] if len(hashes) > pool else hashes
    return int(smallest.max())


@dataclass(frozen=True)
class Selection:
    """How one template's task split over a dataset split of `rows` rows chooses its examples
    (planned on the driver: `plan_selection`)."""

    rule: str  # one of SELECTIONS
    key: int  # of its row hashes
    cap: int
    last: int | None  # the largest hash of a candidate (None: every row is one)
    cuts: bool  # it may render more examples than the cap: its parts record their sort keys

    def candidates(self, start: int, stop: int) -> np.ndarray | None:
        """Whether each of rows start..stop-1 is a candidate (None: every one is)."""
        if self.last is None:
            return None
        hashes = row_hashes(self.key, np.arange(start, stop, dtype=np.uint64))
        return hashes <= np.uint64(self.last)

    def sort_keys(self, inputs: Sequence[str], rows: Sequence[int]) -> list[SortKey]:
        """The sort keys of the examples rendered from `rows`, whose inputs are `inputs`."""
        if self.rule == XP3:
            return list(zip(inputs, rows, strict=True))
        hashes = row_hashes(self.key, np.array(rows, dtype=np.uint64)).tolist()
        return list(zip(hashes, rows, strict=True))


def plan_selection(rule: str, cap: SplitCap, *, seed: int, entry: DatasetEntry, split: str,
                   template_id: str, rows: int) -> Selection:
    """A template's selection on a dataset split of `rows` rows, under `cap` (the run's)."""
    key = selection_key(seed, entry, split, template_id)
    return Selection(rule, key, cap.cap, last_candidate(key, rows, cap.pool),
                     cuts=min(rows, cap.pool) > cap.cap)


def selection_record(rule: str, run_cap: int | None, cap: SplitCap | None) -> dict | None:
    """How a task's splits are capped, as its fingerprint and manifest record it: None for a
    task without a cap (T0's), so that their fingerprints and manifests stay as they were."""
    if cap is None:
        return None
    cap = cap.scaled(run_cap)
    return {"rule": rule, "cap": cap.cap, "pool": cap.pool}


def cap_threshold(keys: Iterable[SortKey], cap: int) -> SortKey:
    """The `cap`-th smallest of `keys`, the largest kept (streamed, holding `cap` of them)."""
    return heapq.nsmallest(cap, keys)[-1]


def capped_meta(meta: PartMeta, keys: list[tuple[SortKey, int, int]],
                threshold: SortKey) -> PartMeta:
    """A capped part's record of its examples with a sort key at most `threshold` (the others
    counted as `OVER_CAP`)."""
    sizes = [(n_in, n_out) for key, n_in, n_out in keys if key <= threshold]
    capped = replace(meta, kept=len(sizes), examples=0, inputs_tokens=0, inputs_max_tokens=0,
                     targets_tokens=0, targets_max_tokens=0,
                     dropped={**meta.dropped, OVER_CAP: meta.kept - len(sizes)})
    for n_in, n_out in sizes:
        capped.add_example(n_in, n_out)
    return capped


def cap_parts(metas: list[PartMeta], groups: Iterable[range], cap: int,
              key_paths: Sequence[str]) -> list[SortKey | None]:
    """Keep at most `cap` examples of each group of a split's parts (a source split's: xP3
    capped each split apart): `metas` become the capped parts'. Returns each part's threshold,
    the largest sort key it keeps (None: it keeps all)."""
    thresholds: list[SortKey | None] = [None] * len(metas)
    for parts in groups:
        if sum(metas[index].kept for index in parts) <= cap:
            continue
        threshold = cap_threshold(
            (key for index in parts for key, *_ in read_keys(key_paths[index])), cap)
        for index in parts:
            metas[index] = capped_meta(metas[index], read_keys(key_paths[index]), threshold)
            thresholds[index] = threshold
    return thresholds
