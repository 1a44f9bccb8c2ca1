"""Few-shot variants in seqio: registered beside T0's tasks by `import p3data.tasks`, with their
mixtures and audit features; read on the fly they are the prompter's examples."""

from __future__ import annotations

import numpy as np
import pytest
import seqio

from p3data.fewshot import FewshotSettings, define_variant_mixture
from p3data.fewshot.variants import variant_name
from p3data.format.features import EXEMPLAR_ROWS, NUM_SHOTS

pytestmark = pytest.mark.usefixtures("samples_in_seqio")


def test_every_task_has_its_variants_and_mixtures_registered(t0_tasks):
    import p3data.tasks

    names = set(seqio.TaskRegistry.names())
    assert len(p3data.tasks.DEFINITIONS.part("fewshot").tasks) == 4 * len(t0_tasks.tasks) == 3932
    assert all(variant_name(task, k) in names for task in t0_tasks.tasks for k in (0, 1, 3, 5))
    variant_mixtures = {"t0_train_fewshot", "t0+_train_fewshot", "t0++_train_fewshot",
                        *(f"t0_eval_score_eval_{k}shot" for k in (1, 3, 5))}
    assert set(t0_tasks.mixtures) | variant_mixtures <= set(seqio.MixtureRegistry.names())
    train, fewshot = (seqio.get_mixture_or_task(name) for name in ("t0_train", "t0_train_fewshot"))
    assert len(fewshot.tasks) == 4 * len(train.tasks)
    rate = {task.name: fewshot.get_rate(task) for task in fewshot.tasks}
    for task in train.tasks:  # half to zero-shot, the rest evenly over 1, 3 and 5 shots
        assert rate[task.name + "_0shot"] == pytest.approx(train.get_rate(task) / 2)
        assert rate[task.name + "_5shot"] == pytest.approx(train.get_rate(task) / 6)
    assert sum(rate.values()) == pytest.approx(17_277_798)
    held_out = seqio.get_mixture_or_task("t0_eval_score_eval_3shot")
    assert sorted(t.name for t in held_out.tasks) == sorted(
        name + "_3shot" for name in t0_tasks.mixtures["t0_eval_score_eval"].tasks)


def test_t0s_tasks_keep_their_features_and_variants_add_the_audit_ones():
    plain = seqio.get_mixture_or_task("super_glue_copa_exercise").source.output_signature
    variant = seqio.get_mixture_or_task("super_glue_copa_exercise_3shot").source.output_signature
    assert NUM_SHOTS not in plain and EXEMPLAR_ROWS not in plain
    assert {k: v for k, v in variant.items() if k not in (NUM_SHOTS, EXEMPLAR_ROWS)} == plain
    assert variant[NUM_SHOTS].dtype.name == "int32" and variant[NUM_SHOTS].shape == []
    assert variant[EXEMPLAR_ROWS].dtype.name == "int64"
    assert variant[EXEMPLAR_ROWS].shape.as_list() == [None]


def test_a_variant_mixture_of_ones_own_registers_its_variants(t0_tasks):
    import p3data.tasks
    from p3data.registry import register_variant_mixture

    settings = FewshotSettings(shots=(0, 2), ratio={0: 0.25, 2: 0.75}, input_length=512,
                               label="short")
    mixture = define_variant_mixture(p3data.tasks.DEFINITIONS, "copa_short", settings=settings,
                                     tasks=["super_glue_copa_exercise"])
    registered = register_variant_mixture(mixture)
    cap = t0_tasks.tasks["super_glue_copa_exercise"].cap
    rates = {task.name: registered.get_rate(task) for task in registered.tasks}
    assert rates["super_glue_copa_exercise_2shot_short"] == pytest.approx(0.75 * cap)
    examples = list(seqio.get_mixture_or_task("super_glue_copa_exercise_2shot_short").get_dataset(
        None, split="validation", shuffle=False).as_numpy_iterator())
    assert examples and all(len(e["inputs"]) <= 512 for e in examples)
    assert {int(e[NUM_SHOTS]) for e in examples} <= {0, 1, 2}
    assert all(len(e[EXEMPLAR_ROWS]) == e[NUM_SHOTS] for e in examples)
    assert np.any([e[NUM_SHOTS] == 2 for e in examples])
