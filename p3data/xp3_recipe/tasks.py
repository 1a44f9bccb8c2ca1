"""xP3's and xP3mt's tasks and mixtures, from the recipe's pairs (`pairs.prompt_pairs`).

One task per pair, named `<set>_<dataset>_<config>_<template>` and cleaned like T0's names
(`xp3_glue_mrpc_equivalent`, `xp3mt_xnli_sw_...`): its catalog entry (xP3's catalog, T0's for the
English datasets), the template of its prompt folder, one task split `train` made of the
recipe's training splits (less those `splits.SKIP_PROMPTS` skips for the template) one after
another, in the config's split order (the recipe's loop), the row rule of its language folder
(`XP3Rule(strip_connection=False)` for `code` only), its dataset's step, and the recipe's cap
on each source split apart (`SPLIT_CAP`; which examples it keeps: `p3data.builder.selection`).
xP3 trains on all of them, test splits included: under seqio's `train`, as every recipe reads
a training mixture, and not under their own names, which a `train` reader would miss.

Mixtures: `<set>` (every task) and `<set>_<language>` per language folder, each task weighed
by the examples its build kept in `train` (`KeptMixture`). Before a build, by the placeholder
of `placeholder_cap`: the recipe's 100,000 examples per (config, split, template) summed over
the task's training splits, each split's catalog size when smaller (an unknown size counts as
the cap).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from p3data.datasets.catalog import CATALOG_FILE, XP3_CATALOG_FILE, Catalog, read_catalog_file
from p3data.errors import P3DataError
from p3data.t0 import TaskSpec, task_name
from p3data.taskset import RATE_SPLIT, Contribution, SplitCap
from p3data.templates import Template
from p3data.templates.collection import folder_templates
from p3data.templates.render import XP3Rule
from p3data.vocab import MT5
from p3data.xp3_recipe.pairs import PromptPair, prompt_pairs
from p3data.xp3_recipe.splits import skipped, train_splits
from p3data.xp3_recipe.steps import STEPS

CAP_PER_SPLIT = 100_000  # the recipe's MAX_EXAMPLES_PER_DATASET_PROMPT, per split and template
# The rows the recipe renders per split and template before the cap (its `max_range`): wmt22's
# 50,000 are a random sample too (its laser_score sort came before the shuffle, to no effect).
SPLIT_CAP = SplitCap(CAP_PER_SPLIT, pool=500_000)
WMT22 = "allenai/wmt22_african"
WMT22_CAP = SplitCap(CAP_PER_SPLIT, pool=50_000)
CODE = "code"  # the language folder whose templates keep the connection (`strip_connection`)
RATE_RULE = ("examples kept in train, every training split of the recipe's (before a build: "
             f"at most {CAP_PER_SPLIT:,} per training split, or its catalog size when smaller)")


@functools.cache
def xp3_catalog() -> Catalog:
    """T0's bundled catalog (xP3's English datasets) and xP3's, read once."""
    return Catalog([*read_catalog_file(CATALOG_FILE, validate=False),
                    *read_catalog_file(XP3_CATALOG_FILE, validate=False)])


def placeholder_cap(sizes: Iterable[int | None]) -> int:
    """The cap-based placeholder rate of a task whose training splits have `sizes`."""
    return sum(CAP_PER_SPLIT if size is None else min(size, CAP_PER_SPLIT) for size in sizes)


@dataclass(frozen=True)
class KeptMixture:
    """An xP3 mixture: each task weighed by the examples its build kept in `train`, all its
    training splits (`RATE_RULE`), xP3's rate; without a build, by its placeholder cap."""

    name: str
    tasks: tuple[str, ...]
    rate_by_cap: bool = False
    rate_rule: str = RATE_RULE

    def share(self, task: TaskSpec) -> int:
        return 1

    def rate(self, task: TaskSpec, examples: int | None = None) -> int:
        """`examples`: kept in `train`, as a cache counts them (None: no cache)."""
        return task.cap if examples is None else examples


def pair_task(set_name: str, pair: PromptPair, catalog: Catalog, templates: Path) -> TaskSpec:
    """The task of one pair of the recipe."""
    entry = catalog.get(pair.dataset, pair.config)
    splits = [split for split in train_splits(pair.dataset, pair.config, list(entry.splits))
              if not skipped(pair.prompt_folder, split, pair.template)]
    return TaskSpec(
        f"{set_name}_" + task_name(pair.dataset, pair.config, pair.template),
        entry,
        _folder_templates(templates, pair.prompt_folder)[pair.template],
        {RATE_SPLIT: splits[0] if len(splits) == 1 else tuple(splits)} if splits else {},
        cap=placeholder_cap(entry.splits[split] for split in splits),
        row_rule=XP3Rule(strip_connection=pair.language != CODE),
        dataset_step=STEPS.get(pair.dataset),
        vocabulary=MT5,
        split_cap=WMT22_CAP if pair.dataset == WMT22 else SPLIT_CAP,
        language=pair.language,
    )


@functools.cache
def _folder_templates(templates: Path, folder: str) -> dict[str, Template]:
    """`folder_templates`, read once per process (the pairs and their tasks both ask)."""
    return folder_templates(templates, folder)


def define(set_name: str, templates: Path, catalog: Catalog) -> Contribution:
    """The tasks of every pair the recipe builds for `set_name` with at least one training
    split, and the mixtures `<set>` and `<set>_<language>`."""
    tasks: dict[str, TaskSpec] = {}
    languages: dict[str, list[str]] = {}
    for pair in prompt_pairs(set_name, templates, read=_folder_templates):
        spec = pair_task(set_name, pair, catalog, templates)
        if not spec.split_mapping:
            continue  # every training split skipped for this template: the recipe writes none
        if spec.name in tasks:
            raise P3DataError(f"{set_name}: {pair.prompt_folder}'s template {pair.template!r} "
                              f"makes the task name {spec.name!r} a second time")
        tasks[spec.name] = spec
        languages.setdefault(pair.language, []).append(spec.name)
    mixtures = {set_name: KeptMixture(set_name, tuple(tasks))}
    for language, names in sorted(languages.items()):
        mixtures[f"{set_name}_{language}"] = KeptMixture(f"{set_name}_{language}", tuple(names))
    return Contribution(tasks, mixtures)
