"""Few-shot settings, variant names and variant mixtures: defaults, one line per bad value, and
the package's place in the layers."""

from __future__ import annotations

import ast
import configparser
import dataclasses
import math
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.fewshot import definitions, taskset

from p3data import t0
from p3data.builder.fingerprint import pool_fingerprint, task_fingerprint
from p3data.builder.jobs import CacheConfig
from p3data.errors import P3DataError
from p3data.fewshot import FewshotSettings, VariantSpec, define_variant_mixture
from p3data.fewshot.settings import (
    MIN_INPUT_LENGTH,
    NOT_IN_PROMPTS,
    POOL_SETTINGS,
    PROMPT_SETTINGS,
    default_ratio,
)
from p3data.fewshot.variants import all_variants, default_variant_mixtures, variant_name

PACKAGE = Path(__file__).parent.parent / "p3data" / "fewshot"


def test_defaults_are_flans_pattern_at_t0s_length():
    settings = FewshotSettings()
    assert settings.shots == (0, 1, 3, 5)
    assert (settings.exemplar_separator, settings.example_separator) == ("\n\n", "\n\n\n")
    assert settings.input_length == 1024
    assert settings.ratio == {0: 0.5, 1: 1 / 6, 3: 1 / 6, 5: 1 / 6}
    assert math.isclose(sum(settings.ratio.values()), 1)
    assert settings.prompt_changes() == [] and settings.label == ""
    assert hash(settings) == hash(FewshotSettings())


def test_default_ratio_without_zero_shot_or_with_it_alone():
    assert default_ratio((1, 3)) == {1: 0.5, 3: 0.5}
    assert default_ratio((0,)) == {0: 1.0}
    assert default_ratio((5,)) == {5: 1.0}


def test_settings_sort_shots_and_keep_a_given_ratio():
    settings = FewshotSettings(shots=[5, 0, 2], ratio={0: 0.25, 2: 0.25, 5: 0.5})
    assert settings.shots == (0, 2, 5)
    assert settings.share(5) == 0.5


BAD_VALUES = [
    ({"shots": (0, 1, 7.5)}, "shots", "7.5"),
    ({"shots": (0, -1)}, "shots", "-1"),
    ({"shots": (0, 33)}, "shots", "33"),
    ({"shots": (1, 1)}, "shots", "(1, 1)"),
    ({"shots": ()}, "shots", "()"),
    ({"shots": "0,1"}, "shots", "'0,1'"),
    ({"ratio": {0: 0.5, 1: 0.2, 3: 0.1, 5: 0.1}}, "shot_ratio", "sum to 0.9"),
    ({"ratio": {0: 0.5, 1: 0.5}}, "shot_ratio", "{0: 0.5, 1: 0.5}"),
    ({"ratio": {0: 1.5, 1: -0.5, 3: 0, 5: 0}}, "shot_ratio", "-0.5"),
    ({"ratio": {0: math.nan, 1: 1, 3: 0, 5: 0}}, "shot_ratio", "nan"),
    ({"ratio": [0.5, 0.5]}, "shot_ratio", "[0.5, 0.5]"),
    ({"exemplar_separator": ""}, "exemplar_separator", "''"),
    ({"example_separator": "", "label": "x"}, "example_separator", "''"),
    ({"example_separator": None, "label": "x"}, "example_separator", "None"),
    ({"input_length": 10, "label": "x"}, "input_length", "10"),
    ({"input_length": MIN_INPUT_LENGTH - 1, "label": "x"}, "input_length", "63"),
    ({"input_length": 512.0, "label": "x"}, "input_length", "512.0"),
    ({"input_length": True, "label": "x"}, "input_length", "True"),
    ({"seed": -3, "label": "x"}, "seed", "-3"),
    ({"input_length": 512}, "variant_label", "input_length=512"),
    ({"example_separator": "\n"}, "variant_label", "example_separator='\\n'"),
    ({"label": "has space"}, "variant_label", "'has space'"),
]


@pytest.mark.parametrize(("kwargs", "setting", "value"), BAD_VALUES,
                         ids=[f"{s}:{v}" for _, s, v in BAD_VALUES])
def test_every_bad_value_is_one_line_naming_it_and_its_setting(kwargs, setting, value):
    with pytest.raises(P3DataError) as caught:
        FewshotSettings(**kwargs)
    message = str(caught.value)
    assert "\n" not in message
    assert caught.value.setting == setting
    assert value in message, message
    assert setting in message


def test_settings_that_change_prompts_need_a_label_which_names_their_tasks():
    settings = FewshotSettings(input_length=512, seed=7, label="len512")
    assert settings.prompt_changes() == ["input_length=512", "seed=7"]
    assert variant_name("rte_x", 3, settings.label) == "rte_x_3shot_len512"
    # the rate split changes no prompt: no label needed
    assert FewshotSettings(ratio={0: 0.25, 1: 0.25, 3: 0.25, 5: 0.25}).label == ""


def test_every_setting_decides_prompt_bytes_or_says_why_not():
    """A new setting fails here until it is classified: in the record that a variant's
    fingerprints and manifest are made of, or declared to decide no byte of its prompts."""
    names = [setting.name for setting in dataclasses.fields(FewshotSettings)]
    assert sorted(names) == sorted([*PROMPT_SETTINGS, *NOT_IN_PROMPTS])  # each exactly once
    assert set(POOL_SETTINGS) <= set(PROMPT_SETTINGS)


RTE = "super_glue_rte_GPT_3_style"
CHANGED = {"exemplar_separator": "\n", "example_separator": "\n###\n", "input_length": 512,
           "seed": 3, "shots": (0, 1, 3), "ratio": {0: 0.25, 1: 0.25, 3: 0.25, 5: 0.25}}


@pytest.mark.parametrize("name", sorted(CHANGED))
def test_a_setting_changes_fingerprints_and_manifest_exactly_when_it_decides_bytes(name, tmp_path):
    """(Same label on both sides: a label changes task names, so every fingerprint.)"""
    config = CacheConfig(output_dir=str(tmp_path), vocab_model=b"a model")

    def identity(**changes) -> tuple[str, str, dict]:
        spec = VariantSpec(taskset().task(RTE), 3, FewshotSettings(label="x", **changes))
        return (task_fingerprint(config, spec, {}), pool_fingerprint(config, spec, "train", {}),
                spec.prompt_record())

    (task, pool, record), changed = identity(), identity(**{name: CHANGED[name]})
    assert (task != changed[0]) == (record != changed[2]) == (name in PROMPT_SETTINGS)
    assert (pool != changed[1]) == (name in POOL_SETTINGS)


def test_a_variants_prompt_record_is_what_manifests_and_fingerprints_hold():
    """Changing a key or a value here rebuilds every variant an existing cache holds."""
    spec = VariantSpec(taskset().task(RTE), 3, FewshotSettings())
    assert spec.prompt_record() == {
        "task": RTE, "shots": 3, "draw_task": RTE, "exemplar_separator": "\n\n",
        "example_separator": "\n\n\n", "input_length": 1024, "seed": 0}


def test_every_t0_task_has_a_variant_per_shot_count_and_no_name_collides():
    defs = definitions()
    variants = all_variants(defs)
    assert len(defs.tasks) == 983
    assert len(variants) == 4 * 983
    assert not set(variants) & set(defs.tasks)
    twin = variants["super_glue_rte_GPT_3_style_score_eval_3shot"]
    assert twin.base.score_eval and twin.shots == 3
    assert twin.draw_task == "super_glue_rte_GPT_3_style"  # draws as its base task does
    assert variants["anli_GPT_3_style_r1_1shot"].base.split_mapping["train"] == "train_r1"


def test_default_mixtures_split_t0_rates_and_keep_t0s_rules():
    defs = definitions()
    mixtures = default_variant_mixtures(taskset())
    assert list(mixtures) == ["t0_train_fewshot", "t0+_train_fewshot", "t0++_train_fewshot",
                              "t0_eval_score_eval_1shot", "t0_eval_score_eval_3shot",
                              "t0_eval_score_eval_5shot"]
    train = mixtures["t0_train_fewshot"]
    variants = train.variants
    assert [v.base.name for v in variants[::4]] == list(defs.mixtures["t0_train"].tasks)
    assert train.tasks == tuple(v.name for v in variants) and train.rate_by_cap
    assert len(variants) == 4 * 313
    for variant in variants[:8]:
        share = {0: 0.5}.get(variant.shots, 1 / 6)
        assert train.rate(variant) == pytest.approx(variant.base.cap * share)
    total = sum(train.rate(v) for v in variants)
    assert total == pytest.approx(sum(defs.tasks[t].cap for t in defs.mixtures["t0_train"].tasks))
    three = mixtures["t0_eval_score_eval_3shot"]
    assert [v.base.name for v in three.variants] == list(defs.mixtures["t0_eval_score_eval"].tasks)
    assert not three.rate_by_cap and three.settings.shots == (3,)
    assert {v.name.endswith("_score_eval_3shot") for v in three.variants} == {True}
    assert three.rate(three.variants[0], examples=900_000) == t0.MAX_EXAMPLES_PER_DATASET
    assert three.rate(three.variants[0]) is None  # by examples: unknown before a build


def test_a_variant_mixture_of_chosen_tasks_with_its_own_settings():
    settings = FewshotSettings(shots=(0, 2), ratio={0: 0.2, 2: 0.8}, input_length=2048,
                               label="long")
    tasks = ["super_glue_rte_GPT_3_style", "super_glue_rte_can_we_infer"]
    mixture = define_variant_mixture(taskset(), "rte_fewshot_long", tasks=tasks,
                                     settings=settings)
    names = list(mixture.tasks)
    assert names == [f"{task}_{k}shot_long" for task in tasks for k in (0, 2)]
    first = mixture.variants[1]
    assert mixture.rate(first) == pytest.approx(0.8 * first.base.cap)


@pytest.mark.parametrize(("kwargs", "setting", "value"), [
    ({"name": "t0_train", "mixture": "t0_train"}, "mixture", "'t0_train'"),
    ({"name": " ", "mixture": "t0_train"}, "mixture", "' '"),
    ({"name": "m", "mixture": "t0_everything"}, "mixture", "'t0_everything'"),
    ({"name": "m", "tasks": ["super_glue_rte_GPT_3_style", "no_such_task"]}, "tasks",
     "'no_such_task'"),
    ({"name": "m"}, "tasks", "'m'"),
    ({"name": "m", "mixture": "t0_train", "tasks": ["x"]}, "tasks", "'m'"),
])
def test_bad_variant_mixtures_are_one_line(kwargs, setting, value):
    with pytest.raises(P3DataError) as caught:
        define_variant_mixture(taskset(), **kwargs)
    assert "\n" not in str(caught.value) and value in str(caught.value)
    assert caught.value.setting == setting


# The core stands on the foundation, the templates, the rows, the feature table, T0's
# definitions and the task set it adds to: never on the cache builder, the commands, the
# readers or seqio.
ALLOWED = ("p3data.errors", "p3data.templates", "p3data.datasets", "p3data.t0",
           "p3data.tokenize", "p3data.fewshot", "p3data.dataset_key", "p3data.varints",
           "p3data.vocab", "p3data.format.features", "p3data.taskset")


def test_the_package_imports_only_lower_layers():
    for path in sorted(PACKAGE.glob("*.py")):
        assert len(path.read_text().splitlines()) < 400, path.name
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            for name in names:
                if name.startswith("p3data"):
                    assert name.startswith(ALLOWED), f"{path.name} imports {name}"
                else:
                    assert name.split(".")[0] not in ("seqio", "tensorflow", "apache_beam")


def test_the_package_is_in_the_wheel():
    config = configparser.ConfigParser()
    config.read(PACKAGE.parent.parent / "setup.cfg")
    assert "p3data.fewshot" in config["options"]["packages"].split()


def test_importing_the_package_loads_no_builder_and_no_seqio():
    code = ("import sys, p3data.fewshot; print(sorted(m for m in sys.modules if m.startswith("
            "('p3data.cache', 'p3data.commands', 'pipelines', 'seqio', 'tensorflow'))))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True)
    assert result.stdout.strip() == "[]"


@pytest.mark.parametrize(("name", "parts"), [
    ("super_glue_rte_GPT_3_style", ("super_glue_rte_GPT_3_style", None)),
    ("super_glue_rte_GPT_3_style_5shot", ("super_glue_rte_GPT_3_style", 5)),
    ("super_glue_copa_exercise_score_eval_0shot_short.v2",
     ("super_glue_copa_exercise_score_eval", 0)),
])
def test_a_task_name_says_which_t0_task_and_shot_count_it_is(name, parts):
    from p3data.fewshot.variants import name_parts, variant_name

    assert name_parts(name) == parts
    if parts[1] is not None:
        assert name_parts(variant_name(*parts)) == parts


def test_an_exported_variant_without_examples_gets_its_variants_columns():
    from p3data.export.schema import task_specs

    twin = task_specs("super_glue_copa_exercise_score_eval_3shot", {"train": {}})
    assert {"idx", "is_correct", "num_shots", "exemplar_rows"} <= set(twin)
    assert "num_shots" not in task_specs("super_glue_copa_exercise", {"train": {}})
