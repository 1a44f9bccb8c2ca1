"""`validate`: render and tokenize real rows, and count what training would silently get wrong.

A template can compile and still drop most rows, emit targets no answer choice matches (a
rank-classification example that can never be right), repeat examples, or make prompts longer
than the model reads, so that a target loses the EOS T0 appends. Those show up only on rows;
this counts them per task before anything is cached.

Score-eval twins render exactly like their base task, so a twin is validated through its base
(on the evaluation split) and only counted. A few-shot variant is validated on its prompts: the
rows its task keeps, each fitted to the input length with exemplars drawn from a pool of the
mirror's rows (`FewshotPrompter`, as the cache builds them); its report adds the shot
histogram, the rows fitted and the tokens cut.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from p3data.datasets.errors import SourceError
from p3data.datasets.schema import RowChecker
from p3data.datasets.stores import MirrorStore
from p3data.fewshot import VariantSpec
from p3data.fewshot.prompter import FewshotPrompter
from p3data.fewshot.stats import STATS_COLUMNS, STATS_LEGEND, FewshotStats
from p3data.fewshot.variants import variant_name
from p3data.quality.common import TokenCounter, read_batches, variant_prompter
from p3data.tables import text_table
from p3data.taskset import TaskDef, source_label, source_splits
from p3data.templates.render import (
    NO_LABEL,
    NO_SEPARATOR,
    DatasetRenderer,
    Dropped,
    Outcome,
    Rendered,
)

TRAIN_SPLIT = "train"
EVAL_SPLIT = "validation"
MAX_ROWS_LISTED = 5  # row numbers kept per kind of problem, to look them up


@dataclass(frozen=True)
class Lengths:
    """T0's sequence lengths: longer inputs are cut, and targets are counted with their EOS."""

    inputs: int = 1024
    targets: int = 256

    @classmethod
    def parse(cls, text: str) -> Lengths:
        inputs, _, targets = text.partition(",")
        try:
            lengths = cls(int(inputs), int(targets))
        except ValueError:
            raise ValueError(f"lengths are INPUTS,TARGETS token counts, not {text!r}") from None
        if min(lengths.inputs, lengths.targets) < 1:
            raise ValueError(f"lengths must be positive, not {text!r}")
        return lengths


@dataclass
class TaskSplitValidation:
    """What one task's template made of one split's rows."""

    task: str
    dataset: str
    template: str
    split: str
    source_split: str
    read: int = 0
    kept: int = 0
    dropped: dict[str, int] = field(default_factory=dict)
    no_label: int = 0  # empty targets, kept as "<NO LABEL>"
    off_choices: int = 0  # labelled targets that are none of the row's answer choices
    duplicates: int = 0  # kept examples whose (inputs, targets) came before
    inputs_over: int = 0
    targets_over: int = 0  # counted with the EOS, so each of them loses its EOS
    truncated: int = 0  # examples with inputs or targets over the lengths
    max_inputs: int = 0
    max_targets: int = 0  # with the EOS
    schema: dict[str, int] = field(default_factory=dict)  # rows per schema mismatch category
    rows: dict[str, list[int]] = field(default_factory=dict)  # problem -> first row numbers
    first_error: str | None = None  # the first render error, as the renderer worded it
    error: str | None = None  # the task could not be validated at all
    fewshot: dict[str, Any] | None = None  # a variant's `FewshotStats.as_dict()`

    @property
    def drop_rate(self) -> float:
        return sum(self.dropped.values()) / self.read if self.read else 0.0

    @property
    def truncated_rate(self) -> float:
        return self.truncated / self.kept if self.kept else 0.0

    @property
    def off_choice_rate(self) -> float:
        return self.off_choices / self.kept if self.kept else 0.0

    def note(self, problem: str, row: int) -> None:
        listed = self.rows.setdefault(problem, [])
        if len(listed) < MAX_ROWS_LISTED:
            listed.append(row)


@dataclass(frozen=True)
class Thresholds:
    """Rates above which a task fails validation (None: not checked)."""

    max_drop_rate: float | None = None
    max_truncated_rate: float | None = None
    max_off_choice_rate: float | None = None

    def violations(self, report: TaskSplitValidation) -> list[str]:
        """Rates over their limits; rows that do not fit the catalog's schema always count."""
        if report.error is not None:
            return [f"{report.task} ({report.split}): {report.error}"]
        found = [f"{report.task} ({report.split}): {count} rows do not fit the catalog's "
                 f"schema: {category}" for category, count in sorted(report.schema.items())]
        for name, limit in asdict(self).items():
            rate = getattr(report, name.removeprefix("max_"))
            if limit is not None and rate > limit:
                what = name.removeprefix("max_").replace("_", " ")
                found.append(f"{report.task} ({report.split}): {what} {rate:.3f} > {limit}")
        return found


@dataclass
class Validation:
    reports: list[TaskSplitValidation]
    twins: int  # selected score-eval tasks, validated through their base tasks
    root: str
    vocab: str
    lengths: Lengths


def validate(
    specs: Sequence[TaskDef],
    root: str,
    tokens: TokenCounter,
    *,
    lengths: Lengths = Lengths(),
    split: str | None = None,
    max_rows: int | None = None,
) -> Validation:
    """Render the tasks' rows from the mirror at `root`: base tasks on `split` (default
    train), score-eval twins through their base on `split` (default validation)."""
    reports: dict[tuple[str, str], TaskSplitValidation] = {}
    groups: dict[tuple[tuple[str, str | None], str],
                 list[tuple[TaskDef, TaskSplitValidation]]] = {}
    for spec in specs:
        task_split = split or (EVAL_SPLIT if spec.score_eval else TRAIN_SPLIT)
        name = _validated_as(spec)
        if (name, task_split) in reports:
            continue
        sources = source_splits(spec.split_mapping.get(task_split, ()))
        report = TaskSplitValidation(name, spec.entry.name, spec.template.name, task_split,
                                     source_label(sources))
        reports[(name, task_split)] = report
        if not sources:
            report.error = f"no {task_split!r} split (has {', '.join(spec.split_mapping)})"
            continue
        for source_split in sources:  # a split of several: counted over all of them
            groups.setdefault((spec.entry.key, source_split), []).append((spec, report))
    for (_, source_split), members in groups.items():
        _validate_split(members, root, source_split, tokens=tokens, lengths=lengths,
                        max_rows=max_rows)
    return Validation(list(reports.values()), sum(spec.score_eval for spec in specs), root,
                      tokens.describe(), lengths)


def _validated_as(spec: TaskDef) -> str:
    """The task whose rows stand for `spec`'s: a twin's base (its variant's, for a variant)."""
    if isinstance(spec, VariantSpec):
        return variant_name(spec.base.base_name, spec.shots, spec.settings.label)
    return spec.base_name


def _validate_split(
    members: list[tuple[TaskDef, TaskSplitValidation]], root: str, source_split: str, *,
    tokens: TokenCounter, lengths: Lengths, max_rows: int | None,
) -> None:
    """One pass over a dataset split for all of its selected templates."""
    renderer = DatasetRenderer({spec.template.name: spec.template for spec, _ in members}.values())
    by_name: dict[str, list[tuple[TaskDef, TaskSplitValidation]]] = {}
    for spec, report in members:
        by_name.setdefault(spec.template.name, []).append((spec, report))
        if spec.template.name in renderer.broken:
            report.error = str(renderer.broken[spec.template.name])
    seen: dict[int, set[int]] = {id(report): set() for _, report in members}
    entry = members[0][0].entry
    checker = RowChecker(entry.features)
    read = 0
    try:
        prompters = {id(report): variant_prompter(spec, report.split, root=root,
                                                  tokenizer=tokens.tokenizer, max_rows=max_rows)
                     for spec, report in members if isinstance(spec, VariantSpec)}
        for start, rows in read_batches(root, entry, source_split, max_rows):
            read += len(rows)
            mismatches = Counter(problem for row in rows for problem in checker.problems(row))
            for _, report in members:
                report.schema = dict(Counter(report.schema) + mismatches)
            for name, outcomes in renderer.render_batch(rows, start).items():
                for _, report in by_name[name]:
                    prompter = prompters.get(id(report))
                    prompts = (None if prompter is None
                               else _prompt_lengths(prompter, rows, start, outcomes))
                    _tally(report, outcomes, seen[id(report)], tokens=tokens, lengths=lengths,
                           prompts=prompts)
        if not read and entry.splits.get(source_split):  # an empty file is a failed export
            files = ", ".join(MirrorStore(root, entry).files(source_split))
            raise SourceError(f"{entry.name} {source_split}: no rows in {files} (the catalog "
                              f"lists {entry.splits[source_split]:,})")
        for spec, report in members:
            if id(report) in prompters:
                report.fewshot = prompters[id(report)].stats[spec.shots].as_dict()
    except SourceError as err:
        for _, report in members:
            report.error = str(err)


def _prompt_lengths(prompter: FewshotPrompter, rows: list[dict[str, Any]], start: int,
                    outcomes: list[Outcome]) -> list[int]:
    """Token counts of the prompts the kept outcomes make."""
    queries = [(rows[o.index - start], o) for o in outcomes if isinstance(o, Rendered)]
    (examples,) = prompter.prompts(queries).values()
    return [example.input_ids.tokens for example in examples]


def _tally(report: TaskSplitValidation, outcomes: list[Outcome], seen: set[int], *,
           tokens: TokenCounter, lengths: Lengths, prompts: list[int] | None = None) -> None:
    """Count one batch's outcomes; `prompts`: a variant's prompt lengths, counted as inputs."""
    kept: list[Rendered] = []
    for outcome in outcomes:
        report.read += 1
        if isinstance(outcome, Dropped):
            report.dropped[outcome.reason] = report.dropped.get(outcome.reason, 0) + 1
            report.note(outcome.reason, outcome.index)
            if outcome.error is not None and report.first_error is None:
                report.first_error = str(outcome.error)
            continue
        kept.append(outcome)
        if outcome.targets == NO_LABEL:
            report.no_label += 1
            report.note("no_label", outcome.index)
        elif outcome.answer_choices is not None and outcome.targets not in outcome.answer_choices:
            report.off_choices += 1
            report.note("off_choices", outcome.index)
        pair = hash((outcome.inputs, outcome.targets))
        if pair in seen:
            report.duplicates += 1
            report.note("duplicates", outcome.index)
        seen.add(pair)
    report.kept += len(kept)
    inputs = prompts if prompts is not None else tokens.count([e.inputs for e in kept])
    targets = tokens.count([example.targets for example in kept])
    for example, n_inputs, n_targets in zip(kept, inputs, targets, strict=True):
        n_targets += 1  # the EOS T0 appends to every target
        over_in, over_tgt = n_inputs > lengths.inputs, n_targets > lengths.targets
        report.inputs_over += over_in
        report.targets_over += over_tgt
        if over_in or over_tgt:
            report.truncated += 1
            report.note("truncated", example.index)
        report.max_inputs = max(report.max_inputs, n_inputs)
        report.max_targets = max(report.max_targets, n_targets)


def as_json(validation: Validation, thresholds: Thresholds) -> dict[str, Any]:
    return {
        "data_dir": str(validation.root),
        "vocabulary": validation.vocab,
        "lengths": asdict(validation.lengths),
        "score_eval_twins": validation.twins,
        "tasks": [asdict(report) | {"drop_rate": round(report.drop_rate, 6),
                                    "truncated_rate": round(report.truncated_rate, 6),
                                    "off_choice_rate": round(report.off_choice_rate, 6)}
                  for report in validation.reports],
        "violations": [v for report in validation.reports for v in thresholds.violations(report)],
    }


def format_report(validation: Validation) -> str:
    """An aligned table for people, with a summary and the rows worth a look."""
    lengths = validation.lengths
    header = ["task", "split", "read", "kept", "dropped", "no label", "off choices", "dup",
              "schema", f"in>{lengths.inputs}", f"tgt>{lengths.targets}", "max in", "max tgt",
              "drop reasons"]
    rows = [[r.task, r.split, r.read, r.kept, sum(r.dropped.values()), r.no_label,
             r.off_choices, r.duplicates, sum(r.schema.values()), r.inputs_over,
             r.targets_over, r.max_inputs, r.max_targets,
             ", ".join(f"{k} {n}" for k, n in sorted(r.dropped.items()))]
            for r in validation.reports if r.error is None]
    totals: Counter[str] = Counter()
    for r in validation.reports:
        totals.update(read=r.read, kept=r.kept, dropped=sum(r.dropped.values()),
                      no_label=r.no_label, off=r.off_choices, dup=r.duplicates,
                      schema=sum(r.schema.values()), inputs_over=r.inputs_over,
                      targets_over=r.targets_over)
    rows.append(["total", "", totals["read"], totals["kept"], totals["dropped"],
                 totals["no_label"], totals["off"], totals["dup"], totals["schema"],
                 totals["inputs_over"],
                 totals["targets_over"], max((r.max_inputs for r in validation.reports),
                                             default=0),
                 max((r.max_targets for r in validation.reports), default=0), ""])
    lines = [
        f"validated {len(validation.reports)} tasks on rows from {validation.root}"
        + (f" ({validation.twins} score-eval tasks checked through their base tasks)"
           if validation.twins else ""),
        f"tokens: {validation.vocab}; targets counted with the EOS T0 appends, so every "
        f"target over {lengths.targets} loses its EOS",
        "",
        text_table(header, rows),
    ]
    if fewshot := [[r.task, r.split, *FewshotStats.from_dict(r.fewshot).cells()]
                   for r in validation.reports if r.fewshot is not None]:
        lines += ["", text_table(["few-shot task", "split", *STATS_COLUMNS], fewshot),
                  STATS_LEGEND]
    for report in validation.reports:
        if report.error is not None:
            lines.append(f"{report.task}: not validated: {report.error}")
        elif listed := [f"{problem} {rows}" for problem, rows in sorted(report.rows.items())
                        if problem != NO_SEPARATOR]:  # conditional templates drop rows by design
            lines.append(f"{report.task} ({report.split}) rows: {'; '.join(listed)}")
        if report.first_error:
            lines.append(f"  first render error: {report.first_error}")
    return "\n".join(lines)
