"""xP3's held-out evaluation (the recipe's `EVAL_DATASETS_L1`) as rank-classification tasks,
`xp3_<dataset>_<config>_<template>_score_eval`, and their mixture `xp3_eval`.

Which templates and splits: those of xmtf's rank evaluation of mT0 and BLOOMZ, as
bigscience-workshop/bigscience `evaluation/results/tr13/tzeroeval/evaluate_mt0.slurm` lists
them for L1 (`DATASETS_AND_CONFIGS_L1`, 160 runs): per dataset family 5 templates of the
English prompt folder, on the `validation` split (anli: `dev_r1`..`dev_r3`; xwinograd:
`test`), with the templates of the fork's `xp3mt` branch (xmtf's README: "Rank Evaluation").
Held out of every training mixture: no training pair reads these datasets.
"""

from __future__ import annotations

from pathlib import Path

from p3data.datasets.catalog import Catalog, DatasetEntry
from p3data.t0 import SCORE_EVAL_SUFFIX, TaskSpec, task_name
from p3data.taskset import Contribution
from p3data.templates.collection import folder_templates
from p3data.vocab import MT5
from p3data.xp3_recipe.languages import template_language
from p3data.xp3_recipe.recipe import EVAL_DATASETS_L1, prompt_folder
from p3data.xp3_recipe.tasks import KeptMixture

MIXTURE = "xp3_eval"
COPA = ("best_option", "C1 or C2? premise, so/because…", "i_am_hesitating", "cause_effect",
        "plausible_alternatives")
NLI = ("guaranteed/possible/impossible", "MNLI crowdsource", "GPT-3 style",
       "justified in saying", "can we infer")
RTE = ("MNLI crowdsource", "GPT-3 style", "does it follow that", "should assume",
       "guaranteed true")
WINOGRAD = ("underscore refer to", "Replace", "stand for", "does underscore refer to",
            "True or False")
STORY = ("Story Continuation and Options", "Answer Given options", "Novel Correct Ending",
         "Generate Ending", "Choose Story Ending")
# dataset (config) -> the evaluation's templates and split
TEMPLATES = {
    "xcopa": (COPA, "validation"), "super_glue/copa": (COPA, "validation"),
    "super_glue/rte": (RTE, "validation"), "super_glue/cb": (NLI, "validation"),
    "xnli": (NLI, "validation"), "anli": (NLI, "validation"),
    "winogrande": (WINOGRAD, "validation"), "Muennighoff/xwinograd": (WINOGRAD, "test"),
    "story_cloze": (STORY, "validation"), "Muennighoff/xstory_cloze": (STORY, "validation"),
}
# The Hub's copy of xstory_cloze names its validation split `eval` (the catalog's).
SPLIT_ALIASES = {("Muennighoff/xstory_cloze", "validation"): "eval"}
RATE_RULE = "examples of its evaluation split (before a build: the catalog's size)"


def _evaluated(dataset: str, config: str | None) -> tuple[tuple[str, ...], str]:
    return TEMPLATES.get(f"{dataset}/{config}") or TEMPLATES[dataset]


def _splits(entry: DatasetEntry, split: str) -> dict[str | None, dict[str, str]]:
    """Per anli round (else one, None): the task split and the source split it reads."""
    source = SPLIT_ALIASES.get((entry.dataset, split), split)
    rounds = {name: mapping for name, mapping in entry.split_mappings().items() if name}
    if rounds:
        return {name: {split: mapping[split]} for name, mapping in rounds.items()}
    return {None: {split: source}}


def define(templates: Path, catalog: Catalog) -> Contribution:
    """The score-eval tasks of the L1 evaluation sets and the mixture `xp3_eval`."""
    tasks: dict[str, TaskSpec] = {}
    for dataset, config in EVAL_DATASETS_L1:
        names, split = _evaluated(dataset, config)
        folder = folder_templates(templates, prompt_folder(dataset, config,
                                                           english_prompts=True))
        entry = catalog.get(dataset, config)
        for template_name in names:
            template = folder[template_name]
            for round_name, mapping in _splits(entry, split).items():
                base = task_name(dataset, config, template_name)
                name = f"xp3_{base}{f'_{round_name}' if round_name else ''}{SCORE_EVAL_SUFFIX}"
                tasks[name] = TaskSpec(
                    name, entry, template, mapping, score_eval=True,
                    cap=entry.splits.get(next(iter(mapping.values()))) or 0, vocabulary=MT5,
                    language=template_language(dataset, config, template_name))
    return Contribution(tasks, {MIXTURE: KeptMixture(MIXTURE, tuple(tasks), rate_rule=RATE_RULE)})
