"""A built cache, read into what the report shows.

The manifests hold every count, but what decides training (how long the examples are, what a
length limit cuts off, which datasets dominate a mixture) needs the token ids themselves: the
lengths come from the first records of each task's shards, and the mixture rates from T0's
definitions. Everything is read through `p3data.fs`, so a cache on gs:// reads like a local one.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from p3data import fs
from p3data.errors import P3DataError
from p3data.fewshot.stats import FewshotStats
from p3data.format import layout
from p3data.format.cache_folder import is_complete, not_a_cache, scan
from p3data.format.example_decoding import ExampleDecodeError, feature_spans, value_count
from p3data.format.features import INPUTS, TARGETS
from p3data.format.manifest import Manifest, ManifestError, SplitRecord, read_manifest
from p3data.format.shard_format import read_shard
from p3data.format.tfrecord import CorruptRecordError
from p3data.quality.validate import Lengths
from p3data.taskset import RATE_SPLIT, MixtureDef, TaskSet
from p3data.templates.render import RENDER_ERROR

_INPUTS, _TARGETS = INPUTS.encode(), TARGETS.encode()
DEFAULT_SPLIT = "train"  # token lengths are read from it, unless another split is asked for


@dataclass(frozen=True)
class SplitCounts:
    """One task split as its manifest records it; token counts exclude EOS, as seqio's do."""

    split: str
    rows_read: int
    rows_kept: int
    dropped: dict[str, int]
    errors: int
    examples: int
    inputs_tokens: int
    targets_tokens: int
    inputs_max_tokens: int
    targets_max_tokens: int
    num_shards: int


@dataclass(frozen=True)
class TaskLengths:
    """Token lengths of a split's first records: inputs as cached, targets with their EOS."""

    inputs: np.ndarray
    targets: np.ndarray
    examples: int  # in the whole split; the sample may hold fewer

    def over(self, lengths: Lengths) -> tuple[float, float, float]:
        """Shares of the sample cut at `lengths`: by inputs, by targets, by either."""
        cut_in, cut_out = self.inputs > lengths.inputs, self.targets > lengths.targets
        return float(cut_in.mean()), float(cut_out.mean()), float((cut_in | cut_out).mean())


@dataclass(frozen=True)
class TaskReport:
    task: str
    dataset: str
    template: str
    splits: list[SplitCounts]
    lengths: TaskLengths | None  # None: the task lacks the split the lengths are read from
    fewshot: FewshotStats | None = None  # a few-shot variant's figures, over its splits
    template_id: str = ""
    language: str | None = None  # an xP3 task's language folder (its manifest's)

    def examples(self, split: str) -> int | None:
        """Examples of `split` (None: the task has no such split)."""
        return next((s.examples for s in self.splits if s.split == split), None)


@dataclass(frozen=True)
class MixtureShare:
    """A mixture restricted to the cached tasks; shares are of the cached tasks' total."""

    spec: MixtureDef
    rates: dict[str, float | None]  # cached task -> rate (None: no train split to count)

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def defined_tasks(self) -> int:
        return len(self.spec.tasks)

    @property
    def complete(self) -> bool:
        return len(self.rates) == self.defined_tasks

    @property
    def total(self) -> float:
        return sum(rate or 0 for rate in self.rates.values())

    def share(self, task: str) -> float:
        return (self.rates[task] or 0) / self.total if self.total else 0.0


@dataclass(frozen=True)
class CacheReport:
    root: str
    split: str  # the split token lengths are read from
    lengths: Lengths
    max_records: int
    tasks: list[TaskReport]
    mixtures: list[MixtureShare]
    problems: list[str]  # task folders left out or not complete

    @cached_property
    def by_task(self) -> dict[str, TaskReport]:
        return {task.task: task for task in self.tasks}

    def datasets(self) -> dict[str, list[TaskReport]]:
        grouped: dict[str, list[TaskReport]] = {}
        for task in self.tasks:
            grouped.setdefault(task.dataset, []).append(task)
        return dict(sorted(grouped.items()))

    @cached_property
    def totals(self) -> dict[str, int]:
        splits = [s for task in self.tasks for s in task.splits]
        return {"tasks": len(self.tasks), "examples": sum(s.examples for s in splits),
                "rows read": sum(s.rows_read for s in splits),
                "rows dropped": sum(sum(s.dropped.values()) for s in splits),
                "errors": sum(s.errors for s in splits),
                "input tokens": sum(s.inputs_tokens for s in splits),
                "target tokens": sum(s.targets_tokens for s in splits)}

    def weighted_over(self, mixture: MixtureShare) -> tuple[float, float, float] | None:
        """Shares of a mixture's training examples cut at the lengths (None: nothing sampled)."""
        pairs = [(mixture.share(name), self.by_task[name].lengths) for name in mixture.rates]
        pairs = [(share, lengths) for share, lengths in pairs if lengths and share]
        weight = sum(share for share, _ in pairs)
        if not weight:
            return None
        overs = [(share, lengths.over(self.lengths)) for share, lengths in pairs]
        cut_in, cut_out, cut = (sum(s * o[i] for s, o in overs) / weight for i in range(3))
        return cut_in, cut_out, cut


def collect(root: str, *, split: str | None, lengths: Lengths, max_records: int,
            definitions: TaskSet) -> CacheReport:
    """Everything the report shows, read from the cache at `root`, with token lengths of
    `split` (None: train, if the tasks have it). A split no task has is an error naming the
    ones they have. A task folder that cannot be read is a problem of its own: the report
    goes on with the other tasks."""
    folders = scan(root).folders
    if not folders:
        raise not_a_cache(root)
    tasks, problems = [], []
    for folder, names in folders.items():
        task, found = read_folder(folder, names, split=split or DEFAULT_SPLIT,
                                  max_records=max_records)
        problems += found
        if task is not None:
            tasks.append(task)
    known = sorted({counts.split for task in tasks for counts in task.splits})
    if split is not None and known and split not in known:
        raise P3DataError(f"{root}: no task has a split {split!r}; its tasks' splits are "
                          f"{', '.join(known)}", setting="split")
    tasks.sort(key=lambda task: task.task)
    return CacheReport(root, split or DEFAULT_SPLIT, lengths, max_records, tasks,
                       mixture_shares(definitions, tasks), problems)


def read_folder(folder: str, names: Sequence[str], *, split: str,
                max_records: int) -> tuple[TaskReport | None, list[str]]:
    """The report of a task folder holding the files `names` (None: left out), and the
    problems found reading it."""
    problems = []
    if not is_complete(names):
        problems.append(f"{folder}: no {layout.COMPLETED}: the task is not complete")
    if layout.MANIFEST not in names:
        return None, [*problems, f"{folder}: no {layout.MANIFEST} (not built by p3data); left out"]
    try:
        return read_task(folder, read_manifest(folder), split, max_records), problems
    except ManifestError as err:
        problems.append(f"{err}; left out")
    except (CorruptRecordError, ExampleDecodeError) as err:
        problems.append(f"{err}; task left out (check the cache with p3data verify)")
    except OSError as err:  # a shard the manifest lists is missing or unreadable
        problems.append(f"{folder}: a {split} shard cannot be read ({err}); task left out")
    return None, problems


def read_task(folder: str, manifest: Manifest, split: str, max_records: int) -> TaskReport:
    """A task's counts, and token lengths of its `split`; a `CorruptRecordError`,
    `ExampleDecodeError` or `OSError` when a shard cannot be read."""
    splits = [_split_counts(name, record) for name, record in sorted(manifest.splits.items())]
    lengths = None
    record = manifest.splits.get(split)
    if record and record.examples:
        lengths = read_lengths(folder, record.shards, record.examples, max_records)
    return TaskReport(manifest.task, manifest.dataset, manifest.template.name, splits, lengths,
                      None if manifest.fewshot is None else FewshotStats.summed(
                          record.fewshot for record in manifest.splits.values()),
                      manifest.template.id, manifest.language)


def _split_counts(split: str, record: SplitRecord) -> SplitCounts:
    stats = record.stats
    dropped = {**record.dropped, **({RENDER_ERROR: record.render_errors}
                                    if record.render_errors else {})}
    return SplitCounts(
        split, record.rows_read, record.rows_kept, dropped, record.render_errors,
        record.examples, stats.get("inputs_tokens", 0), stats.get("targets_tokens", 0),
        stats.get("inputs_max_tokens", 0), stats.get("targets_max_tokens", 0),
        record.num_shards)


def read_lengths(folder: str, shards: Sequence[str], examples: int, limit: int) -> TaskLengths:
    """Lengths of the first `limit` records of a split. Records go to shards round-robin in
    source order, so reading an equal slice of every shard samples the split's beginning."""
    per_shard = math.ceil(limit / len(shards)) if shards else 0
    pairs: list[tuple[int, int]] = []
    for name in shards:
        path = fs.join(folder, name)
        with fs.open_read(path) as handle:
            for number, record in enumerate(read_shard(handle, path)):
                if number == per_shard or len(pairs) == limit:
                    break
                try:
                    pairs.append(example_lengths(record))
                except (ExampleDecodeError, IndexError) as err:
                    raise ExampleDecodeError(f"{path}: record {number} is not a "
                                             f"tf.train.Example ({err})") from None
    array = np.array(pairs, dtype=np.int64).reshape(-1, 2)
    return TaskLengths(array[:, 0], array[:, 1], examples)


def example_lengths(record: bytes) -> tuple[int, int]:
    """Lengths of `inputs` and `targets` in a serialized `tf.train.Example`, counted without
    decoding anything else: that keeps a 313-task report to seconds."""
    found = {_INPUTS: 0, _TARGETS: 0}
    for name, start, end in feature_spans(record):
        if name in found:
            found[name] = value_count(record, start, end)
    return found[_INPUTS], found[_TARGETS]


def mixture_shares(definitions: TaskSet,
                   tasks: Sequence[TaskReport]) -> list[MixtureShare]:
    """Every mixture of the task set with a cached task, each task rated by the mixture's own
    rule over the examples its cache holds; complete mixtures first."""
    cached = {task.task: task for task in tasks}
    shares = []
    for mixture in definitions.mixtures.values():
        rates = {name: mixture.rate(definitions.tasks[name], cached[name].examples(RATE_SPLIT))
                 for name in mixture.tasks if name in cached}
        if rates:
            shares.append(MixtureShare(mixture, rates))
    return sorted(shares, key=lambda share: not share.complete)

