"""`p3data plan`'s projection: what a training mixture will feed the model, as a dry run
with no caching.

T0 samples each task in proportion to its cap (its train split size, or an even share of
500,000 for big datasets), and the data repeats; how those caps turn into examples and tokens
at a given number of steps is the question users asked for months. Tokens per example are
measured on the bundled sample rows with the offline sample vocabulary, so they are estimates.
A customised catalog or template set is compared with T0's published definition, computed
from the bundled catalog and promptsource's templates alone. A few-shot mixture splits each
T0 task's rate over its variants by its settings' ratio; its variants' tokens are measured on
their prompts (exemplars from the sample rows), so they show what the exemplars cost.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from p3data import t0
from p3data.datasets.catalog import CATALOG_FILE, Catalog, read_catalog_file
from p3data.datasets.errors import SourceError
from p3data.datasets.samples import SAMPLES_DIR
from p3data.errors import P3DataError
from p3data.fewshot import VariantSpec
from p3data.quality.common import TokenCounter, read_batches, variant_prompter
from p3data.quality.languages import LanguageCount, by_language, language_table
from p3data.tables import text_table
from p3data.taskset import TaskDef, TaskSet, source_splits
from p3data.templates import TemplateCollection
from p3data.templates.collection import TemplateSource, promptsource_dir
from p3data.templates.render import DatasetRenderer, Rendered

SPLIT = "train"


@dataclass(frozen=True)
class TaskPlan:
    task: str
    dataset: str
    source_rows: int  # rows of the train split in the catalog, before any are dropped
    cap: int  # T0's cap for the task
    rate: float  # its mixing rate in this mixture: the cap (a variant: its share of the cap)
    share: float  # of the mixture's total rate
    examples: float  # expected examples drawn at the planned number of examples
    epochs: float | None  # passes over the source rows that makes
    tokens_per_example: float | None  # inputs + targets + EOS, mean over the samples
    tokens: float | None


@dataclass(frozen=True)
class Differences:
    """The mixture against T0's published one (same name)."""

    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    rate_changed: list[dict[str, Any]] = field(default_factory=list)
    template_changed: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return any(asdict(self).values())


@dataclass(frozen=True)
class Plan:
    mixture: str
    total_rate: float
    examples: int
    basis: str
    tasks: list[TaskPlan]
    vocabulary: str
    rate_rule: str
    differences: Differences | None  # None: not one of T0's mixtures, which T0 published
    languages: list[LanguageCount] = field(default_factory=list)  # xP3's tasks: per folder

    @property
    def tokens(self) -> float:
        return sum(task.tokens or 0 for task in self.tasks)


def published_definitions() -> t0.T0Definitions:
    """T0 as released: the bundled catalog and promptsource 0.1.0's templates, nothing else."""
    return t0.define(Catalog(read_catalog_file(CATALOG_FILE, validate=False)),
                     TemplateCollection([TemplateSource(promptsource_dir(), "promptsource")]))


def mean_tokens(specs: Sequence[TaskDef], tokens: TokenCounter) -> dict[str, float | None]:
    """Mean tokens per kept example (inputs + targets + EOS) over each task's sample rows; a
    variant's inputs are its prompts."""
    counts: dict[str, list[int]] = {}
    for (_, source_split), users in t0.group_by_source_split(specs, [SPLIT]).items():
        members = [spec for spec, _ in users]
        first = members[0]  # a mixture's tasks of one dataset share its collection's rule
        renderer = DatasetRenderer({spec.template.name: spec.template
                                    for spec in members}.values(), rule=first.row_rule,
                                   step=first.dataset_step, config=first.entry.subset)
        try:
            prompters = {spec.name: variant_prompter(spec, SPLIT, root=str(SAMPLES_DIR),
                                                     tokenizer=tokens.tokenizer)
                         for spec in members if isinstance(spec, VariantSpec)}
            for start, rows in read_batches(SAMPLES_DIR, members[0].entry, source_split):
                for name, outcomes in renderer.render_batch(rows, start).items():
                    kept = [o for o in outcomes if isinstance(o, Rendered)]
                    targets = tokens.count([o.targets for o in kept])
                    plain = tokens.count([o.inputs for o in kept])
                    for spec in members:
                        if spec.template.name != name:
                            continue
                        inputs = plain
                        if spec.name in prompters:
                            (prompts,) = prompters[spec.name].prompts(
                                [(rows[o.index - start], o) for o in kept]).values()
                            inputs = [prompt.input_ids.tokens for prompt in prompts]
                        counts.setdefault(spec.name, []).extend(
                            i + t + 1 for i, t in zip(inputs, targets, strict=True))
        except SourceError:
            continue  # no sample rows: the estimate is unknown, not zero
    return {spec.name: (sum(counts[spec.name]) / len(counts[spec.name])
                        if counts.get(spec.name) else None) for spec in specs}


def plan(
    definitions: TaskSet,
    mixture: str,
    tokens: TokenCounter,
    *,
    examples: int | None = None,
    basis: str = "as asked",
    published: t0.T0Definitions | None = None,
) -> Plan:
    """Expected examples and tokens per task when `examples` are drawn from the mixture (any
    mixture weighed by caps; default: as many as its total rate, i.e. every task once at its
    rate), and how one of T0's own mixtures differs from `published` (default: T0's,
    `published_definitions()`)."""
    rule = definitions.mixture(mixture)
    specs = definitions.mixture_tasks(mixture)
    rates = {spec.name: rule.rate(spec) for spec in specs}
    if None in rates.values():
        by_cap = [name for name, m in definitions.mixtures.items() if m.rate_by_cap]
        raise P3DataError(
            f"{mixture} is an evaluation mixture, weighted by the examples in its cache rather "
            f"than by T0's caps; plan one of: " + ", ".join(by_cap))
    total = sum(rates.values())
    if examples is None:
        examples, basis = round(total), "the mixture's total rate: each task once at its rate"
    means = mean_tokens(specs, tokens)
    tasks = []
    for spec in specs:
        share = rates[spec.name] / total if total else 0.0
        expected = examples * share
        source_rows = sum(spec.entry.splits.get(source) or 0
                          for source in source_splits(spec.split_mapping.get(SPLIT, ())))
        mean = means[spec.name]
        tasks.append(TaskPlan(
            task=spec.name, dataset=spec.entry.name, source_rows=source_rows, cap=spec.cap,
            rate=rates[spec.name], share=share, examples=expected,
            epochs=expected / source_rows if source_rows else None,
            tokens_per_example=mean, tokens=expected * mean if mean is not None else None))
    t0_part = definitions.parts.get("t0")  # a task set may lack T0's (xP3's alone)
    differences = compare(t0_part, published or published_definitions(), mixture) if (
        isinstance(t0_part, t0.T0Definitions) and mixture in t0_part.mixtures) else None
    return Plan(mixture, total, examples, basis, tasks, tokens.describe(), rule.rate_rule,
                differences, by_language((spec.language, spec.template.id,
                                          catalog_examples(spec)) for spec in specs))


def catalog_examples(spec: TaskDef) -> int | None:
    """The examples a task's training splits can keep by the catalog's sizes: each split's
    rows, at most its cap (None: a split's size is unknown)."""
    sizes = [spec.entry.splits.get(split) for sources in spec.split_mapping.values()
             for split in source_splits(sources)]
    if None in sizes:
        return None
    cap = spec.split_cap.cap if spec.split_cap else None
    return sum(size if cap is None else min(size, cap) for size in sizes)  # type: ignore[misc]


def compare(current: t0.T0Definitions, published: t0.T0Definitions, mixture: str) -> Differences:
    now, then = current.mixtures[mixture].tasks, published.mixtures[mixture].tasks
    common = [name for name in now if name in set(then)]
    return Differences(
        added=[name for name in now if name not in set(then)],
        removed=[name for name in then if name not in set(now)],
        rate_changed=[{"task": name, "published": _rate(published, mixture, name),
                       "current": _rate(current, mixture, name)}
                      for name in common
                      if _rate(current, mixture, name) != _rate(published, mixture, name)],
        template_changed=[name for name in common
                          if _template_text(current, name) != _template_text(published, name)],
    )


def _rate(definitions: t0.T0Definitions, mixture: str, task: str) -> int | None:
    return definitions.mixtures[mixture].rate(definitions.tasks[task])


def _template_text(definitions: t0.T0Definitions, task: str) -> tuple[str, str | None]:
    template = definitions.tasks[task].template
    return template.jinja, template.answer_choices


def as_json(result: Plan) -> dict[str, Any]:
    return {
        "mixture": result.mixture,
        "total_rate": result.total_rate,
        "examples": result.examples,
        "basis": result.basis,
        "tokens": round(result.tokens),
        "tokens_measured_with": f"bundled sample rows, {result.vocabulary}",
        "tasks": [asdict(task) for task in result.tasks],
        "differences": None if result.differences is None else asdict(result.differences),
        "languages": [{**asdict(c), "templates": len(c.templates)} for c in result.languages],
    }


def format_plan(result: Plan) -> str:
    datasets = {task.dataset for task in result.tasks}
    unknown = sum(task.tokens is None for task in result.tasks)
    header = ["task", "source rows", "rate (cap)", "share %", "examples", "epochs", "tok/ex",
              "tokens"]
    rows: list[list[Any]] = [
        [t.task, t.source_rows, t.rate, 100 * t.share, t.examples, t.epochs,
         t.tokens_per_example, t.tokens] for t in result.tasks]
    rows.append(["total", sum({t.dataset: t.source_rows for t in result.tasks}.values()),
                 result.total_rate, 100.0,
                 float(result.examples), None, None, result.tokens])
    lines = [
        f"{result.mixture}: {len(result.tasks)} tasks on {len(datasets)} datasets, total rate "
        f"{result.total_rate:,.0f}",
        f"examples: {result.examples:,} ({result.basis})",
        f"tokens: mean inputs + targets + EOS per example measured on the bundled sample rows "
        f"with {result.vocabulary}, before truncation: an estimate",
        "",
        text_table(header, rows),
    ]
    if unknown:
        lines.append(f"{unknown} tasks keep no sample example: their tokens are not counted")
    lines.append(_format_differences(result))
    if result.languages:
        header, rows = language_table(result.languages)
        lines += ["", "per language folder (examples: each training split's catalog rows, at "
                  "most the cap)", text_table(header, rows)]
    return "\n".join(lines)


def _format_differences(result: Plan) -> str:
    diff = result.differences
    if diff is None:
        return f"rates: {result.rate_rule} (not one of T0's published mixtures)"
    if not diff:
        return f"matches T0's published {result.mixture}"
    lines = [f"differences from T0's published {result.mixture}:"]
    lines += [f"  added: {name}" for name in diff.added]
    lines += [f"  removed: {name}" for name in diff.removed]
    lines += [f"  rate: {c['task']} {c['published']:,} -> {c['current']:,}"
              for c in diff.rate_changed]
    lines += [f"  template changed: {name}" for name in diff.template_changed]
    return "\n".join(lines)
