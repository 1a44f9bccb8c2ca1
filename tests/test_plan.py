"""`p3data plan`: T0's rates, shares, expected examples and tokens, and customisations."""

from __future__ import annotations

import json

import pytest
from helpers.templates import template_entry, write_templates

from p3data.cli import main
from p3data.datasets.catalog import ENV_CATALOG
from p3data.errors import P3DataError
from p3data.quality.common import TokenCounter
from p3data.quality.projection import compare, plan, published_definitions
from p3data.taskset import load_definitions
from p3data.templates.collection import ENV_TEMPLATE_DIRS


@pytest.fixture(scope="module")
def t0_train():
    return plan(load_definitions(), "t0_train", TokenCounter())


def test_t0_train_totals(t0_train):
    assert len(t0_train.tasks) == 313
    assert t0_train.total_rate == 17_277_798 == t0_train.examples
    assert sum(task.share for task in t0_train.tasks) == pytest.approx(1.0)
    assert sum(task.examples for task in t0_train.tasks) == pytest.approx(17_277_798)


def test_caps_and_epochs(t0_train):
    tasks = {task.task: task for task in t0_train.tasks}
    amazon = tasks["amazon_polarity_Is_this_product_review_positive"]
    assert (amazon.source_rows, amazon.cap, amazon.rate) == (3_600_000, 55_555, 55_555)
    assert amazon.epochs == pytest.approx(55_555 / 3_600_000)
    mrpc = tasks["glue_mrpc_equivalent"]
    assert (mrpc.source_rows, mrpc.rate, mrpc.epochs) == (3_668, 3_668, 1.0)


def test_tokens_are_measured_on_the_samples(t0_train):
    for task in t0_train.tasks:
        if task.tokens_per_example is not None:
            assert task.tokens_per_example > 1  # at least the EOS and some text
            assert task.tokens == pytest.approx(task.examples * task.tokens_per_example)
    measured = [task for task in t0_train.tasks if task.tokens is not None]
    assert len(measured) == 313  # every t0_train template keeps some sample row
    assert t0_train.tokens == pytest.approx(sum(task.tokens for task in measured))


def test_expected_examples_scale_with_steps(capsys):
    assert main(["plan", "t0_train", "--steps", "100", "--batch-size", "8", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["total_rate"] == 17_277_798 and data["examples"] == 800
    mrpc = next(t for t in data["tasks"] if t["task"] == "glue_mrpc_equivalent")
    assert mrpc["examples"] == pytest.approx(800 * 3_668 / 17_277_798)
    assert data["differences"] == {"added": [], "removed": [], "rate_changed": [],
                                   "template_changed": []}


def test_command_table(capsys):
    assert main(["plan", "t0_train", "--examples", "1000000"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("t0_train: 313 tasks on 38 datasets, total rate 17,277,798")
    assert "measured on the bundled sample rows" in out
    assert out.rstrip().endswith("matches T0's published t0_train")


def test_evaluation_mixtures_are_refused():
    with pytest.raises(P3DataError, match="evaluation mixture"):
        plan(load_definitions(), "t0_eval_score_eval", TokenCounter())


def test_steps_need_a_batch_size(capsys):
    assert main(["plan", "t0_train", "--steps", "10"]) == 2
    assert "--batch-size" in capsys.readouterr().err


def test_differences_from_the_published_definition(tmp_path, monkeypatch, capsys):
    # One more amazon_polarity template: a new task, and 500,000 // 10 for every one of them.
    templates = tmp_path / "templates"
    write_templates(templates, "amazon_polarity", None, template_entry(
        "fx-amazon", "fixture amazon", "{{ content }} ||| {{ answer_choices[label] }}",
        "negative ||| positive"))
    monkeypatch.setenv(ENV_TEMPLATE_DIRS, str(templates))
    catalog = tmp_path / "catalog.yaml"  # trec no longer trained on
    catalog.write_text("- dataset: trec\n  splits: {train: 5452, test: 500}\n"
                       "  features: {text: string}\n")
    monkeypatch.setenv(ENV_CATALOG, str(catalog))
    diff = compare(load_definitions().part("t0"), published_definitions(), "t0_train")
    assert diff.added == ["amazon_polarity_fixture_amazon"]
    assert len(diff.removed) == 18 and all(name.startswith("trec_") for name in diff.removed)
    assert len(diff.rate_changed) == 9
    assert {(c["published"], c["current"]) for c in diff.rate_changed} == {(55_555, 50_000)}
    assert diff.template_changed == []
    assert main(["plan", "t0_train"]) == 0
    out = capsys.readouterr().out
    assert "differences from T0's published t0_train:" in out
    assert "  added: amazon_polarity_fixture_amazon" in out
    assert "  rate: amazon_polarity_Is_this_product_review_positive 55,555 -> 50,000" in out
