"""xP3's tasks are tokenized with mT5's vocabulary (the model holds its extra ids: seqio adds
none), T0's keep T5's; `p3data vocab --collection xp3` trains a model of mT5's shape; T5X's
vocabulary check passes with docs/xp3.md's flags against what T5X's mT5 gin files bind."""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
from pathlib import Path

import pytest
import sentencepiece as spm
from helpers.scripts import SCRIPTS_DIR, script_sentences
from sentencepiece import sentencepiece_model_pb2 as model_pb2
from test_trainer_t5x import model_gin

from p3data.dataset_key import DatasetKey
from p3data.datasets import sample_rules, samples
from p3data.taskset import load_definitions, one_vocabulary
from p3data.templates.install import ENV_HOME
from p3data.vocab import MT5, MT5_VOCAB, T5, VocabularyError

ROOT = Path(__file__).resolve().parents[1]
XP3_DOC = ROOT / "docs" / "xp3.md"
# T5X's t5x/examples/t5/mt5/base.gin (at 11abdae..cc342d4)
T5X_MT5_GIN = model_gin("gs://t5-data/vocabs/mc4.250000.100extra/sentencepiece.model")
XLCOST = DatasetKey("codeparrot/xlcost-text-to-code", "Python-program-level")


@pytest.fixture(scope="module")
def xp3_home(xp3_templates) -> Path:
    return xp3_templates["xp3"].parents[2]


@pytest.fixture
def with_xp3(xp3_home, monkeypatch) -> Path:
    monkeypatch.setenv(ENV_HOME, str(xp3_home))
    return xp3_home


@pytest.fixture(scope="module")
def xp3_model(xp3_home, tmp_path_factory) -> Path:
    """`p3data vocab --collection xp3` on the bundled samples and every script's sentences."""
    from p3data.cli import main

    out = tmp_path_factory.mktemp("vocab") / "xp3-sample.model"
    texts = [str(path) for path in sorted(SCRIPTS_DIR.glob("*.txt"))]
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(ENV_HOME, str(xp3_home))
        args = ["vocab", "--collection", "xp3", "--size", "3000", "--out", str(out)]
        assert main([*args, *(flag for text in texts for flag in ("--text", text))]) == 0
    return out


def test_xp3_tasks_use_mt5s_vocabulary_and_t0s_keep_t5s(with_xp3):
    definitions = load_definitions(("t0", "xp3"))
    xp3 = list(definitions.part("xp3").tasks.values())
    t0 = list(definitions.part("t0").tasks.values())
    assert one_vocabulary(xp3) is MT5 and one_vocabulary(t0) is T5
    assert (MT5.default, MT5.extra_ids, T5.extra_ids) == (MT5_VOCAB, 0, 100)
    with pytest.raises(VocabularyError, match="tokenized with T5's and mT5's vocabularies"):
        one_vocabulary([t0[0], xp3[0]])


def test_the_sample_vocabulary_is_mt5_shaped(xp3_model):
    """Its extra ids are inside, as seqio would add them to a model without: seqio reading it
    with none added tokenizes every script and the sentinels as seqio reading the same model
    without them, with 100 added, does."""
    import seqio

    from p3data.tokenize.tokenizer import with_extra_ids

    processor = spm.SentencePieceProcessor(model_file=str(xp3_model))
    size = processor.get_piece_size()
    assert [processor.id_to_piece(size - 1 - i) for i in (0, 99)] == ["▁<extra_id_0>",
                                                                      "▁<extra_id_99>"]
    assert processor.id_to_piece(size - 101) != "▁<extra_id_100>"
    proto = processor.serialized_model_proto()
    model = model_pb2.ModelProto.FromString(proto)
    del model.pieces[size - 100:]
    bare = xp3_model.with_name("bare.model")
    bare.write_bytes(model.SerializeToString())
    assert with_extra_ids(bare.read_bytes(), 100) == proto
    ours = seqio.SentencePieceVocabulary(str(xp3_model))  # as mT5's gin files read mT5's
    seqios = seqio.SentencePieceVocabulary(str(bare), extra_ids=100)
    texts = [line for lines in script_sentences().values() for line in lines]
    texts += ["Fill in: <extra_id_0> and <extra_id_99>."]
    assert ours.vocab_size == seqios.vocab_size == size
    assert [ours.encode(text) for text in texts] == [seqios.encode(text) for text in texts]


def test_the_vocab_command_renders_the_collections_samples(with_xp3, tmp_path, monkeypatch,
                                                           capsys):
    """Sample rows of an xP3 dataset are rendered by its tasks (xlcost's code templates keep
    the connection); without samples (files, and the families' rules) or --text the command
    says what to give."""
    from p3data.cli import main
    from p3data.commands.vocab import collection_texts

    folder = Path(XLCOST.folder(tmp_path))
    folder.mkdir(parents=True)
    (folder / "train.jsonl").write_text(json.dumps(
        {"text": "Check if a number is even", "code": "def is_even ( n ) : NEW_LINE INDENT "
         "return n % 2 == 0 NEW_LINE DEDENT print ( is_even ( 4 ) ) NEW_LINE"}) + "\n")
    monkeypatch.setattr(samples, "SAMPLES_DIR", tmp_path)
    monkeypatch.setattr(sample_rules, "FAMILIES", {})  # the bundled families made by rule
    texts = list(collection_texts("xp3"))
    assert " def is_even ( n ) :\n\treturn n % 2 == 0\nprint ( is_even ( 4 ) )" in texts
    monkeypatch.setattr(samples, "SAMPLES_DIR", tmp_path / "none")
    assert main(["vocab", "--collection", "xp3", "--out", str(tmp_path / "m.model")]) == 2
    assert capsys.readouterr().err.strip() == (
        "p3data: error: no sample rows of xp3's datasets are bundled, and no --text given: "
        "give text in its languages, one a line")


def t5x_commands() -> list[list[str]]:
    """docs/xp3.md's `t5x.train` commands with what their blocks export, split by the shell."""
    blocks = re.findall(r"```sh\n(.*?)```", XP3_DOC.read_text(), re.S)
    return [shlex.split(block.replace("\\\n", " ")) for block in blocks
            if "python -m t5x.train" in block]


def check_mt5_flags(bindings: list[str], task: str) -> None:
    """T5X's check of the model's vocabulary (mT5's gin files, then `bindings`) against the
    task's: raises when they differ (run where `test_trainer_t5x` imports)."""
    import gin
    from test_trainer_t5x import encoder_decoder_model, t5x_vocabulary_check

    gin.clear_config()
    gin.parse_config(T5X_MT5_GIN)
    gin.parse_config_files_and_bindings([], bindings)
    t5x_vocabulary_check(task, gin.get_configurable(encoder_decoder_model)())


@pytest.mark.stock
def test_t5x_passes_its_vocabulary_check_with_the_documented_flags(xp3_home, xp3_model):
    """In fresh processes, as T5X starts: mT5's default with no flag; the offline sample model
    named by `P3DATA_VOCAB` and the gin flag, spelt alike, before and after first use."""
    from test_trainer_t5x import run_python

    default, offline = t5x_commands()
    assert "xp3" in " ".join(default) and not any("SentencePiece" in arg for arg in default)
    vocab = offline[offline.index("export") + 1].removeprefix("P3DATA_VOCAB=")
    bindings = [flag.removeprefix("--gin.") for flag in offline
                if flag.startswith("--gin.seqio.SentencePieceVocabulary.")]
    assert bindings == [f"seqio.SentencePieceVocabulary.sentencepiece_model_file='{vocab}'"]
    probe = f"""
import pytest, seqio, p3data.tasks, p3data.xp3, test_xp3_vocab as t
t.check_mt5_flags({bindings!r}, "xp3")
features = seqio.get_mixture_or_task("xp3").output_features
assert features["inputs"].vocabulary.vocab_size > 1000  # first use: the model is loaded
t.check_mt5_flags({bindings!r}, "xp3")
t.check_mt5_flags({bindings!r}, "xp3mt_sw")
with pytest.raises(ValueError, match="do not match"):
    t.check_mt5_flags([], "xp3")  # mT5's own model in the gin, the sample model in the tasks
with pytest.raises(ValueError, match="do not match"):
    t.check_mt5_flags({bindings!r}, "t0_train")  # T0's tasks add 100 extra ids
print("ok")
"""
    tests = os.pathsep.join([str(Path(__file__).parent), *sys.path])
    (xp3_model.parent / vocab).write_bytes(xp3_model.read_bytes())
    env = {"PYTHONPATH": tests, ENV_HOME: str(xp3_home), "P3DATA_VOCAB": vocab}
    assert run_python(probe, env=env, cwd=xp3_model.parent).strip().endswith("ok")
    probe = "import p3data.xp3, test_xp3_vocab as t; t.check_mt5_flags([], 'xp3'); print('ok')"
    env = {"PYTHONPATH": tests, ENV_HOME: str(xp3_home)}
    assert run_python(probe, env=env, unset=("P3DATA_VOCAB",)).strip().endswith("ok")
