"""A cache against a downloaded copy of P3, example by example (`p3data compare`).

A copy of P3 is either its seqio caches, `[data/]<task>/<split>.tfrecord-00000-of-00001`, or
the parquet files the Hub converted them to, `[data/]<task>/<split>-00000-of-00001.parquet`.
Both P3 and p3data keep each split's examples in source row order, so examples are compared
in order, streamed (a split is never held in memory): token ids exactly; the two texts exactly
and also without surrounding whitespace, because P3's tasks cached before 2021-10-01 keep it
(`'\\ntrolley'`) where their token ids are the same (T5's SentencePiece drops it); and
`answer_choices`, `idx`, `is_correct`, `weight` where either side has them. A difference in
counts, ids, stripped text or those fields fails; whitespace alone is reported, not failed.
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import zip_longest
from typing import TextIO

import pyarrow as pa
import pyarrow.parquet as pq

from p3data import fs
from p3data.errors import P3DataError
from p3data.format.cache_folder import task_names
from p3data.format.example_decoding import ExampleDecodeError
from p3data.format.features import (
    ANSWER_CHOICES,
    IDX,
    INPUTS,
    INPUTS_TEXT,
    IS_CORRECT,
    TARGETS,
    TARGETS_TEXT,
    WEIGHT,
)
from p3data.format.shard_format import SHARD_NAME
from p3data.p3_release.cached import (
    CachedTask,
    cached_tasks,
    entries_of,
    features_of,
    open_data,
    records,
    row_record,
    values_of,
)
from p3data.progress import ProgressLine
from p3data.tables import text_table

PARQUET_SHARD = re.compile(r"(?P<split>.+)-(?P<index>\d{5})-of-(?P<count>\d{5})\.parquet")
TOKENS, TEXTS, OTHERS = (INPUTS, TARGETS), (INPUTS_TEXT, TARGETS_TEXT), (
    ANSWER_CHOICES, IDX, IS_CORRECT, WEIGHT)
# What is compared, as the table's columns say it; every kind but "text" fails a split.
KINDS = {"ids": "ids", "text": "text", "stripped": "text stripped", "other": "other fields"}
PARQUET_BATCH = 1024  # rows decoded at a time
SHOWN_CHARS, SHOWN_VALUES = 60, 10  # how much of a differing value is printed


@dataclass(frozen=True)
class P3Split:
    """One split of a task in the copy of P3: its shards in order, TFRecord or parquet."""

    shards: tuple[str, ...]
    parquet: bool

    def examples(self) -> Iterator[bytes]:
        """Its examples in order, serialized."""
        if not self.parquet:
            return records(self.shards)
        return (record for path in self.shards for record in _parquet_records(path))


def _parquet_records(path: str) -> Iterator[bytes]:
    with open_data(path) as handle:
        try:
            for batch in pq.ParquetFile(handle).iter_batches(batch_size=PARQUET_BATCH):
                yield from map(row_record, batch.to_pylist())
        except pa.ArrowException as err:
            raise P3DataError(f"{path}: not a readable parquet file ({err})") from None


def find_p3(p3_dir: str) -> dict[str, dict[str, P3Split]]:
    """task -> split -> its shards, in the copy of P3 at `p3_dir` (TFRecords where a split has
    both kinds); an error if it holds neither layout or a split lacks shards."""
    root = fs.canonical(fs.without_trailing_slash(p3_dir))
    if not fs.exists(root):
        raise P3DataError(f"{p3_dir}: no such folder; give a copy of P3 (bigscience/P3)")
    found: dict[tuple[str, str, bool], dict[int, str]] = {}  # (task, split, parquet) -> shards
    totals: dict[tuple[str, str, bool], set[int]] = {}
    named = [(path, match) for path in fs.walk_files(root)
             if (match := SHARD_NAME.fullmatch(fs.name_of(path))
                 or PARQUET_SHARD.fullmatch(fs.name_of(path)))]
    task_of = {folder: task for task, folder
               in task_names(root, {fs.parent_of(path) for path, _ in named}).items()}
    for path, match in named:
        key = (task_of[fs.parent_of(path)], match["split"], match.re is PARQUET_SHARD)
        found.setdefault(key, {})[int(match["index"])] = path
        totals.setdefault(key, set()).add(int(match["count"]))
    if not found:
        raise P3DataError(
            f"{p3_dir}: holds neither of P3's layouts: no [data/]<task>/<split>.tfrecord-"
            "00000-of-00001 and no [data/]<task>/<split>-00000-of-00001.parquet; give the "
            "folder that holds P3's data/ (or its task folders)")
    tasks: dict[str, dict[str, P3Split]] = {}
    for (task, split, parquet), shards in sorted(found.items()):
        counts = totals[task, split, parquet]
        if len(counts) > 1 or sorted(shards) != list(range(max(counts))):
            raise P3DataError(
                f"{fs.parent_of(shards[min(shards)])}: split {split} has shards "
                f"{sorted(shards)} of {sorted(counts)}: the copy is incomplete; download the "
                "missing shards")
        ordered = tuple(shards[index] for index in sorted(shards))
        tasks.setdefault(task, {}).setdefault(split, P3Split(ordered, parquet))
    return tasks


@dataclass(frozen=True)
class Difference:
    """The first example of a task split where a field differs: its index, both values."""

    field: str
    index: int
    ours: tuple | None
    p3: tuple | None

    def __str__(self) -> str:
        at = _first_mismatch(self.ours, self.p3)
        return (f"{self.field} [example {self.index}]: ours {_shown(self.ours, at)} · "
                f"P3 {_shown(self.p3, at)}")


def _as_sequence(value: tuple | None) -> Sequence:
    """A single text as its characters, anything else as its values."""
    if value is not None and len(value) == 1 and isinstance(value[0], str):
        return value[0]
    return value or ()


def _first_mismatch(a: tuple | None, b: tuple | None) -> int:
    x, y = _as_sequence(a), _as_sequence(b)
    unequal = (i for i, (u, v) in enumerate(zip(x, y, strict=False)) if u != v)
    return next(unequal, min(len(x), len(y)))


def _shown(value: tuple | None, at: int) -> str:
    """`value` around position `at`, shortened: a text as its repr, values as a list."""
    if value is None:
        return "(absent)"
    items = _as_sequence(value)
    width = SHOWN_CHARS if isinstance(items, str) else SHOWN_VALUES
    start = max(0, min(at - width // 4, len(items) - width))
    part = items[start:start + width]
    shown = repr(part) if isinstance(items, str) else f"[{', '.join(map(repr, part))}]"
    if start == 0 and start + width >= len(items):
        return shown
    unit = "chars" if isinstance(items, str) else "values"
    return (f"{'…' if start else ''}{shown}{'…' if start + width < len(items) else ''} "
            f"({len(items)} {unit})")


def _differences(ours: bytes, p3: bytes) -> Iterator[tuple[str, str, tuple, tuple]]:
    """(kind, field, our values, P3's) of each difference between two serialized examples
    that are not byte for byte equal. A feature serialized alike is equal; the others are
    decoded, as two encodings (packed or not) may hold equal values."""
    mine, theirs = features_of(ours), features_of(p3)
    for kind, names in (("ids", TOKENS), ("text", TEXTS), ("other", OTHERS)):
        for name in names:
            if mine.get(name) == theirs.get(name):
                continue
            a, b = values_of(mine.get(name)), values_of(theirs.get(name))
            if a != b:
                yield kind, name, a, b
                if kind == "text" and _stripped(a) != _stripped(b):
                    yield "stripped", name, a, b


def _stripped(value: tuple | None) -> tuple | None:
    return None if value is None else tuple(text.strip() for text in value)


@dataclass
class SplitComparison:
    """One task split of both: examples on each side, and per kind of difference how many
    examples differ and the first difference."""

    task: str
    split: str
    ours: int = 0
    p3: int = 0
    differing: Counter = field(default_factory=Counter)
    first: dict[str, Difference] = field(default_factory=dict)

    @property
    def failed(self) -> bool:
        return self.ours != self.p3 or any(self.differing[k] for k in KINDS if k != "text")

    @property
    def whitespace_only(self) -> bool:
        return not self.failed and bool(self.differing["text"])

    def add(self, index: int, ours: bytes, p3: bytes) -> None:
        if ours == p3 or entries_of(ours) == entries_of(p3):  # most examples: nothing to decode
            return
        kinds = set()
        try:
            for kind, name, a, b in _differences(ours, p3):
                kinds.add(kind)
                self.first.setdefault(kind, Difference(name, index, a, b))
        except ExampleDecodeError as err:
            raise ExampleDecodeError(f"{self.task}/{self.split}, example {index}: {err}") from None
        self.differing.update(kinds)

    def row(self) -> tuple:
        common = min(self.ours, self.p3)
        verdicts = [("-" if not common else f"{self.differing[k]:,} differ"
                     if self.differing[k] else "equal") for k in KINDS]
        return (self.task, self.split, self.ours, self.p3, *verdicts)


@dataclass
class Comparison:
    cache_dir: str
    p3_dir: str
    splits: list[SplitComparison] = field(default_factory=list)
    only_ours: list[str] = field(default_factory=list)  # tasks the copy of P3 does not hold
    only_p3: list[str] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        return 1 if any(split.failed for split in self.splits) else 0

    def lines(self) -> list[str]:
        """The agreement table, the first differences of each disagreeing task split, the
        tasks only one side holds, a summary."""
        header = ("task", "split", "ours", "P3", *KINDS.values())
        lines = text_table(header, [split.row() for split in self.splits]).splitlines()
        for split in self.splits:
            if split.failed or split.whitespace_only:
                lines.append(f"{split.task}/{split.split}: " + _verdict(split))
                shown = {(d.field, d.index): d for d in split.first.values()}
                lines += [f"  {difference}" for difference in shown.values()]
        if self.only_ours:
            lines.append(f"{len(self.only_ours):,} tasks of {self.cache_dir} are not in "
                         f"{self.p3_dir} (not compared)")
        if self.only_p3:
            lines.append(f"{len(self.only_p3):,} tasks of {self.p3_dir} are not in "
                         f"{self.cache_dir} (not compared)")
        failed = sum(split.failed for split in self.splits)
        spaces = sum(split.whitespace_only for split in self.splits)
        tasks = len({split.task for split in self.splits})
        lines.append(
            f"{'DIFFERENT' if failed else 'SAME'}: {len(self.splits)} task splits of {tasks} "
            f"tasks compared: {len(self.splits) - failed - spaces} equal, {spaces} differ only "
            f"in surrounding whitespace (not a failure), {failed} differ")
        return lines


def _verdict(split: SplitComparison) -> str:
    if split.ours != split.p3:
        common = min(split.ours, split.p3)
        return (f"{split.ours:,} examples here, {split.p3:,} in P3"
                + (f": compared the first {common:,}" if common else ""))
    if split.failed:
        return "differs; first difference of each kind:"
    return "texts differ only in surrounding whitespace (ids equal); first difference:"


def compare_with_p3(cache_dir: str, p3_dir: str, *, progress_every: float = 10.0,
                    stream: TextIO = sys.stderr) -> Comparison:
    """Every task split the cache at `cache_dir` and the copy of P3 at `p3_dir` both hold."""
    cache = cached_tasks(cache_dir)
    if cache.unreadable:
        raise P3DataError(f"{cache.unreadable[0]}; check the cache with p3data verify")
    p3 = find_p3(p3_dir)
    common = sorted(cache.tasks.keys() & p3.keys())
    if not common:
        raise P3DataError(f"{p3_dir}: holds none of the {len(cache.tasks)} tasks of "
                          f"{cache_dir}; give the copy of P3 those tasks are in")
    pairs = [(task, split) for task in common
             for split in sorted(cache.tasks[task].manifest.splits.keys() | p3[task].keys())]
    comparison = Comparison(cache_dir, p3_dir, only_ours=sorted(cache.tasks.keys() - p3.keys()),
                            only_p3=sorted(p3.keys() - cache.tasks.keys()))
    progress = ProgressLine("p3data compare", unit="examples", every=progress_every,
                            stream=stream, status=f"task splits 0/{len(pairs):,}")
    for done, (task, split) in enumerate(pairs, 1):
        ours = _cached_examples(cache.tasks[task], split)
        theirs = p3[task][split].examples() if split in p3[task] else iter(())
        comparison.splits.append(compare_split(task, split, ours, theirs, progress=progress))
        progress.update(0, status=f"task splits {done:,}/{len(pairs):,}")
    return comparison


def _cached_examples(task: CachedTask, split: str) -> Iterator[bytes]:
    return records(task.shards(split)) if split in task.manifest.splits else iter(())


def compare_split(task: str, split: str, ours: Iterable[bytes], p3: Iterable[bytes], *,
                  progress: ProgressLine) -> SplitComparison:
    """Two streams of one task split's examples, compared in order."""
    result = SplitComparison(task, split)
    for index, (a, b) in enumerate(zip_longest(ours, p3)):
        result.ours += a is not None
        result.p3 += b is not None
        if a is not None and b is not None:
            result.add(index, a, b)
        progress.update()
    return result
