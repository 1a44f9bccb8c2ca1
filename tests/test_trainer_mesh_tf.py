"""Mesh TensorFlow, T0's own trainer: `t5_mesh_transformer` (t5 0.9.4, mesh-tensorflow 0.1.21)
trains on the demo cache with the seed's flags, in an environment built from PyPI exactly as
examples/mesh_tf/README.md tells a user to build it (p3data from its wheel, not the checkout).

CI trains on one task of the t0_train cache: in TF1 graph mode, the whole 313-task mixture takes
4-6 minutes to its first step on 2 cores (seqio's pipeline starts in 20 s eagerly) and its loss
swings with each batch's share of target positions; the command is otherwise the same.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from helpers.venvs import ROOT, Venv, make_venv

from p3data.vocab import SAMPLE_VOCAB

EXAMPLE = ROOT / "examples" / "mesh_tf"
CONSTRAINTS = EXAMPLE / "constraints.txt"
TASK = "samsum_Summarize_"  # dense targets (~23 tokens each): a loss that means something
STEPS = 30
# What `pip check` says of the documented environment, and why (README.md): t5 was installed
# with --no-deps, and torch needs a newer typing-extensions than TensorFlow 2.12 declares.
EXPECTED_PIP_CHECK = (
    "t5 0.9.4 requires seqio-nightly, which is not installed.",
    "t5 0.9.4 requires tfds-nightly, which is not installed.",
    "tensorflow 2.12.1 has requirement typing-extensions<4.6.0,>=3.6.6, but you have "
    "typing-extensions ",
)
LOSS = re.compile(r"^step, tf_loss\[([-+.\deE]+)\]\[(\d+)\]$", re.MULTILINE)


def mean(values: list[float]) -> float:
    return sum(values) / len(values)


@pytest.fixture(scope="module")
def mesh_tf_env(tmp_path_factory, p3data_wheel) -> Venv:
    """The README's three pip commands, in a fresh environment, p3data from a wheel built from
    the checkout (so nothing of the checkout is imported)."""
    tmp = tmp_path_factory.mktemp("mesh_tf")
    start = time.monotonic()
    venv = make_venv(tmp / "venv", "-c", CONSTRAINTS, p3data_wheel,
                     "-r", EXAMPLE / "requirements.txt")
    venv.pip("--no-deps", "t5==0.9.4")
    venv.pip("-c", CONSTRAINTS, "torch")
    print(f"\nMesh TF environment installed in {time.monotonic() - start:.0f} s")
    return venv


def test_the_environment_holds_one_package_per_import_name(mesh_tf_env):
    frozen = mesh_tf_env.run(mesh_tf_env.python, "-m", "pip", "list", "--format=freeze")
    names = {line.split("==")[0].lower().replace("_", "-") for line in frozen.stdout.split()}
    assert {"seqio", "tensorflow-datasets", "t5", "mesh-tensorflow"} <= names
    assert not {"seqio-nightly", "tfds-nightly"} & names
    check = mesh_tf_env.run(mesh_tf_env.python, "-m", "pip", "check")
    reported = [line for line in check.stdout.splitlines() if line.strip()]
    assert reported and all(line.startswith(EXPECTED_PIP_CHECK) for line in reported), \
        check.stdout
    probe = ("import os, p3data, seqio, tensorflow, p3data.tasks;"
             "print(os.path.dirname(p3data.__file__), tensorflow.__version__,"
             " len(seqio.TaskRegistry.names()), len(seqio.MixtureRegistry.names()))")
    result = mesh_tf_env.run(mesh_tf_env.python, "-c", probe)
    assert result.returncode == 0, result.stderr[-3000:]
    site, tf_version, tasks, mixtures = result.stdout.split()
    assert Path(site).is_relative_to(mesh_tf_env.root)  # the wheel's copy, not the checkout
    assert (tf_version, tasks, mixtures) == ("2.12.1", "4915", "14")  # T0 and variants


def test_t5_mesh_transformer_trains_on_the_cache(mesh_tf_env, demo_cache, tmp_path):
    """The seed's flags (`--module_import=p3data.tasks`, the cache dir, `use_cached = True`), a
    tiny model on a one-device CPU mesh; the loss, printed once a step, falls."""
    start = time.monotonic()
    result = mesh_tf_env.run(
        mesh_tf_env.bin("t5_mesh_transformer"), f"--model_dir={tmp_path / 'model'}",
        "--module_import=p3data.tasks", f"--additional_task_cache_dirs={demo_cache}",
        "--gin_file=dataset.gin", f"--gin_file={EXAMPLE / 'tiny.gin'}",
        "--gin_file=learning_rate_schedules/constant_0_001.gin",
        f"--gin_param=MIXTURE_NAME = '{TASK}'",
        "--gin_param=mesh_train_dataset_fn.use_cached = True",
        "--gin_param=utils.run.mesh_shape = 'model:1,batch:1'",
        "--gin_param=utils.run.mesh_devices = ['cpu:0']",
        "--gin_param=pack_dataset.use_custom_ops = False",
        "--gin_param=run.sequence_length = {'inputs': 256, 'targets': 128}",
        "--gin_param=utils.run.batch_size = ('sequences_per_batch', 8)",
        f"--gin_param=run.train_steps = {STEPS}",
        "--gin_param=learning_rate_schedules.constant_learning_rate.learning_rate = 0.01",
        cwd=tmp_path, timeout=900,
        env={"P3DATA_VOCAB": str(SAMPLE_VOCAB), "TF_CPP_MIN_LOG_LEVEL": "2"})
    seconds = time.monotonic() - start
    assert result.returncode == 0, result.stderr[-6000:]
    assert f"'{TASK}' is cached at {demo_cache / TASK}" in result.stderr  # read from the cache
    losses = [float(value) for value, _ in LOSS.findall(result.stderr)]
    assert len(losses) == STEPS, result.stderr[-3000:]
    first, last = mean(losses[:5]), mean(losses[-5:])
    print(f"\nt5_mesh_transformer: {STEPS} steps in {seconds:.0f} s, loss {losses[0]:.2f} -> "
          f"{losses[-1]:.2f} (mean of the first 5 {first:.2f}, of the last 5 {last:.2f})")
    assert last < 0.8 * first
    assert (tmp_path / "model" / f"model.ckpt-{STEPS}.index").is_file()
