"""The exemplars one template can show: its renders of a pool split, measured once.

Which split: the train split of the query's dataset (ANLI: the round's), rendered by the query's
template and kept by T0's row rule; a dataset without one (story_cloze) lends the query's own
split, minus the query (GPT-3's rule). Never another task's split.

Each exemplar is rendered and tokenized once per template, not once per query that shows it:
the pool keeps its text (`input + exemplar_separator + target`) in one UTF-8 blob, the ids of
that text and the example separator after it in another (packed varints: a prompt's ids are
joined from them where the model allows, `Tokenizer.join`) and, in numpy arrays sorted by
(cost, row), its row number, its cost in tokens (those ids), what the tokenizer's guard needs
to join them, and a hash of its whitespace-normalized input. Sorted by cost, the exemplars that
fit a budget are a prefix, found by bisection. No Python object per exemplar: `save`/`load` put
the pool in files that load memory-mapped, so a worker's memory stays flat.
"""

from __future__ import annotations

import functools
import hashlib
import io
import mmap
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np

from p3data.fewshot.settings import FewshotSettings
from p3data.t0 import TaskSpec
from p3data.taskset import single_source
from p3data.templates.render import NO_LABEL, Outcome, Rendered
from p3data.tokenize import Tokenizer
from p3data.tokenize.entries import Entry
from p3data.tokenize.tokenizer import Packed

TRAIN = "train"
_CONTINUATION = bytes(range(0x80, 0x100))  # varint bytes that are not a varint's last
_ARRAYS = ("rows", "costs", "keys", "offsets", "sorted_rows", "row_positions", "sorted_keys",
           "key_positions", "id_offsets", "tokens", "magnitudes", "exponents")
# Per exemplar, a span of each blob file, between consecutive values of its offsets array.
_BLOBS = {"texts.bin": "offsets", "ids.bin": "id_offsets"}
POOL_FILES = (*(f"{name}.npy" for name in _ARRAYS), *_BLOBS)  # what `save` writes
Blob = bytes | mmap.mmap


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
    use = "a few-shot variant's exemplar pool"
    query = single_source(spec, split, use=use)
    train = single_source(spec, TRAIN, use=use) if TRAIN in spec.split_mapping else None
    return PoolSource(query, True) if train is None else PoolSource(train, train == query)


def is_usable(outcome: Outcome) -> bool:
    """An exemplar must show an answer: a kept render (T0's row rule) whose target is not the
    `<NO LABEL>` T0 gives hidden test labels."""
    return isinstance(outcome, Rendered) and outcome.targets != NO_LABEL


class ExemplarPool:
    """The usable exemplars of one (dataset split, template), sorted by (cost, row)."""

    def __init__(self, arrays: dict[str, np.ndarray], blobs: dict[str, Blob]):
        # Plain arrays over the same memory: a memmap's own indexing is Python code.
        arrays = {name: np.asarray(array) for name, array in arrays.items()}
        self.arrays, self.blobs = arrays, blobs
        self.rows: np.ndarray = arrays["rows"]  # int64, row numbers in the pool split
        self.costs: np.ndarray = arrays["costs"]  # int64, ids with the example separator
        self.keys: np.ndarray = arrays["keys"]  # uint64, `input_key` of the exemplar's input
        self._offsets: np.ndarray = arrays["offsets"]  # int64, len + 1: text spans in the blob
        # rows and keys in order, and the positions they are at: bisected per query
        self._sorted_rows, self._row_positions = arrays["sorted_rows"], arrays["row_positions"]
        self._sorted_keys, self._key_positions = arrays["sorted_keys"], arrays["key_positions"]
        # the ids' spans, and their `Entry` fields (`Tokenizer.join` guards with them)
        self._id_offsets, self._tokens = arrays["id_offsets"], arrays["tokens"]
        self._magnitudes, self._exponents = arrays["magnitudes"], arrays["exponents"]
        self._texts, self._ids = blobs["texts.bin"], blobs["ids.bin"]

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

    def row(self, position: int) -> int:
        """The exemplar's row number in the pool split."""
        return int(self.rows[position])

    def entry(self, position: int) -> Entry:
        """The ids of the exemplar's text and the example separator after it, as the
        tokenizer gave them (`Tokenizer.join` joins them into a prompt's)."""
        start, stop = self._id_offsets[position:position + 2].tolist()
        return Entry(self._ids[start:stop], int(self._tokens[position]),
                     float(self._magnitudes[position]), int(self._exponents[position]))

    def fitting(self, budget: int) -> int:
        """How many exemplars cost at most `budget` tokens: they are positions [0, result)."""
        return int(self.costs.searchsorted(budget, side="right"))

    def position_of_row(self, row: int) -> int | None:
        ordered = self._sorted_rows
        i = int(ordered.searchsorted(row))
        return int(self._row_positions[i]) if i < len(ordered) and ordered[i] == row else None

    def positions_with_key(self, key: int) -> np.ndarray:
        """Positions of the exemplars whose input has this key (e.g. the query's)."""
        ordered, key = self._sorted_keys, np.uint64(key)
        lo, hi = ordered.searchsorted(key), ordered.searchsorted(key, side="right")
        return self._key_positions[lo:hi]

    def save(self, folder: str | Path) -> None:
        """Write the pool as `.npy` arrays and blobs (`load` maps them)."""
        folder = Path(folder)
        _save_arrays(folder, self.arrays)
        for name, blob in self.blobs.items():
            (folder / name).write_bytes(blob[:])

    def text_bytes(self, position: int) -> bytes:
        """The exemplar's text, UTF-8 encoded."""
        start, stop = self._offsets[position:position + 2].tolist()
        return self._texts[start:stop]

    def span(self, blob: str, position: int) -> bytes:
        """The exemplar's bytes in a blob file (`merge_pools` copies them)."""
        start, stop = self.arrays[_BLOBS[blob]][position:position + 2].tolist()
        return self.blobs[blob][start:stop]

    @classmethod
    def load(cls, folder: str | Path) -> ExemplarPool:
        """A saved pool, memory-mapped: pages are read as exemplars are drawn."""
        folder = Path(folder)
        arrays = {name: np.load(folder / f"{name}.npy", mmap_mode="r") for name in _ARRAYS}
        return cls(arrays, {name: _mapped(folder / name) for name in _BLOBS})


def _mapped(path: Path) -> Blob:
    """A file's bytes, memory-mapped (an empty file cannot be)."""
    with path.open("rb") as handle:
        return mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) if path.stat().st_size \
            else b""


class PoolBuilder:
    """Collects a pool split's renders by one template, batch by batch, in any order: their
    texts and ids end to end in two blobs, in memory or, with `spill` (a local folder), in
    files there (the pool stage builds every template's pool of a source shard at once, and
    so holds none of their texts), the rest in columns."""

    def __init__(self, settings: FewshotSettings, tokenizer: Tokenizer,
                 spill: Path | None = None):
        self.settings = settings
        self.tokenizer = tokenizer
        self._columns: dict[str, list] = {name: [] for name in _COLUMNS}
        self._lengths: dict[str, list[int]] = {name: [] for name in _BLOBS}
        if spill is not None:
            spill.mkdir(parents=True, exist_ok=True)
        self._blobs: dict[str, BinaryIO] = {
            name: (spill / name).open("w+b") if spill is not None else io.BytesIO()
            for name in _BLOBS}

    def __len__(self) -> int:
        return len(self._columns["rows"])

    def add(self, outcomes: Sequence[Outcome]) -> None:
        """One batch of the template's outcomes over pool rows (each row once in all)."""
        usable = [o for o in outcomes if is_usable(o)]
        texts = [o.inputs + self.settings.exemplar_separator + o.targets for o in usable]
        ids = self.tokenizer.encode_packed([t + self.settings.example_separator for t in texts])
        columns = self._columns
        columns["rows"] += [o.index for o in usable]
        columns["costs"] += [id_count(i) for i in ids]
        columns["keys"] += [input_key(o.inputs) for o in usable]
        columns["tokens"] += [e.tokens for e in ids]
        columns["magnitudes"] += [e.magnitude for e in ids]
        columns["exponents"] += [e.exponent for e in ids]
        for name, parts in (("texts.bin", [t.encode() for t in texts]),
                            ("ids.bin", [e.varints for e in ids])):
            self._blobs[name].write(b"".join(parts))
            self._lengths[name] += map(len, parts)

    def finish(self) -> ExemplarPool:
        """The pool, sorted by (cost, row): the same whichever order batches came in."""
        arrays, spans = self._sorted()
        return ExemplarPool(arrays, {name: b"".join(parts) for name, parts in spans.items()})

    def save(self, folder: str | Path) -> None:
        """Write the pool into `folder`, as `ExemplarPool.save` writes `finish()`'s, its texts
        and ids copied into place span by span (`spill`'s files are read memory-mapped)."""
        arrays, spans = self._sorted()
        folder = Path(folder)
        _save_arrays(folder, arrays)
        for name, parts in spans.items():
            with (folder / name).open("wb") as blob:
                for part in parts:
                    blob.write(part)

    def _sorted(self) -> tuple[dict[str, np.ndarray], dict[str, Iterator[bytes]]]:
        """The pool's arrays, sorted by (cost, row), and its blobs' spans in that order."""
        order, arrays = _sorted_arrays({name: np.array(values, dtype=_COLUMNS[name])
                                        for name, values in self._columns.items()})
        spans = {}
        for name, offsets in _BLOBS.items():
            collected = _offsets(np.array(self._lengths[name], dtype=np.int64))
            arrays[offsets] = _offsets(np.diff(collected)[order])
            spans[name] = _spans(self._read(name), collected, order)
        return arrays, spans

    def _read(self, name: str) -> Blob:
        """A blob's bytes as collected: in memory, or its spill file mapped."""
        blob = self._blobs[name]
        if isinstance(blob, io.BytesIO):
            return blob.getbuffer().tobytes()
        blob.flush()
        return mmap.mmap(blob.fileno(), 0, access=mmap.ACCESS_READ) if blob.tell() else b""


def _spans(data: Blob, offsets: np.ndarray, order: np.ndarray) -> Iterator[bytes]:
    """The spans of `data` between consecutive `offsets`, in `order`."""
    bounds = offsets.tolist()
    for i in order.tolist():
        yield data[bounds[i]:bounds[i + 1]]


# The arrays with one value per exemplar, and their types.
_COLUMNS = {"rows": np.int64, "costs": np.int64, "keys": np.uint64, "tokens": np.int64,
            "magnitudes": np.float64, "exponents": np.int64}


def _sorted_arrays(columns: dict[str, np.ndarray]) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """The order that sorts exemplars by (cost, row), and a pool's arrays but the offsets,
    from its per-exemplar columns (`_COLUMNS`) in any order."""
    order = np.lexsort((columns["rows"], columns["costs"]))
    arrays = {name: columns[name][order] for name in _COLUMNS}
    rows, keys = arrays["rows"], arrays["keys"]
    by_row, by_key = np.argsort(rows, kind="stable"), np.argsort(keys, kind="stable")
    return order, {**arrays, "sorted_rows": rows[by_row], "row_positions": by_row,
                   "sorted_keys": keys[by_key], "key_positions": by_key}


def _offsets(lengths: np.ndarray) -> np.ndarray:
    """Spans of consecutive pieces of these lengths: len + 1 offsets, from 0."""
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return offsets


def _save_arrays(folder: Path, arrays: dict[str, np.ndarray]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name in _ARRAYS:
        np.save(folder / f"{name}.npy", np.ascontiguousarray(arrays[name]))


def merge_pools(parts: Sequence[ExemplarPool], folder: str | Path) -> None:
    """Save as one pool parts built from disjoint rows of a split (e.g. one per source shard):
    the pool `build_pool` makes of all their rows, its texts and ids copied part by part into
    place rather than held in memory."""
    order, arrays = _sorted_arrays({name: _concatenated([p.arrays[name] for p in parts], dtype)
                                    for name, dtype in _COLUMNS.items()})
    part_of = np.repeat(np.arange(len(parts)), [len(p) for p in parts])[order]
    position = _concatenated([np.arange(len(p)) for p in parts])[order]
    for offsets in _BLOBS.values():
        arrays[offsets] = _offsets(_concatenated([np.diff(p.arrays[offsets])
                                                  for p in parts])[order])
    folder = Path(folder)
    _save_arrays(folder, arrays)
    for name in _BLOBS:
        with (folder / name).open("wb") as blob:
            for k, i in zip(part_of.tolist(), position.tolist(), strict=True):
                blob.write(parts[k].span(name, i))


def _concatenated(arrays: list[np.ndarray], dtype: type = np.int64) -> np.ndarray:
    """The arrays end to end (of `dtype` if there are none)."""
    return np.concatenate([*arrays, np.zeros(0, dtype)])


def build_pool(batches: Iterable[Sequence[Outcome]], settings: FewshotSettings,
               tokenizer: Tokenizer) -> ExemplarPool:
    """The pool of one template from its outcomes over the pool split, in batches."""
    builder = PoolBuilder(settings, tokenizer)
    for outcomes in batches:
        builder.add(outcomes)
    return builder.finish()
