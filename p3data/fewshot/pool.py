"""The exemplars one template can show: its renders of a pool split, measured once.

Which split: the train split of the query's dataset (ANLI: the round's), rendered by the query's
template and kept by T0's row rule; a dataset without one (story_cloze) lends the query's own
split, minus the query (GPT-3's rule). Never another task's split.

Each exemplar is rendered and tokenized once per template, not once per query that shows it:
the pool keeps its text (`input + exemplar_separator + target`) in one UTF-8 blob and, in
numpy arrays sorted by (cost, row), its row number, its cost in tokens (with the example
separator that follows it) and a hash of its whitespace-normalized input. Sorted by cost, the
exemplars that fit a budget are a prefix, found by bisection. No Python object per exemplar:
`save`/`load` put the pool in files that load memory-mapped, so a worker's memory stays flat.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from p3data.fewshot.settings import FewshotSettings
from p3data.t0 import TaskSpec
from p3data.templates import NO_LABEL, Outcome, Rendered
from p3data.tokenize import Packed, Tokenizer

TRAIN = "train"
_CONTINUATION = bytes(range(0x80, 0x100))  # varint bytes that are not a varint's last
_ARRAYS = ("rows", "costs", "keys", "offsets", "sorted_rows", "row_positions", "sorted_keys",
           "key_positions")
TEXTS = "texts.bin"
POOL_FILES = (*(f"{name}.npy" for name in _ARRAYS), TEXTS)  # what `save` writes


def id_count(ids: Packed) -> int:
    """How many ids a packed run holds (each varint ends in a byte below 0x80)."""
    return len(ids.varints.translate(None, _CONTINUATION))


def input_key(text: str) -> int:
    """A 64-bit hash of the text with its whitespace normalized: two inputs that differ only
    in spacing have one key. A collision can only keep an exemplar out, never let one in."""
    normalized = " ".join(text.split()).encode()
    return int.from_bytes(hashlib.blake2b(normalized, digest_size=8).digest(), "little")


@dataclass(frozen=True)
class PoolSource:
    """Where a task split's exemplars come from: a source split, and whether it is the
    query's own (then the query's row is kept out)."""

    split: str
    same_split: bool


def pool_source(spec: TaskSpec, split: str) -> PoolSource:
    """The train split of the task's dataset; without one, the query's own split."""
    query = spec.split_mapping[split]
    train = spec.split_mapping.get(TRAIN)
    return PoolSource(query, True) if train is None else PoolSource(train, train == query)


def is_usable(outcome: Outcome) -> bool:
    """An exemplar must show an answer: a kept render (T0's row rule) whose target is not the
    `<NO LABEL>` T0 gives hidden test labels."""
    return isinstance(outcome, Rendered) and outcome.targets != NO_LABEL


class ExemplarPool:
    """The usable exemplars of one (dataset split, template), sorted by (cost, row)."""

    def __init__(self, arrays: dict[str, np.ndarray], blob: bytes | np.ndarray):
        self.rows: np.ndarray = arrays["rows"]  # int64, row numbers in the pool split
        self.costs: np.ndarray = arrays["costs"]  # int64, tokens with the example separator
        self.keys: np.ndarray = arrays["keys"]  # uint64, `input_key` of the exemplar's input
        self._offsets: np.ndarray = arrays["offsets"]  # int64, len + 1: text spans in the blob
        # rows and keys in order, and the positions they are at: bisected per query
        self._sorted_rows, self._row_positions = arrays["sorted_rows"], arrays["row_positions"]
        self._sorted_keys, self._key_positions = arrays["sorted_keys"], arrays["key_positions"]
        self._blob = blob

    def __len__(self) -> int:
        return len(self.rows)

    @functools.cached_property
    def distinct_inputs(self) -> int:
        """How many different inputs the exemplars have: at most this many fit one prompt."""
        keys = self._sorted_keys
        return int(np.count_nonzero(keys[1:] != keys[:-1])) + 1 if len(keys) else 0

    def text(self, position: int) -> str:
        """The exemplar's text: its input, the exemplar separator, its target."""
        return self.text_bytes(position).decode()

    def fitting(self, budget: int) -> int:
        """How many exemplars cost at most `budget` tokens: they are positions [0, result)."""
        return int(np.searchsorted(self.costs, budget, side="right"))

    def position_of_row(self, row: int) -> int | None:
        ordered = self._sorted_rows
        i = int(np.searchsorted(ordered, row))
        return int(self._row_positions[i]) if i < len(ordered) and ordered[i] == row else None

    def positions_with_key(self, key: int) -> np.ndarray:
        """Positions of the exemplars whose input has this key (e.g. the query's)."""
        ordered, key = self._sorted_keys, np.uint64(key)
        lo, hi = np.searchsorted(ordered, key), np.searchsorted(ordered, key, side="right")
        return self._key_positions[lo:hi]

    def save(self, folder: str | Path) -> None:
        """Write the pool as `.npy` arrays and a text blob (`load` maps them)."""
        folder = Path(folder)
        arrays = {"rows": self.rows, "costs": self.costs, "keys": self.keys,
                  "offsets": self._offsets, "sorted_rows": self._sorted_rows,
                  "row_positions": self._row_positions, "sorted_keys": self._sorted_keys,
                  "key_positions": self._key_positions}
        _save_arrays(folder, arrays)
        (folder / TEXTS).write_bytes(bytes(self._blob))

    def text_bytes(self, position: int) -> bytes:
        """The exemplar's text, UTF-8 encoded."""
        start, stop = self._offsets[position], self._offsets[position + 1]
        return bytes(self._blob[start:stop])

    @classmethod
    def load(cls, folder: str | Path) -> ExemplarPool:
        """A saved pool, memory-mapped: pages are read as exemplars are drawn."""
        folder = Path(folder)
        arrays = {name: np.load(folder / f"{name}.npy", mmap_mode="r") for name in _ARRAYS}
        blob_path = folder / TEXTS
        blob = (np.memmap(blob_path, dtype=np.uint8, mode="r") if blob_path.stat().st_size
                else b"")
        return cls(arrays, blob)


class PoolBuilder:
    """Collects a pool split's renders by one template, batch by batch, in any order."""

    def __init__(self, settings: FewshotSettings, tokenizer: Tokenizer):
        self.settings = settings
        self.tokenizer = tokenizer
        self._rows: list[int] = []
        self._costs: list[int] = []
        self._keys: list[int] = []
        self._texts: list[bytes] = []

    def add(self, outcomes: Sequence[Outcome]) -> None:
        """One batch of the template's outcomes over pool rows (each row once in all)."""
        usable = [o for o in outcomes if is_usable(o)]
        texts = [o.inputs + self.settings.exemplar_separator + o.targets for o in usable]
        ids = self.tokenizer.encode_packed([t + self.settings.example_separator for t in texts])
        self._rows += [o.index for o in usable]
        self._costs += [id_count(i) for i in ids]
        self._keys += [input_key(o.inputs) for o in usable]
        self._texts += [t.encode() for t in texts]

    def finish(self) -> ExemplarPool:
        """The pool, sorted by (cost, row): the same whichever order batches came in."""
        order, arrays = _sorted_arrays(np.array(self._rows, dtype=np.int64),
                                       np.array(self._costs, dtype=np.int64),
                                       np.array(self._keys, dtype=np.uint64))
        texts = [self._texts[i] for i in order]
        arrays["offsets"] = np.zeros(len(texts) + 1, dtype=np.int64)
        np.cumsum([len(t) for t in texts], out=arrays["offsets"][1:])
        return ExemplarPool(arrays, b"".join(texts))


def _sorted_arrays(rows: np.ndarray, costs: np.ndarray,
                   keys: np.ndarray) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """The order that sorts exemplars by (cost, row), and a pool's arrays but the offsets."""
    order = np.lexsort((rows, costs))
    rows, costs, keys = rows[order], costs[order], keys[order]
    by_row, by_key = np.argsort(rows, kind="stable"), np.argsort(keys, kind="stable")
    return order, {"rows": rows, "costs": costs, "keys": keys,
                   "sorted_rows": rows[by_row], "row_positions": by_row,
                   "sorted_keys": keys[by_key], "key_positions": by_key}


def _save_arrays(folder: Path, arrays: dict[str, np.ndarray]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name in _ARRAYS:
        np.save(folder / f"{name}.npy", np.ascontiguousarray(arrays[name]))


def merge_pools(parts: Sequence[ExemplarPool], folder: str | Path) -> None:
    """Save as one pool parts built from disjoint rows of a split (e.g. one per source shard):
    the pool `build_pool` makes of all their rows, its texts copied part by part into place
    rather than held in memory."""
    order, arrays = _sorted_arrays(np.concatenate([p.rows for p in parts] + [_NONE]),
                                   np.concatenate([p.costs for p in parts] + [_NONE]),
                                   np.concatenate([p.keys for p in parts] + [_NONE_KEYS]))
    part_of = np.repeat(np.arange(len(parts)), [len(p) for p in parts])[order]
    position = np.concatenate([np.arange(len(p)) for p in parts] + [_NONE])[order]
    lengths = np.concatenate([np.diff(p._offsets) for p in parts] + [_NONE])[order]
    arrays["offsets"] = np.zeros(len(order) + 1, dtype=np.int64)
    np.cumsum(lengths, out=arrays["offsets"][1:])
    folder = Path(folder)
    _save_arrays(folder, arrays)
    with (folder / TEXTS).open("wb") as texts:
        for k, i in zip(part_of.tolist(), position.tolist(), strict=True):
            texts.write(parts[k].text_bytes(i))


_NONE, _NONE_KEYS = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.uint64)


def build_pool(batches: Iterable[Sequence[Outcome]], settings: FewshotSettings,
               tokenizer: Tokenizer) -> ExemplarPool:
    """The pool of one template from its outcomes over the pool split, in batches."""
    builder = PoolBuilder(settings, tokenizer)
    for outcomes in batches:
        builder.add(outcomes)
    return builder.finish()
