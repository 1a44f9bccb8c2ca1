"""T0's tasks' few-shot variants and their mixtures, as the collection `fewshot` of the task
set (`p3data.taskset`): every T0 task's `T_<k>shot` at the default settings, `<M>_fewshot`
and `t0_eval_score_eval_<k>shot`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from p3data.fewshot.variants import all_variants, default_variant_mixtures

if TYPE_CHECKING:
    from p3data.taskset import Contribution, TaskSet


class FewshotCollection:
    """Built on T0's tasks (`requires`), as each variant re-prompts one of them."""

    name = "fewshot"
    requires = ("t0",)

    def define(self, base: TaskSet) -> Contribution:
        from p3data.taskset import Contribution

        return Contribution(dict(all_variants(base.part("t0"))), dict(
            default_variant_mixtures(base)))


COLLECTION = FewshotCollection()
