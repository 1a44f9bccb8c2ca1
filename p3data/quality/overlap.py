"""`overlap`: does the training mixture contain the data it is evaluated on?

Two checks. First by dataset: a dataset trained on and also evaluated is not held out, even
when training reads another split of it (T0++ trains on WSC, COPA, WiC and HellaSwag, which
T0's evaluation mixture reports on). Then by text: n-grams (13 words by default, as GPT-3's
contamination study used) shared by the rendered inputs of training tasks and the raw string
fields of the evaluation rows, which catches copies across datasets and splits. A few-shot
variant's training text holds its exemplars too, each an input and its target: every usable
render of its pool is checked (a hit's row is then the exemplar's, in the pool's split).

The evaluation side is small (validation splits), so its n-grams are hashed into memory;
the training side is streamed a batch at a time and never held.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from p3data import t0
from p3data.datasets.errors import SourceError
from p3data.datasets.samples import _strings as row_strings
from p3data.fewshot import VariantSpec
from p3data.fewshot.pool import is_usable, pool_source
from p3data.quality.common import read_batches
from p3data.tables import text_table
from p3data.taskset import TaskDef, TaskSet, source_splits
from p3data.templates.render import DatasetRenderer, Rendered

TRAIN_SPLIT = "train"
EVAL_SPLIT = "validation"
WORD = re.compile(r"[^\W_]+")  # runs of letters and digits: splits on spaces and punctuation


def words(text: str) -> list[str]:
    return WORD.findall(text.lower())


def ngrams(tokens: Sequence[str], n: int) -> Iterator[tuple[int, str]]:
    """(hash, text) of every run of `n` words."""
    for start in range(len(tokens) - n + 1):
        gram = " ".join(tokens[start:start + n])
        yield hash(gram), gram


@dataclass(frozen=True)
class SharedDataset:
    """A dataset some training task reads and some evaluation task reads too."""

    dataset: str
    train_tasks: int
    train_splits: list[str]
    eval_tasks: int
    eval_splits: list[str]


@dataclass(frozen=True)
class EvalSource:
    """One split of an evaluation dataset and the evaluation tasks that read it."""

    dataset: str
    split: str
    tasks: list[str]


@dataclass(frozen=True)
class Hit:
    train_row: int
    eval_row: int
    ngram: str  # the first shared n-gram, normalised


@dataclass
class PairOverlap:
    """Training rows of one task whose rendered inputs share an n-gram with one eval source."""

    train_task: str
    train_split: str
    eval_dataset: str
    eval_split: str
    eval_tasks: list[str]
    hits: list[Hit] = field(default_factory=list)


@dataclass
class OverlapReport:
    train: str
    eval: str
    n: int
    train_split: str
    eval_split: str
    shared: list[SharedDataset]
    pairs: list[PairOverlap]
    eval_rows: int = 0
    unchecked_eval_rows: int = 0  # no string field of n words: invisible to this n
    train_examples: int = 0
    missing: list[str] = field(default_factory=list)  # splits the mirror lacks

    @property
    def found(self) -> bool:
        return bool(self.shared or self.pairs)


def shared_datasets(train: Sequence[TaskDef], evaluation: Sequence[TaskDef],
                    train_split: str, eval_split: str) -> list[SharedDataset]:
    """Datasets on both sides, whatever split each side reads."""
    sides: list[dict[str, list[TaskDef]]] = [{}, {}]
    for side, specs in zip(sides, (train, evaluation), strict=True):
        for spec in specs:
            side.setdefault(spec.entry.name, []).append(spec)
    return [
        SharedDataset(
            name, len(sides[0][name]), _splits(sides[0][name], train_split),
            len(sides[1][name]), _splits(sides[1][name], eval_split))
        for name in sides[0] if name in sides[1]
    ]


def _splits(specs: Sequence[TaskDef], split: str) -> list[str]:
    return sorted({source for spec in specs if split in spec.split_mapping
                   for source in source_splits(spec.split_mapping[split])})


class EvalIndex:
    """Hashed n-grams of the evaluation rows' string fields: n-gram -> (source, row)."""

    def __init__(self, n: int):
        self.n = n
        self.sources: list[EvalSource] = []
        self.grams: dict[int, tuple[int, int]] = {}
        self.rows = 0
        self.unchecked = 0

    def add_source(self, source: EvalSource) -> int:
        self.sources.append(source)
        return len(self.sources) - 1

    def add_row(self, source: int, index: int, row: dict[str, Any]) -> None:
        self.rows += 1
        found = False
        for text in row_strings(row):
            for key, _ in ngrams(words(text), self.n):
                self.grams.setdefault(key, (source, index))
                found = True
        self.unchecked += not found

    def matches(self, text: str) -> dict[int, tuple[int, str]]:
        """The first shared n-gram of `text` per eval source: source -> (eval row, n-gram)."""
        found: dict[int, tuple[int, str]] = {}
        for key, gram in ngrams(words(text), self.n):
            hit = self.grams.get(key)
            if hit is not None and hit[0] not in found:
                found[hit[0]] = (hit[1], gram)
        return found


def overlap(
    definitions: TaskSet,
    train_mixture: str,
    eval_mixture: str,
    root: str,
    *,
    n: int = 13,
    train_split: str = TRAIN_SPLIT,
    eval_split: str = EVAL_SPLIT,
    max_rows: int | None = None,
) -> OverlapReport:
    train = definitions.select([train_mixture])
    evaluation = definitions.select([eval_mixture])
    report = OverlapReport(train_mixture, eval_mixture, n, train_split, eval_split,
                           shared_datasets(train, evaluation, train_split, eval_split), [])
    index = EvalIndex(n)
    for (_, split), users in t0.group_by_source_split(evaluation, [eval_split]).items():
        try:
            _index_split(index, [spec for spec, _ in users], split, root=root,
                         max_rows=max_rows)
        except SourceError as err:
            report.missing.append(str(err))
    report.eval_rows, report.unchecked_eval_rows = index.rows, index.unchecked
    scans: dict[tuple[Any, str], list[Role]] = {}  # (dataset, split) -> who reads it, how
    for spec in train:
        if train_split not in spec.split_mapping:
            continue
        pool = (pool_source(spec.base, train_split).split
                if isinstance(spec, VariantSpec) and spec.shots else None)
        for split in source_splits(spec.split_mapping[train_split]):
            scans.setdefault((spec.entry.key, split), []).append(Role(spec, True, pool == split))
        if pool is not None and pool != spec.split_mapping[train_split]:
            scans.setdefault((spec.entry.key, pool), []).append(Role(spec, False, True))
    for (_, split), roles in scans.items():
        try:
            _scan_split(report, index, roles, split=split, root=root, max_rows=max_rows)
        except SourceError as err:
            report.missing.append(str(err))
    return report


def _index_split(index: EvalIndex, specs: Sequence[TaskDef], split: str, *, root: str,
                 max_rows: int | None) -> None:
    """Add one evaluation split's rows (read by `specs`) to the index."""
    entry = specs[0].entry
    source = index.add_source(EvalSource(entry.name, split, [spec.name for spec in specs]))
    for start, rows in read_batches(root, entry, split, max_rows):
        for offset, row in enumerate(rows):
            index.add_row(source, start + offset, row)


@dataclass(frozen=True)
class Role:
    """How a training task reads a split: its queries' inputs, its exemplars, or both."""

    spec: TaskDef
    queries: bool
    exemplars: bool

    def text(self, outcome: Rendered) -> str | None:
        """What training on the task shows of this render (None: nothing): as an exemplar,
        its input, separator and target (`<NO LABEL>` renders are never exemplars); else, as
        a query, its input."""
        if self.exemplars and is_usable(outcome):
            assert isinstance(self.spec, VariantSpec)
            return outcome.inputs + self.spec.settings.exemplar_separator + outcome.targets
        return outcome.inputs if self.queries else None


def _scan_split(report: OverlapReport, index: EvalIndex, roles: list[Role], *, split: str,
                root: str, max_rows: int | None) -> None:
    """Render one training split through its tasks' templates and look up what each task
    trains on of every render."""
    renderer = DatasetRenderer({r.spec.template.name: r.spec.template for r in roles}.values())
    by_template: dict[str, list[Role]] = {}
    for role in roles:
        by_template.setdefault(role.spec.template.name, []).append(role)
    pairs: dict[tuple[str, int], PairOverlap] = {}
    for start, rows in read_batches(root, roles[0].spec.entry, split, max_rows):
        for name, outcomes in renderer.render_batch(rows, start).items():
            for outcome in outcomes:
                if isinstance(outcome, Rendered):
                    _look_up(report, index, by_template[name], outcome, pairs=pairs,
                             split=split)
    report.pairs += pairs.values()


def _look_up(report: OverlapReport, index: EvalIndex, roles: list[Role], outcome: Rendered, *,
             pairs: dict[tuple[str, int], PairOverlap], split: str) -> None:
    """Each task's training text of one render, each distinct text looked up once."""
    report.train_examples += any(role.queries for role in roles)
    found: dict[str, dict[int, tuple[int, str]]] = {}
    for role in roles:
        if (text := role.text(outcome)) is None:
            continue
        if text not in found:
            found[text] = index.matches(text)
        for source, (eval_row, gram) in found[text].items():
            key = (role.spec.name, source)
            if key not in pairs:
                hit_in = index.sources[source]
                pairs[key] = PairOverlap(role.spec.name, split, hit_in.dataset, hit_in.split,
                                         hit_in.tasks)
            pairs[key].hits.append(Hit(outcome.index, eval_row, gram))


def exclusions(report: OverlapReport) -> list[dict[str, Any]]:
    """Training rows to leave out, one per (task, split, row), in a stable order."""
    rows = {(pair.train_task, pair.train_split, hit.train_row)
            for pair in report.pairs for hit in pair.hits}
    return [{"task": task, "split": split, "row": row} for task, split, row in sorted(rows)]


def as_json(report: OverlapReport) -> dict[str, Any]:
    return asdict(report)


def format_report(report: OverlapReport, listed: int = 3) -> str:
    lines = [f"{report.train} ({report.train_split}) against {report.eval} "
             f"({report.eval_split})", ""]
    if report.shared:
        lines.append("datasets trained on and evaluated on (another split of the same dataset "
                     "is not held out):")
        lines.append(text_table(
            ["dataset", "train tasks", "train splits", "eval tasks", "eval splits"],
            [[s.dataset, s.train_tasks, ", ".join(s.train_splits), s.eval_tasks,
              ", ".join(s.eval_splits)] for s in report.shared]))
    else:
        lines.append("no dataset is both trained on and evaluated on")
    lines += ["", (
        f"{report.n}-gram overlap: {report.train_examples:,} rendered training inputs against "
        f"{report.eval_rows:,} evaluation rows ({report.unchecked_eval_rows:,} of them have no "
        f"string field of {report.n} words and cannot be matched at this n)")]
    if report.pairs:
        lines.append(text_table(
            ["train task", "eval dataset", "eval split", "eval tasks", "train rows"],
            [[p.train_task, p.eval_dataset, p.eval_split, len(p.eval_tasks),
              len({hit.train_row for hit in p.hits})] for p in report.pairs]))
        for pair in report.pairs:
            lines += [f"  {pair.train_task} row {hit.train_row} ~ {pair.eval_dataset} "
                      f"{pair.eval_split} row {hit.eval_row}: \"{hit.ngram}\""
                      for hit in pair.hits[:listed]]
    else:
        lines.append("no shared n-grams")
    lines += [f"not checked: {message}" for message in report.missing]
    return "\n".join(lines)
