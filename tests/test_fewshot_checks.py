"""The checks before training on few-shot variants: `validate` makes their prompts as the cache
does and reports shots, fitting and cut tokens; `plan` rates and measures variant mixtures."""

from __future__ import annotations

import pytest

from p3data.datasets.samples import SAMPLES_DIR
from p3data.fewshot import FewshotSettings, VariantSpec
from p3data.quality.common import TokenCounter
from p3data.quality.projection import format_plan, plan
from p3data.quality.validate import format_report, validate
from p3data.taskset import load_definitions


@pytest.fixture(scope="module")
def definitions():
    return load_definitions()


def test_validate_reports_a_short_pool(definitions):
    """duorc's sample rows share their plots: its question-generation template has 3 distinct
    exemplar inputs to show, so every 5-shot query gets 3, recorded as a short pool."""
    spec = definitions.task("duorc_SelfRC_generate_question_5shot")
    [report] = validate([spec], str(SAMPLES_DIR), TokenCounter()).reports
    assert report.fewshot["shots"] == {"3": report.kept} and report.kept > 0
    assert report.fewshot["short_pool"] == report.kept and report.fewshot["no_room"] == 0


def test_validate_fits_long_queries_to_a_short_input_length(definitions):
    settings = FewshotSettings(shots=(1,), input_length=128, label="short")
    spec = VariantSpec(definitions.task("cnn_dailymail_3.0.0_news_summary"), 1, settings)
    validation = validate([spec], str(SAMPLES_DIR), TokenCounter())
    [report] = validation.reports
    stats = report.fewshot
    assert report.task == "cnn_dailymail_3.0.0_news_summary_1shot_short"
    assert stats["examples"] == report.kept and stats["fitted"] > 0 and stats["cut_tokens"] > 0
    assert report.inputs_over == 0 and report.max_inputs <= 128  # as the prompts are cut
    assert sum(stats["shots"].values()) == report.kept and stats["no_room"] > 0
    table = format_report(validation)
    assert "few-shot task" in table and "cnn_dailymail_3.0.0_news_summary_1shot_short" in table


def test_plan_of_a_fewshot_mixture_splits_t0s_rates(definitions):
    fewshot = plan(definitions, "t0_train_fewshot", TokenCounter())
    zero_shot = plan(definitions, "t0_train", TokenCounter())
    assert len(fewshot.tasks) == 4 * len(zero_shot.tasks)
    assert fewshot.total_rate == pytest.approx(zero_shot.total_rate)
    by_name = {task.task: task for task in fewshot.tasks}
    for task in zero_shot.tasks:
        assert by_name[task.task + "_0shot"].rate == pytest.approx(task.rate / 2)
        five = by_name[task.task + "_5shot"]
        if five.tokens_per_example is not None:  # exemplars cost tokens
            assert five.tokens_per_example > by_name[task.task + "_0shot"].tokens_per_example
    assert fewshot.differences is None
    assert format_plan(fewshot).rstrip().endswith(
        "split over each task's variants by the settings' ratio (not one of T0's published "
        "mixtures)")


def test_list_and_show_variants(capsys):
    from p3data.cli import main

    assert main(["list", "--mixture", "t0_eval_score_eval_1shot"]) == 0
    names = capsys.readouterr().out.splitlines()
    assert len(names) == 116 and all(name.endswith("_score_eval_1shot") for name in names)
    assert main(["show", "super_glue_rte_GPT_3_style_score_eval_3shot"]) == 0
    out = capsys.readouterr().out
    assert "few-shot:  3 exemplars of super_glue_rte_GPT_3_style_score_eval (from train)" in out
    assert "exemplar_rows: int64 [None]" in out and "t0_eval_score_eval_3shot" in out
