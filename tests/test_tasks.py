"""`import p3data.tasks`: stock seqio reads T0's tasks from the sample mirror, offline."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import seqio
from helpers.cache import assert_packs, assert_same_examples, read_examples, run_cache

from p3data import t0
from p3data.dataset_key import DatasetKey
from p3data.datasets.errors import DataNotFoundError
from p3data.datasets.samples import sample_rows
from p3data.datasets.stores import ENV_DATA_DIR, ENV_MANUAL_DIR
from p3data.templates.render import CompiledTemplate, Rendered

EOS = 1
pytestmark = pytest.mark.usefixtures("samples_in_seqio")


def examples(name: str, split: str, **kwargs) -> list[dict]:
    task = seqio.get_mixture_or_task(name)
    dataset = task.get_dataset(None, split=split, shuffle=False, **kwargs)
    return list(dataset.as_numpy_iterator())


def rendered(definitions: t0.T0Definitions, name: str, split: str) -> list[Rendered]:
    spec = definitions.tasks[name]
    rows = sample_rows(spec.entry.key, spec.split_mapping[split])
    compiled = CompiledTemplate(spec.template)
    outcomes = [compiled.render(row, i) for i, row in enumerate(rows)]
    return [o for o in outcomes if isinstance(o, Rendered)]


def test_everything_is_registered(t0_tasks):
    assert set(t0_tasks.tasks) <= set(seqio.TaskRegistry.names())
    assert len(t0_tasks.tasks) == 983
    mixture = seqio.get_mixture_or_task("t0_train")
    assert len(mixture.tasks) == 313
    assert sum(mixture.get_rate(task) for task in mixture.tasks) == 17_277_798
    for name in t0.MIXTURE_NAMES:
        assert name in seqio.MixtureRegistry.names()


@pytest.mark.parametrize("name, split", [
    ("super_glue_copa_exercise", "validation"),
    ("cos_e_v1.11_description_question_option_id", "train"),
    ("anli_GPT_3_style_r1", "validation"),
    ("squad_v2_Questions_with_Context", "train"),
])
def test_plain_task_features_and_text(t0_tasks, name, split):
    got = examples(name, split)
    want = rendered(t0_tasks, name, split)
    assert len(got) == len(want) > 0
    vocab = seqio.get_mixture_or_task(name).output_features["targets"].vocabulary
    for example, expected in zip(got, want, strict=True):
        assert example["inputs"].dtype == np.int32 and example["targets"].dtype == np.int32
        assert example["inputs_pretokenized"].decode() == expected.inputs
        assert example["targets_pretokenized"].decode() == expected.targets
        assert example["targets"][-1] == EOS and EOS not in example["inputs"]
        # SentencePiece normalises whitespace, as T5's model does.
        assert vocab.decode(example["inputs"].tolist()) == " ".join(expected.inputs.split())
        if expected.answer_choices is not None:
            assert [c.decode() for c in example["answer_choices"]] == expected.answer_choices


def test_anli_round_reads_its_own_split():
    got = examples("anli_GPT_3_style_r2", "validation")
    premises = {row["premise"] for row in sample_rows(DatasetKey("anli"), "dev_r2")}
    assert got and all(any(p in e["inputs_pretokenized"].decode() for p in premises) for e in got)


def test_hidden_labels_become_no_label():
    got = examples("super_glue_rte_GPT_3_style", "test")
    assert got and {e["targets_pretokenized"].decode() for e in got} == {"<NO LABEL>"}


def test_score_eval_twin_has_one_example_per_choice(t0_tasks):
    name = "super_glue_copa_exercise"
    twin = examples(name + "_score_eval", "validation")
    base = rendered(t0_tasks, name, "validation")
    assert len(twin) == sum(len(r.answer_choices) for r in base)
    for example in twin:
        assert example["idx"].dtype == np.int32 and example["idx"].shape == (2,)
        assert example["is_correct"].dtype == np.bool_ and example["weight"] == np.float32(1.0)
        assert example["targets"][-1] == EOS and "answer_choices" not in example
    by_input: dict[int, list] = {}
    for example in twin:
        by_input.setdefault(int(example["idx"][0]), []).append(example)
    assert sorted(by_input) == list(range(len(base)))
    for i, group in by_input.items():
        assert [int(e["idx"][1]) for e in group] == list(range(len(base[i].answer_choices)))
        correct = [e["targets_pretokenized"].decode() for e in group if e["is_correct"]]
        assert correct == [base[i].targets]


def test_unknown_task_is_a_clear_error():
    with pytest.raises(ValueError, match="No Task or Mixture found"):
        seqio.get_mixture_or_task("super_glue_copa_nope")


def test_missing_mirror_file_names_the_expected_path(tmp_path, monkeypatch):
    (tmp_path / "super_glue" / "copa").mkdir(parents=True)
    monkeypatch.setenv(ENV_DATA_DIR, str(tmp_path))
    with pytest.raises(DataNotFoundError, match=r"super_glue/copa.*'validation'.*validation\."):
        examples("super_glue_copa_exercise", "validation")


def test_missing_manual_download_says_where_to_put_it(tmp_path, monkeypatch):
    monkeypatch.delenv(ENV_DATA_DIR)
    monkeypatch.setenv(ENV_MANUAL_DIR, str(tmp_path))
    with pytest.raises(DataNotFoundError) as err:
        examples("story_cloze_2016_Answer_Given_options", "validation")
    message = str(err.value)
    assert "story_cloze/2016" in message and str(tmp_path / "story_cloze" / "2016") in message
    assert "http" in message


CACHED_TASKS = ["super_glue_copa_exercise", "super_glue_copa_exercise_score_eval",
                "anli_GPT_3_style_r1", "super_glue_rte_GPT_3_style"]


@pytest.fixture
def stock_cache(stock_seqio_cache) -> Path:
    """`seqio_cache_tasks --module_import=p3data.tasks`, the stock command line (conftest)."""
    return stock_seqio_cache


@pytest.mark.stock
@pytest.mark.parametrize("name", CACHED_TASKS)
def test_stock_cache_reads_back_like_on_the_fly(stock_cache, name):
    assert (stock_cache / name / "COMPLETED").exists()
    split = "test" if "rte" in name else "validation"
    assert_same_examples(read_examples(name, split, stock_cache), read_examples(name, split))


@pytest.mark.stock
def test_stock_cache_feeds_the_packing_feature_converter(stock_cache):
    assert_packs("super_glue_copa_exercise", "validation", stock_cache)


@pytest.mark.stock
def test_stock_and_p3data_caches_decode_to_the_same_examples(stock_cache, tmp_path):
    run_cache(tmp_path, "--tasks", "|".join(CACHED_TASKS))
    for name in CACHED_TASKS:
        split = "test" if "rte" in name else "validation"
        assert_same_examples(read_examples(name, split, stock_cache),
                             read_examples(name, split, tmp_path))
