"""Few-shot variant tasks and mixtures as pure data, over T0's definitions (no seqio).

Every T0 task `T` (the `_score_eval` twins included) has a variant per shot count, `T_<k>shot`
(`T_<k>shot_<label>` for labelled settings). A variant mixture takes a T0 mixture's tasks (or a
list of tasks) and splits each task's T0 rate over its variants by the settings' ratio; its rate
rule is the T0 mixture's (`t0.MixtureSpec.rate`), so the two can never disagree. Registration,
like T0's, happens elsewhere (`p3data.tasks`); this module only says what to register.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from p3data.datasets.catalog import DatasetEntry
from p3data.errors import P3DataError
from p3data.fewshot.settings import LABEL_PATTERN, FewshotSettings
from p3data.t0 import TRAINING_MIXTURES, MixtureSpec, T0Definitions, TaskSpec
from p3data.templates import Template
from p3data.templates.render import RowRule, RowStep

if TYPE_CHECKING:
    from p3data.taskset import TaskSet
    from p3data.vocab import Vocabulary

EVAL_MIXTURE = "t0_eval_score_eval"
EVAL_SHOTS = (1, 3, 5)
MIXTURE, TASKS = "mixture", "tasks"  # the settings that name a variant mixture and its tasks
_VARIANT_NAME = re.compile(rf"(?P<task>.+)_(?P<shots>[0-9]+)shot(?:_{LABEL_PATTERN})?")


def variant_name(task: str, shots: int, label: str = "") -> str:
    """`T_<k>shot`, or `T_<k>shot_<label>` for labelled settings."""
    return f"{task}_{shots}shot" + (f"_{label}" if label else "")


def name_parts(name: str) -> tuple[str, int | None]:
    """A task name as (the T0 task it is made from, its shot count; None: T0's own task)."""
    if (found := _VARIANT_NAME.fullmatch(name)) is None:
        return name, None
    return found["task"], int(found["shots"])


def fewshot_mixture_name(mixture: str, label: str = "") -> str:
    """`<M>_fewshot`: a T0 training mixture's tasks in all their variants."""
    return f"{mixture}_fewshot" + (f"_{label}" if label else "")


def eval_mixture_name(shots: int, label: str = "") -> str:
    """`t0_eval_score_eval_<k>shot`: T0's held-out evaluation at k shots."""
    return variant_name(EVAL_MIXTURE, shots, label)


@dataclass(frozen=True)
class VariantSpec:
    """One few-shot variant task: a T0 task, a shot count and the settings that make it."""

    base: TaskSpec
    shots: int
    settings: FewshotSettings

    @property
    def name(self) -> str:
        return variant_name(self.base.name, self.shots, self.settings.label)

    # What it reads and how it renders are its task's: the builder plans both kinds alike.
    @property
    def entry(self) -> DatasetEntry:
        return self.base.entry

    @property
    def template(self) -> Template:
        return self.base.template

    @property
    def split_mapping(self) -> dict[str, str]:
        return self.base.split_mapping

    @property
    def score_eval(self) -> bool:
        return self.base.score_eval

    @property
    def cap(self) -> int:
        """Its task's T0 cap: a variant mixture rates it at a share of that."""
        return self.base.cap

    @property
    def row_rule(self) -> RowRule:
        return self.base.row_rule

    @property
    def dataset_step(self) -> RowStep | None:
        return self.base.dataset_step

    @property
    def vocabulary(self) -> Vocabulary:
        return self.base.vocabulary

    @property
    def language(self) -> None:
        return None  # T0's tasks record none

    @property
    def split_cap(self) -> None:
        """Never capped: variants are of T0's tasks, which keep every example."""
        return None

    @property
    def draw_task(self) -> str:
        """The task name exemplars are drawn for: a `_score_eval` twin draws as its base task
        does, so both show the same exemplars."""
        return self.base.base_name

    def prompt_record(self) -> dict[str, object]:
        """What makes its prompts, as its fingerprint and its manifest record it: its task,
        shot count and draw task, and its settings' `prompt_record`."""
        return {"task": self.base.name, "shots": self.shots, "draw_task": self.draw_task,
                **self.settings.prompt_record()}


@dataclass(frozen=True)
class VariantMixture:
    """A mixture of few-shot variants: each task's T0 rate, split by the settings' ratio."""

    name: str
    variants: tuple[VariantSpec, ...]
    settings: FewshotSettings
    rate_by_cap: bool
    tasks: tuple[str, ...] = field(init=False)  # the variants' names

    def __post_init__(self) -> None:
        object.__setattr__(self, "tasks", tuple(variant.name for variant in self.variants))

    @property
    def rate_rule(self) -> str:
        rule = MixtureSpec.RATE_RULE_BY_CAP if self.rate_by_cap else (
            MixtureSpec.RATE_RULE_BY_EXAMPLES)
        if len(self.settings.shots) == 1:
            return rule
        return f"{rule}, split over each task's variants by the settings' ratio"

    def share(self, variant: VariantSpec) -> float:
        return self.settings.share(variant.shots)

    def rate(self, variant: VariantSpec, examples: int | None = None) -> float | None:
        """The variant's rate: its task's rate under the T0 rule, times its share; `examples`
        as `MixtureSpec.rate` takes them (a variant has its task's examples)."""
        rule = MixtureSpec(self.name, (), self.rate_by_cap)
        base = rule.rate(variant.base, examples)
        return None if base is None else base * self.share(variant)


def all_variants(definitions: T0Definitions,
                 settings: FewshotSettings | None = None) -> dict[str, VariantSpec]:
    """Every T0 task's variants, by name, in task order then shot count."""
    settings = settings or FewshotSettings()
    variants = {}
    for spec in definitions.tasks.values():
        for k in settings.shots:
            variant = VariantSpec(spec, k, settings)
            variants[variant.name] = variant
    return variants


def define_variant_mixture(definitions: TaskSet, name: str, *, mixture: str | None = None,
                           tasks: Sequence[str] = (), settings: FewshotSettings | None = None,
                           rate_by_cap: bool | None = None) -> VariantMixture:
    """A variant mixture of a T0 mixture's tasks, or of the T0 tasks listed, checked: an
    unknown or reused name and an unknown task are one line each, naming the value and its
    setting. `rate_by_cap` defaults to the T0 mixture's rule, and to T0's cap for a list of
    tasks. Register it with `p3data.registry.register_variant_mixture`."""
    t0 = definitions.part("t0")
    if not isinstance(name, str) or not name.strip():
        raise P3DataError(f"{MIXTURE}={name!r}: a mixture needs a name", setting=MIXTURE)
    if name in definitions.mixtures:
        raise P3DataError(f"{MIXTURE}={name!r}: a mixture of that name is defined already; "
                          "choose another name", setting=MIXTURE)
    if (mixture is None) == (not tasks):
        raise P3DataError(f"{TASKS}: give either a T0 mixture or a list of tasks for {name!r}",
                          setting=TASKS)
    if mixture is not None:
        if mixture not in t0.mixtures:
            raise P3DataError(f"{MIXTURE}={mixture!r}: not a T0 mixture; known: "
                              + ", ".join(t0.mixtures), setting=MIXTURE)
        chosen = t0.mixtures[mixture]
        names, by_cap = chosen.tasks, chosen.rate_by_cap
    else:
        if isinstance(tasks, str):
            tasks = (tasks,)
        unknown = [task for task in tasks if task not in t0.tasks]
        if unknown:
            raise P3DataError(f"{TASKS}: {unknown[0]!r} is not a T0 task", setting=TASKS)
        names, by_cap = tuple(dict.fromkeys(tasks)), True
    settings = settings or FewshotSettings()
    variants = tuple(VariantSpec(t0.tasks[task], k, settings)
                     for task in names for k in settings.shots)
    return VariantMixture(name, variants, settings, by_cap if rate_by_cap is None else rate_by_cap)


def default_variant_mixtures(definitions: TaskSet,
                             settings: FewshotSettings | None = None) -> dict[str, VariantMixture]:
    """`<M>_fewshot` for T0's three training mixtures (all the settings' shot counts, by
    ratio) and `t0_eval_score_eval_<k>shot` for k in 1, 3, 5 (that shot count only)."""
    settings = settings or FewshotSettings()
    mixtures = {}
    for mixture in TRAINING_MIXTURES:
        name = fewshot_mixture_name(mixture, settings.label)
        mixtures[name] = define_variant_mixture(definitions, name, mixture=mixture,
                                                settings=settings)
    for k in EVAL_SHOTS:
        name = eval_mixture_name(k, settings.label)
        only_k = dataclasses.replace(settings, shots=(k,), ratio=None)
        mixtures[name] = define_variant_mixture(definitions, name, mixture=EVAL_MIXTURE,
                                                settings=only_k)
    return mixtures
