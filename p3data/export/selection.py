"""Which of a cache's tasks an export writes: those of the mixtures and task patterns asked
for, and those of the mixtures that the cache lacks; in an SFT shape, none of the score-eval
twins."""

from __future__ import annotations

from collections.abc import Sequence

from p3data.errors import P3DataError


def select_tasks(available: Sequence[str], mixtures: Sequence[str] = (),
                 patterns: Sequence[str] = ()) -> tuple[list[str], list[str]]:
    """The cache's tasks of the given mixtures (any of the task set's), narrowed (or, without
    mixtures, chosen) by regexes that must match whole task names, all tasks without either;
    and the mixtures' tasks that the cache lacks."""
    names, lacking = sorted(available), []
    if mixtures:
        from p3data.taskset import load_definitions

        definitions = load_definitions()
        wanted = {task for name in mixtures for task in definitions.mixture(name).tasks}
        names, lacking = [n for n in names if n in wanted], sorted(wanted - set(names))
    if patterns:
        from p3data.taskset import matching

        names, lacking = matching(names, patterns), matching(lacking, patterns)
    if not names:
        where = f" of {', '.join(mixtures)}" if mixtures else ""
        matching = f" fully matching {' or '.join(patterns)}" if patterns else ""
        raise P3DataError(f"the cache holds no task{where}{matching}", setting="tasks")
    return names, lacking


def score_eval_twin(task: str) -> bool:
    """Whether `task` is a score-eval twin (or a variant of one): one example per answer
    choice, wrong ones included, which no SFT run should learn."""
    from p3data.fewshot.variants import name_parts
    from p3data.t0 import SCORE_EVAL_SUFFIX

    return name_parts(task)[0].endswith(SCORE_EVAL_SUFFIX)


def training_tasks(names: Sequence[str]) -> tuple[list[str], list[str]]:
    """(the tasks an SFT shape exports, the score-eval twins it leaves out)."""
    twins = [name for name in names if score_eval_twin(name)]
    kept = [name for name in names if not score_eval_twin(name)]
    if not kept:
        raise P3DataError(f"the tasks asked for are all score-eval twins (e.g. {twins[0]}): "
                          "one example per answer choice, wrong ones included, is not SFT "
                          "data; export them with --shape p3", setting="tasks")
    return kept, twins
