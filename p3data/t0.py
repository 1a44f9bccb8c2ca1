"""T0's rules for turning the catalog and the templates into tasks and mixtures.

Pure data, no seqio: the same task list drives registration (`p3data.tasks`), the cache
builder and `p3data plan`. The rules follow t-zero's `t0/seqio_tasks/tasks.py`:
- one task per dataset/subset x template (ANLI: per round, named `anli_<template>_r1`...),
  named `re.sub(r"[^\\w\\d\\._]+", "_", f"{dataset}_{subset}_{template}")`;
- a `_score_eval` twin for every template with an `answer_choices` expression;
- training rate = T0's `train_size`, or 500,000 // (all templates of the dataset) above 500k;
- eval mixtures hold the twins of `original_task` templates; the bias mixture all twins.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from p3data.catalog import Catalog, DatasetEntry
from p3data.errors import P3DataError
from p3data.templates import Template, TemplateCollection

MAX_EXAMPLES_PER_DATASET = 500_000
SCORE_EVAL_SUFFIX = "_score_eval"

# Mixtures whose tasks are sampled by `train_size` caps; the others by example counts (max 500k).
TRAINING_MIXTURES = {
    "t0_train": ("t0",),
    "t0+_train": ("t0", "t0+"),
    "t0++_train": ("t0", "t0+", "t0++"),
}
MIXTURE_NAMES = (
    "t0_train", "t0+_train", "t0++_train", "t0_eval_score_eval", "t0_train_score_eval",
    "t0_train_one_og_prompt", "t0_train_all_og_prompts", "bias_fairness_eval_score_eval",
)
# t-zero's D4_TRAIN_SKIP_EVAL, matched as substrings of task names: "train tasks we don't care
# about evaluating on", left out of t0_train_score_eval.
TRAIN_SCORE_EVAL_SKIP = (
    "paws_labeled_final", "adversarial_qa_dbidaf", "adversarial_qa_dbert", "duorc_ParaphraseRC",
    "dream", "amazon_polarity", "app_reviews", "imdb", "wiki_bio", "gigaword", "multi_news",
    "samsum", "dbpedia_14", "trec",
)
# t-zero's D4_TRAIN_SCORE_EVAL_TASK_BLACKLIST ("tasks that failed caching") lists score-eval
# tasks of these datasets; every one of their original-task twins is named there or skipped.
TRAIN_SCORE_EVAL_FAILED = {("amazon_polarity", None), ("dbpedia_14", None),
                           ("wiki_hop", "original")}
# t-zero's TASK_BLACKLIST names no task that exists at promptsource 0.1.0, so it is not needed.


def task_clean(text: str) -> str:
    return re.sub(r"[^\w\d\._]+", "_", text)


def task_name(dataset: str, subset: str | None, template_name: str) -> str:
    middle = f"_{subset}_" if subset is not None else "_"
    return task_clean(dataset + middle + template_name)


def training_cap(train_size: int | None, num_templates: int) -> int:
    """T0's per-task rate: the train split size, or an even share of 500k for big datasets."""
    size = train_size or 0
    return MAX_EXAMPLES_PER_DATASET // num_templates if size > MAX_EXAMPLES_PER_DATASET else size


@dataclass(frozen=True)
class TaskSpec:
    """Everything needed to build one seqio Task, without building it."""

    name: str
    entry: DatasetEntry
    template: Template
    split_mapping: dict[str, str]  # task split -> source split
    score_eval: bool = False
    cap: int = 0  # T0's training rate for this task

    @property
    def base_name(self) -> str:
        return self.name.removesuffix(SCORE_EVAL_SUFFIX) if self.score_eval else self.name


@dataclass(frozen=True)
class MixtureSpec:
    """A T0 mixture: its tasks, and the one rule that weighs them.

    Training mixtures weigh a task by its cap (T0's `train_size` rule, fixed when the task is
    defined); the others by the examples its cache holds, at most 500,000, which is what
    seqio's `mixing_rate_num_examples(maximum=500_000)` computes from the cache's stats.
    """

    name: str
    tasks: tuple[str, ...]
    rate_by_cap: bool

    RATE_RULE_BY_CAP = "T0's cap"
    RATE_RULE_BY_EXAMPLES = f"examples in the split, at most {MAX_EXAMPLES_PER_DATASET:,}"

    def rate(self, task: TaskSpec, examples: int | None = None) -> int | None:
        """`task`'s rate in this mixture; `examples` are those its cache holds (needed only by
        mixtures weighed by examples: None then means the rate is not known yet)."""
        if self.rate_by_cap:
            return task.cap
        return None if examples is None else min(examples, MAX_EXAMPLES_PER_DATASET)

    @property
    def rate_rule(self) -> str:
        return self.RATE_RULE_BY_CAP if self.rate_by_cap else self.RATE_RULE_BY_EXAMPLES


@dataclass(frozen=True)
class T0Definitions:
    tasks: dict[str, TaskSpec]
    mixtures: dict[str, MixtureSpec]

    def rate(self, mixture: str, task: str, examples: int | None = None) -> int | None:
        """`MixtureSpec.rate` of one task of one mixture, by name."""
        return self.mixtures[mixture].rate(self.tasks[task], examples)


def _is_original(template: Template) -> bool:
    return bool(template.metadata.original_task)


def define(catalog: Catalog, templates: TemplateCollection) -> T0Definitions:
    """T0's tasks and its 8 mixtures over every catalog dataset that has templates."""
    tasks: dict[str, TaskSpec] = {}
    members: dict[str, list[str]] = {name: [] for name in MIXTURE_NAMES}

    def add(spec: TaskSpec) -> None:
        if spec.name in tasks:
            raise ValueError(f"two tasks are named {spec.name!r}")
        tasks[spec.name] = spec

    for entry in catalog:
        if entry.key not in templates:
            continue  # e.g. jigsaw_toxicity_pred: in T0's list, no templates in promptsource
        dataset_templates = list(templates.get(*entry.key))
        cap = training_cap(entry.train_size, len(dataset_templates))
        first_original = next((t for t in dataset_templates if _is_original(t)), None)
        for round_name, mapping in entry.split_mappings().items():
            for template in dataset_templates:
                name = task_name(entry.dataset, entry.subset, template.name)
                name += f"_{round_name}" if round_name else ""
                add(TaskSpec(name, entry, template, mapping, cap=cap))
                twin = None
                if template.answer_choices:
                    twin = name + SCORE_EVAL_SUFFIX
                    add(TaskSpec(twin, entry, template, mapping, score_eval=True, cap=cap))
                for mixture in _mixtures_of(entry, template, twin, template is first_original):
                    members[mixture].append(twin if mixture.endswith(SCORE_EVAL_SUFFIX) else name)
    mixtures = {
        name: MixtureSpec(name, tuple(members[name]), not name.endswith(SCORE_EVAL_SUFFIX))
        for name in MIXTURE_NAMES
    }
    return T0Definitions(tasks, mixtures)


def _mixtures_of(entry: DatasetEntry, template: Template, twin: str | None,
                 first_original: bool) -> Iterable[str]:
    """The T0 mixtures a (dataset, template) task or its twin belongs to."""
    for mixture, roles in TRAINING_MIXTURES.items():
        if entry.train in roles:
            yield mixture
    original = _is_original(template)
    if entry.train == "t0":
        if first_original:
            yield "t0_train_one_og_prompt"
        if original:
            yield "t0_train_all_og_prompts"
        if (original and twin and entry.key not in TRAIN_SCORE_EVAL_FAILED
                and not any(skip in twin for skip in TRAIN_SCORE_EVAL_SKIP)):
            yield "t0_train_score_eval"
    if twin and entry.eval == "held_out" and original:
        yield "t0_eval_score_eval"
    if twin and entry.eval == "bias_fairness":
        yield "bias_fairness_eval_score_eval"


def load_definitions() -> T0Definitions:
    """T0's tasks over the catalog and templates in effect (`P3DATA_CATALOG` and
    `P3DATA_TEMPLATE_DIRS` included)."""
    return define(Catalog.load(), TemplateCollection.default())


def select(definitions: T0Definitions, mixtures: Sequence[str] = (),
           patterns: Sequence[str] = ()) -> list[TaskSpec]:
    """The tasks of the given mixtures, narrowed (or, without mixtures, chosen) by regexes that
    must match whole task names, as seqio's `--tasks` does."""
    if not mixtures and not patterns:
        raise P3DataError("choose tasks with --mixture NAME and/or --tasks REGEX")
    unknown = [m for m in mixtures if m not in definitions.mixtures]
    if unknown:
        raise P3DataError(f"unknown mixture {unknown[0]!r}; known: "
                          + ", ".join(definitions.mixtures))
    names = (list(dict.fromkeys(t for m in mixtures for t in definitions.mixtures[m].tasks))
             if mixtures else list(definitions.tasks))
    if patterns:
        try:
            compiled = [re.compile(pattern) for pattern in patterns]
        except re.error as err:
            raise P3DataError(f"--tasks: not a regular expression: {err}") from None
        names = [name for name in names if any(c.fullmatch(name) for c in compiled)]
    if not names:
        where = f" in {', '.join(mixtures)}" if mixtures else ""
        raise P3DataError(f"no task{where} fully matches {' or '.join(patterns)}")
    return [definitions.tasks[name] for name in sorted(names)]
