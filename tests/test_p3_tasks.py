"""P3 as BigScience published it (its 660 tasks) against the tasks p3data registers."""

from __future__ import annotations

import pytest

from p3data import t0
from p3data.datasets.samples import sample_rows
from p3data.p3_release.counts import p3_counts
from p3data.taskset import load_definitions
from p3data.templates.render import CompiledTemplate, Rendered

# Datasets of p3data's tasks of which P3 publishes no task at all.
DATASETS_NOT_IN_P3 = {
    "crows_pairs", "story_cloze/2016", "super_glue/axg", "wino_bias/type1_anti",
    "wino_bias/type1_pro", "wino_bias/type2_anti", "wino_bias/type2_pro",
}
# Of P3's datasets, the tasks P3 lacks other than the `_score_eval` twins of training tasks
# (which it leaves out by design): those of winogrande's one non-original template.
TASKS_NOT_IN_P3 = {
    "winogrande_winogrande_xl_True_or_False", "winogrande_winogrande_xl_True_or_False_score_eval",
    "winogrande_winogrande_debiased_True_or_False",
    "winogrande_winogrande_debiased_True_or_False_score_eval",
}
# The task splits P3 lists no example of (it leaves out empty splits): test answers are hidden.
EMPTY_IN_P3 = {
    ("adversarial_qa/dbidaf", "test"), ("adversarial_qa/dbert", "test"),
    ("adversarial_qa/droberta", "test"), ("kilt_tasks/hotpotqa", "test"), ("ropes", "test"),
    ("trivia_qa/unfiltered", "test"),
}


@pytest.fixture(scope="module")
def definitions() -> t0.T0Definitions:
    return load_definitions(["t0"]).part("t0")


@pytest.fixture(scope="module")
def p3_splits() -> dict[str, set[str]]:
    """P3's task -> the splits it publishes."""
    splits: dict[str, set[str]] = {}
    for task, split in p3_counts():
        splits.setdefault(task, set()).add(split)
    return splits


def test_p3_publishes_660_tasks(p3_splits):
    assert len(p3_splits) == 660
    assert sum(task.endswith(t0.SCORE_EVAL_SUFFIX) for task in p3_splits) == 116


def test_every_p3_task_is_registered_with_p3s_splits(definitions, p3_splits):
    assert sorted(p3_splits.keys() - definitions.tasks.keys()) == []
    for task, splits in p3_splits.items():
        assert splits <= definitions.tasks[task].split_mapping.keys(), task


def test_splits_p3_leaves_out_keep_no_sample_row(definitions, p3_splits):
    """The splits of P3's tasks that P3 does not list hold no example there; the templates
    keep no sample row of them either (the samples hide answers as the 2021 data did)."""
    left_out = [(task, split) for task, splits in p3_splits.items()
                for split in definitions.tasks[task].split_mapping.keys() - splits]
    assert {(definitions.tasks[t].entry.name, split) for t, split in left_out} == EMPTY_IN_P3
    for task, split in left_out:
        spec = definitions.tasks[task]
        compiled = CompiledTemplate(spec.template)
        rows = sample_rows(spec.entry.key, spec.split_mapping[split])
        assert rows, f"{task}/{split}: no sample rows"
        kept = [n for n, row in enumerate(rows) if isinstance(compiled.render(row, n), Rendered)]
        assert kept == [], f"{task}/{split}"


def test_what_p3_lacks(definitions, p3_splits):
    p3_datasets = {definitions.tasks[task].entry.name for task in p3_splits}
    assert {spec.entry.name for spec in definitions.tasks.values()} - p3_datasets == (
        DATASETS_NOT_IN_P3)
    lacking = {name for name, spec in definitions.tasks.items()
               if name not in p3_splits and spec.entry.name in p3_datasets
               and not (spec.score_eval and spec.entry.train)}
    assert lacking == TASKS_NOT_IN_P3


def test_winogrande_debiased_split_sizes_are_p3s(definitions):
    """Every winogrande template keeps every row, so P3's counts are the 2021 split sizes
    (twice those for a `_score_eval` twin: two answer choices)."""
    counts = p3_counts()
    published = {task for task, _ in counts}
    tasks = {name: spec for name, spec in definitions.tasks.items()
             if spec.entry.name == "winogrande/winogrande_debiased" and name in published}
    assert len(tasks) == 10
    for name, spec in tasks.items():
        for split, source in spec.split_mapping.items():
            assert counts[name, split] == (2 if spec.score_eval else 1) * spec.entry.splits[source]
