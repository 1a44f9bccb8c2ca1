"""T0's rules for turning the catalog and the templates into tasks and mixtures.

Pure data, no seqio: T0's part of the task set (`p3data.taskset`, the collection `t0`), which
drives registration (`p3data.tasks`), the cache builder and every command. The rules follow
t-zero's `t0/seqio_tasks/tasks.py`:
- one task per dataset/subset x template (ANLI: per round, named `anli_<template>_r1`...),
  named `re.sub(r"[^\\w\\d\\._]+", "_", f"{dataset}_{subset}_{template}")`;
- a `_score_eval` twin for every template with an `answer_choices` expression;
- training rate = T0's `train_size`, or 500,000 // (the dataset's templates) above 500k;
- eval mixtures hold the twins of `original_task` templates; the bias mixture all twins.

Two templates whose names differ only in punctuation ("A?" and "A!") make one task name, which
seqio cannot register twice. Rather than fail `import p3data.tasks` for everyone, the later
template in template-name order (or catalog order, across datasets) is skipped with a warning
naming both, and recorded in `T0Definitions.skipped`; it makes no task and shares no cap.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from p3data.dataset_key import DatasetKey
from p3data.datasets.catalog import Catalog, DatasetEntry
from p3data.taskset import SourceSplits, source_splits
from p3data.templates import Template, TemplateCollection
from p3data.templates.collection import damaged, promptsource_dir
from p3data.templates.render import T0_RULE, RowRule, RowStep
from p3data.vocab import T5, Vocabulary

if TYPE_CHECKING:
    from p3data.taskset import SplitCap, TaskSet

MAX_EXAMPLES_PER_DATASET = 500_000
SCORE_EVAL_SUFFIX = "_score_eval"
_LOG = logging.getLogger(__name__)

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
TRAIN_SCORE_EVAL_FAILED = {DatasetKey("amazon_polarity"), DatasetKey("dbpedia_14"),
                           DatasetKey("wiki_hop", "original")}
# t-zero's TASK_BLACKLIST names no task that exists at promptsource 0.1.0, so it is not needed.
# In T0's datasets.csv (and the bundled catalog), without templates in promptsource 0.1.0.
WITHOUT_TEMPLATES = frozenset({DatasetKey("jigsaw_toxicity_pred")})


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
    split_mapping: dict[str, SourceSplits]  # task split -> what it reads (`source_splits`)
    score_eval: bool = False
    cap: int = 0  # T0's training rate for this task
    row_rule: RowRule = T0_RULE  # how a render becomes an example (xP3's tasks: `XP3Rule`)
    dataset_step: RowStep | None = None  # on each row before templating (xP3's tasks' STEPS)
    vocabulary: Vocabulary = T5  # what it is tokenized with (xP3's tasks: mT5's)
    split_cap: SplitCap | None = None  # examples kept per split (xP3's tasks' cap)
    language: str | None = None  # xP3's tasks': the language folder of all their examples

    @property
    def base_name(self) -> str:
        return self.name.removesuffix(SCORE_EVAL_SUFFIX) if self.score_eval else self.name


@dataclass(frozen=True)
class MixtureSpec:
    """A T0 mixture: its tasks, and the one rule that weighs them.

    Training mixtures weigh a task by its cap (T0's `train_size` rule, fixed when the task is
    defined); the others by the examples its cache holds, at most MAX_EXAMPLES_PER_DATASET,
    which is what seqio's `mixing_rate_num_examples(maximum=...)` computes from the cache.
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

    def share(self, task: TaskSpec) -> int:
        """Each task takes the whole of what the rule gives it."""
        return 1

    @property
    def rate_rule(self) -> str:
        return self.RATE_RULE_BY_CAP if self.rate_by_cap else self.RATE_RULE_BY_EXAMPLES


@dataclass(frozen=True)
class SkippedTemplate:
    """A template that makes no task: a task name of it is that of a template defined before."""

    template: Template
    task: str
    kept: Template  # the template that has the task

    def __str__(self) -> str:
        return (f"{self.template.where} (id {self.template.id}) is skipped: its task name "
                f"{self.task!r} is also that of {self.kept.where} (id {self.kept.id}); rename "
                "one of them")


@dataclass(frozen=True)
class T0Definitions:
    """T0's part of the task set (`p3data.taskset`): its tasks, mixtures, skipped templates."""

    tasks: dict[str, TaskSpec]
    mixtures: dict[str, MixtureSpec]
    skipped: tuple[SkippedTemplate, ...] = ()


_RoundNames = dict[str | None, tuple[str, str | None]]  # round -> (task, score-eval twin)


def _is_original(template: Template) -> bool:
    return bool(template.metadata.original_task)


def define(catalog: Catalog, templates: TemplateCollection) -> T0Definitions:
    """T0's tasks and its 8 mixtures over every catalog dataset that has templates."""
    _check_template_set(catalog, templates)
    tasks: dict[str, TaskSpec] = {}
    members: dict[str, list[str]] = {name: [] for name in MIXTURE_NAMES}
    owners: dict[str, Template] = {}  # task name -> the template it was made of
    skipped: list[SkippedTemplate] = []
    for entry in catalog:
        if entry.key not in templates:
            continue  # a user's dataset without templates yet, or one of WITHOUT_TEMPLATES
        kept: list[tuple[Template, _RoundNames]] = []
        for template in templates[entry.key]:
            names = _task_names(entry, template)
            taken = [name for pair in names.values() for name in pair if name in owners]
            if taken:
                skipped.append(SkippedTemplate(template, taken[0], owners[taken[0]]))
                _LOG.warning("%s", skipped[-1])
                continue
            kept.append((template, names))
            owners.update((name, template) for pair in names.values() for name in pair if name)
        cap = training_cap(entry.train_size, len(kept))
        first_original = next((t for t, _ in kept if _is_original(t)), None)
        for round_name, mapping in entry.split_mappings().items():
            for template, names in kept:
                name, twin = names[round_name]
                tasks[name] = TaskSpec(name, entry, template, mapping, cap=cap)
                if twin:
                    tasks[twin] = TaskSpec(twin, entry, template, mapping, score_eval=True,
                                           cap=cap)
                for mixture in _mixtures_of(entry, template, twin, template is first_original):
                    members[mixture].append(twin if mixture.endswith(SCORE_EVAL_SUFFIX) else name)
    mixtures = {
        name: MixtureSpec(name, tuple(members[name]), not name.endswith(SCORE_EVAL_SUFFIX))
        for name in MIXTURE_NAMES
    }
    return T0Definitions(tasks, mixtures, tuple(skipped))


def _check_template_set(catalog: Catalog, templates: TemplateCollection) -> None:
    """Every dataset of the bundled catalog that promptsource 0.1.0 has templates for has
    some: a template folder without some of them is a damaged install, whose tasks would
    quietly be fewer (a user's catalog entry may have none yet)."""
    missing = [entry.name for entry in catalog if entry.bundled
               and entry.key not in templates and entry.key not in WITHOUT_TEMPLATES]
    if missing:
        named = ", ".join(missing[:5]) + (", ..." if len(missing) > 5 else "")
        raise damaged(promptsource_dir(), f"(promptsource 0.1.0's templates) has none for "
                      f"{len(missing)} of the datasets T0 has templates for ({named})")


def _task_names(entry: DatasetEntry, template: Template) -> _RoundNames:
    """Per round: the template's task name, and its `_score_eval` twin's when it has one."""
    base = task_name(entry.dataset, entry.subset, template.name)
    names: _RoundNames = {}
    for round_name in entry.split_mappings():
        name = f"{base}_{round_name}" if round_name else base
        names[round_name] = (name, name + SCORE_EVAL_SUFFIX if template.answer_choices else None)
    return names


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


def group_by_source_split(
    specs: Iterable[TaskSpec], splits: Collection[str] = ()
) -> dict[tuple[DatasetKey, str], list[tuple[TaskSpec, str]]]:
    """(dataset, source split) -> the (task, task split) pairs that read it, so that one pass
    over a dataset split serves all of its tasks (a task split of several source splits is
    in the group of each). `splits` narrows the task splits read (default: all of each
    task's); a task without any of them is left out."""
    groups: dict[tuple[DatasetKey, str], list[tuple[TaskSpec, str]]] = {}
    for spec in specs:
        for split, sources in spec.split_mapping.items():
            if splits and split not in splits:
                continue
            for source_split in source_splits(sources):
                groups.setdefault((spec.entry.key, source_split), []).append((spec, split))
    return groups


class T0Collection:
    """T0's tasks and mixtures over the catalog and templates in effect (`P3DATA_CATALOG` and
    `P3DATA_TEMPLATE_DIRS` included): the collection `t0` of the task set."""

    name = "t0"
    requires: tuple[str, ...] = ()

    def define(self, base: TaskSet) -> T0Definitions:
        return define(Catalog.load(), TemplateCollection.default())


COLLECTION = T0Collection()
