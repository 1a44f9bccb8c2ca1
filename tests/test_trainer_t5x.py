"""T5X, as far as CI can go without it (T5X is not on PyPI): its vocabulary check passes with
docs/training.md's `--gin.` settings, before and after the vocabulary is first used, and seqio
reads the cache as T5X asks it to (`use_cached=True`, packed by `EncDecFeatureConverter`)."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import gin
import pytest

from p3data.vocab import SAMPLE_VOCAB, T5_VOCAB

ROOT = Path(__file__).resolve().parents[1]
TRAINING = ROOT / "docs" / "training.md"


def model_gin(model_file: str) -> str:
    """What a T5X model's gin file says of the vocabulary: the model file, nothing else."""
    return f"""
from __gin__ import dynamic_registration
import seqio
import test_trainer_t5x
VOCABULARY = @seqio.SentencePieceVocabulary()
seqio.SentencePieceVocabulary.sentencepiece_model_file = "{model_file}"
test_trainer_t5x.encoder_decoder_model:
  input_vocabulary = %VOCABULARY
  output_vocabulary = %VOCABULARY
"""


# T5X's T5 gin files (t5_1_1/base.gin and its siblings)
T5X_MODEL_GIN = model_gin("gs://t5-data/vocabs/cc_all.32000.100extra/sentencepiece.model")


def t5x_command(*, demo: bool = False) -> list[str]:
    """docs/training.md's `t5x.train` command for T5's vocabulary, or for the demo cache's (the
    block that exports `P3DATA_VOCAB`), with what its block exports, split by the shell as T5X
    receives it."""
    command = next(block for block in re.findall(r"```\w*\n(.*?)```", TRAINING.read_text(), re.S)
                   if "python -m t5x.train" in block
                   and ("export P3DATA_VOCAB=" in block) == demo)
    return shlex.split(command.replace("\\\n", " "))


def vocabulary_bindings(*, demo: bool = False) -> list[str]:
    """The vocabulary's `--gin.` flags of that command."""
    return [flag.removeprefix("--gin.") for flag in t5x_command(demo=demo)
            if re.match(r"--gin\.seqio\.SentencePieceVocabulary\.", flag)]


def encoder_decoder_model(*, input_vocabulary, output_vocabulary):
    """Stands for `t5x.models.EncoderDecoderModel`: what gin hands the model."""
    return input_vocabulary, output_vocabulary


def t5x_vocabulary_check(task: str, model_vocabularies: tuple) -> None:
    """T5X's `verify_matching_vocabs`, as it compares (`!=` on seqio vocabularies)."""
    import seqio

    features = seqio.get_mixture_or_task(task).output_features
    if (features["inputs"].vocabulary != model_vocabularies[0]
            or features["targets"].vocabulary != model_vocabularies[1]):
        raise ValueError("Model and Task vocabularies do not match")


def run_python(code: str, *args: str, env: dict[str, str] | None = None,
               unset: tuple[str, ...] = (), cwd: Path | None = None) -> str:
    """Runs `code` in a fresh Python with `env` added and `unset` removed."""
    env = {name: value for name, value in {**os.environ, **(env or {})}.items()
           if name not in unset}
    result = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                            timeout=600, env=env, cwd=cwd)
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


@pytest.mark.stock
def test_the_tasks_vocabulary_equals_seqios_before_and_after_first_use():
    """In a fresh process, so the registry's vocabulary has not been used yet."""
    probe = """
import pickle, sys
import seqio
import p3data.tasks
from test_trainer_t5x import t5x_vocabulary_check
path = sys.argv[1]
task = seqio.get_mixture_or_task("super_glue_copa_exercise").output_features["inputs"].vocabulary
model = seqio.SentencePieceVocabulary(path, extra_ids=100)
t5x_vocabulary_check("t0_train", (model, model))
assert model == task and task == model and pickle.loads(pickle.dumps(task)) == model
assert task.vocab_size == 7341  # first use: the model is loaded
t5x_vocabulary_check("t0_train", (model, model))
assert model == task and pickle.loads(pickle.dumps(task)) == model
for other in (seqio.SentencePieceVocabulary(path), seqio.SentencePieceVocabulary("x.model", 100)):
    assert task != other and other != task
print("ok")
"""
    env = {"P3DATA_VOCAB": str(SAMPLE_VOCAB),
           "PYTHONPATH": os.pathsep.join([str(Path(__file__).parent), *sys.path])}
    assert run_python(probe, str(SAMPLE_VOCAB), env=env).strip().endswith("ok")


def check_the_t5_flags() -> None:
    """T5X's gin files alone give a vocabulary unequal to the tasks'; the documented flags for
    T5's vocabulary make them equal, as T5X checks before training."""
    bindings = vocabulary_bindings()
    assert len(bindings) == 2
    gin.parse_config(T5X_MODEL_GIN)
    model = gin.get_configurable(encoder_decoder_model)
    with pytest.raises(ValueError, match="do not match"):  # T5X's gin files alone
        t5x_vocabulary_check("t0_train", model())
    gin.parse_config_files_and_bindings([], bindings)  # how T5X reads its --gin. flags
    t5x_vocabulary_check("t0_train", model())
    assert model()[0].sentencepiece_model_file == T5_VOCAB


@pytest.mark.stock
def test_t5x_passes_its_vocabulary_check_with_the_documented_flags():
    """In a fresh process with the tasks' default vocabulary (T5's), as T5X starts: the
    registry's vocabulary is chosen once, at first use, so this test's own process may have
    fixed it to the sample vocabulary already."""
    probe = "import p3data.tasks, test_trainer_t5x as t; t.check_the_t5_flags(); print('ok')"
    tests = os.pathsep.join([str(Path(__file__).parent), *sys.path])
    out = run_python(probe, env={"PYTHONPATH": tests}, unset=("P3DATA_VOCAB",))
    assert out.strip().endswith("ok")


def check_flags(bindings: list[str]) -> None:
    """T5X's check of the model's vocabulary (T5X's gin files, then `bindings`) against the
    tasks' (`P3DATA_VOCAB`): raises when they differ."""
    gin.clear_config()
    gin.parse_config(T5X_MODEL_GIN)
    gin.parse_config_files_and_bindings([], bindings)
    t5x_vocabulary_check("t0_train", gin.get_configurable(encoder_decoder_model)())


@pytest.mark.stock
def test_the_demo_caches_t5x_flags_pass_its_vocabulary_check_spelt_as_p3data_vocab():
    """docs/training.md's command for the demo cache: `P3DATA_VOCAB` is the sample model and
    the gin flag that very string, which T5X's check passes, from the source tree as the page
    says; the same file spelt otherwise fails it."""
    command = t5x_command(demo=True)
    vocab = command[command.index("export") + 1].removeprefix("P3DATA_VOCAB=")
    assert (ROOT / vocab).resolve() == SAMPLE_VOCAB.resolve()
    bindings = vocabulary_bindings(demo=True)
    assert f"seqio.SentencePieceVocabulary.sentencepiece_model_file='{vocab}'" in bindings
    respelt = [binding.replace(f"'{vocab}'", f"'./{vocab}'") for binding in bindings]
    probe = f"""
import p3data.tasks, pytest, test_trainer_t5x as t
t.check_flags({bindings!r})
with pytest.raises(ValueError, match="do not match"):
    t.check_flags({respelt!r})
print("ok")
"""
    tests = os.pathsep.join([str(Path(__file__).parent), *sys.path])
    out = run_python(probe, env={"PYTHONPATH": tests, "P3DATA_VOCAB": vocab}, cwd=ROOT)
    assert out.strip().endswith("ok")


def test_the_t5x_recipe_installs_what_airio_imports():
    """T5X's `t5x/utils.py` imports `airio.core`, which imports `grain.python`; airio (installed
    with --no-deps) requires grain in its setup.py, so the recipe's PyPI command must bring it,
    or `python -m t5x.train` stops at import."""
    recipe = TRAINING.read_text().split("## T5X: installing it", 1)[1].split("```sh\n")[1]
    pypi = shlex.split(recipe.split("\npip install --no-deps", 1)[0].replace("\\\n", " "))
    assert pypi[:3] == ["pip", "install", "p3data"] and "grain" in pypi
    import grain.python  # noqa: F401 - the version p3data's constraints pin imports


def test_seqio_reads_the_cache_packed_as_t5x_asks(t0_train_reads):
    out = t0_train_reads["t5x"]  # helpers.seqio_probes.T5X_PACKED_READ, in a fresh Python
    lines = out.splitlines()
    for name, length in [("encoder_input_tokens", 1024), ("encoder_segment_ids", 1024),
                         ("encoder_positions", 1024), ("decoder_target_tokens", 256),
                         ("decoder_input_tokens", 256), ("decoder_loss_weights", 256),
                         ("decoder_segment_ids", 256), ("decoder_positions", 256)]:
        assert lines.count(f"{name} int32 (4, {length})") == 3, out
    low, high = map(int, lines[-1].split()[-2:])
    assert low >= 1 and high > 1, out  # rows are packed with several examples
