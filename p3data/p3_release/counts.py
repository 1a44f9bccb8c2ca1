"""P3's published example count per task split, beside a cache's (`verify --against-p3-counts`).

`data/p3_split_sizes.tsv` is P3's `data_split_sizes.csv` as a table (task, split, examples);
like it, it lists no split with 0 examples, so a split it does not list holds none in P3. P3
publishes the `_score_eval` twins of evaluation tasks only: a twin of a task P3 holds, missing
from P3, is left out by design and is not a difference.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources

from p3data.p3_release.cached import cached_tasks
from p3data.t0 import SCORE_EVAL_SUFFIX
from p3data.tables import text_table

Counts = Mapping[tuple[str, str], int]  # (task, split) -> examples


def p3_counts() -> dict[tuple[str, str], int]:
    """P3's published counts, from the package data."""
    text = resources.files("p3data").joinpath("data/p3_split_sizes.tsv").read_text()
    rows = csv.DictReader(io.StringIO(text), delimiter="\t")
    return {(row["task"], row["split"]): int(row["num_examples"]) for row in rows}


@dataclass(frozen=True)
class SplitCount:
    task: str
    split: str
    ours: int | None  # None: the cache does not hold the split
    p3: int | None  # None: P3 does not publish the task
    by_design: bool = False  # not in P3: a `_score_eval` twin of a training task P3 holds

    @property
    def difference(self) -> int:
        return (self.ours or 0) - (self.p3 or 0)


@dataclass
class CountsCheck:
    """A cache's task splits beside P3's published counts."""

    agree: list[SplitCount] = field(default_factory=list)
    differ: list[SplitCount] = field(default_factory=list)
    missing: list[SplitCount] = field(default_factory=list)  # P3's, of tasks the cache holds
    not_in_p3: list[SplitCount] = field(default_factory=list)
    other_p3_tasks: int = 0  # P3 tasks the cache holds nothing of
    other_p3_splits: int = 0
    unreadable: int = 0  # complete task folders whose manifests cannot be read

    @property
    def exit_code(self) -> int:
        return 1 if self.differ else 0

    @property
    def by_design(self) -> int:
        return sum(row.by_design for row in self.not_in_p3)

    def lines(self) -> list[str]:
        """The differences as a table, the task splits only one side has, then a summary."""
        lines = []
        if self.differ:
            lines.append("Example counts that differ from P3's published counts:")
            lines += text_table(
                ("task", "split", "ours", "P3", "difference"),
                [(r.task, r.split, r.ours or 0, r.p3 or 0, r.difference) for r in self.differ],
            ).splitlines()
        if self.missing:
            lines.append("P3 task splits this cache lacks (of the tasks it holds):")
            lines += [f"  {r.task}/{r.split}: {r.p3:,} examples in P3" for r in self.missing]
        unexpected = [r for r in self.not_in_p3 if not r.by_design]
        if unexpected:
            lines.append("Task splits of this cache that P3 does not publish:")
            lines += [f"  {r.task}/{r.split} ({r.ours:,} examples)" for r in unexpected]
        if self.by_design:
            lines.append(f"{self.by_design} task splits are {SCORE_EVAL_SUFFIX} twins of "
                         "training tasks, which P3 leaves out by design")
        if self.other_p3_tasks:
            lines.append(f"P3's other {self.other_p3_tasks:,} tasks ({self.other_p3_splits:,} "
                         "task splits) are not in this cache")
        if self.unreadable:
            lines.append(f"{self.unreadable} complete task folders not compared: their "
                         "manifests cannot be read (see above)")
        lines.append(
            f"P3 counts: {len(self.agree)} task splits agree, {len(self.differ)} differ, "
            f"{len(self.missing)} of P3's missing here, {len(self.not_in_p3)} not in P3 "
            f"({self.by_design} by design)")
        return lines


def check_counts(root: str, counts: Counts | None = None) -> CountsCheck:
    """Every task split of the cache at `root` beside P3's count (`counts`: P3's published
    ones unless given)."""
    counts = p3_counts() if counts is None else counts
    p3_splits: dict[str, dict[str, int]] = {}
    for (task, split), examples in counts.items():
        p3_splits.setdefault(task, {})[split] = examples
    cache = cached_tasks(root)
    check = CountsCheck(unreadable=len(cache.unreadable))
    for task, cached in sorted(cache.tasks.items()):
        ours = {split: record.examples for split, record in cached.manifest.splits.items()}
        if task not in p3_splits:
            twin = (cached.manifest.score_eval
                    and task.removesuffix(SCORE_EVAL_SUFFIX) in p3_splits)
            check.not_in_p3 += [SplitCount(task, split, examples, None, by_design=twin)
                                for split, examples in sorted(ours.items())]
            continue
        theirs = p3_splits[task]
        for split in sorted(ours.keys() | theirs.keys()):
            row = SplitCount(task, split, ours.get(split), theirs.get(split, 0))
            if split not in ours:
                check.missing.append(row)
            else:
                (check.agree if row.difference == 0 else check.differ).append(row)
    others = p3_splits.keys() - cache.tasks.keys()
    check.other_p3_tasks = len(others)
    check.other_p3_splits = sum(len(p3_splits[task]) for task in others)
    return check

