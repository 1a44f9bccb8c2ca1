"""MaxText, as far as CI can go without it (MaxText is not on PyPI; docs/training.md has the run
by hand): the read its grain pipeline performs with the page's flags, on an ArrayRecord build of
the t0_train mixture. What MaxText does, from its source at the commit the page names: it globs
`grain_train_files` and opens the files with grain's `ArrayRecordDataSource`; it parses each
record as a `tf.train.Example` and keeps the `train_data_columns`, a feature's float, int64 or
bytes list (the first that is not empty) as float32, int32 or bytes; with
`tokenize_train_data=True` it encodes the first bytes value, decoded, with SentencePiece, a BOS
id first if `add_bos`, EOS last if `add_eos`, and cuts the ids at `max_target_length`."""

from __future__ import annotations

import ast
import glob
import re
import shlex
from pathlib import Path

import grain
import numpy as np
import pytest
import sentencepiece
import tensorflow as tf
from helpers.cache import run_cache

from p3data.read import open_cache
from p3data.vocab import EXTRA_IDS, SAMPLE_VOCAB

pytestmark = pytest.mark.trainer

ROOT = Path(__file__).resolve().parents[1]
TRAINING = ROOT / "docs" / "training.md"
SOURCE_TREE = "$P3DATA/"  # how the page's MaxText command names p3data's source tree
EOS = 1
TEXT_OF = {"inputs": "inputs_pretokenized", "targets": "targets_pretokenized"}


def documented_commands() -> tuple[list[str], dict[str, object]]:
    """The page's `p3data cache` command, split as the shell splits it, and its MaxText
    command's `key=value` settings (lists and booleans as MaxText's config reads them)."""
    block = next(body for body in re.findall(r"```sh\n(.*?)```", TRAINING.read_text(), re.S)
                 if "maxtext.trainers.pre_train.train" in body)
    cache, maxtext = (shlex.split(line) for line in block.replace("\\\n", " ").splitlines())
    settings = dict(arg.split("=", 1) for arg in maxtext if "=" in arg)
    for key, value in settings.items():
        if value[:1] == "[" or value in ("True", "False") or value.isdigit():
            settings[key] = ast.literal_eval(value)
    return cache, settings


def here(path: str, *, cache: Path | None = None, documented_cache: str = "") -> str:
    """A path of the MaxText command, with the page's cache (`documented_cache`) this run's
    `cache` and its source tree this checkout."""
    if cache is not None:
        path = path.replace(SOURCE_TREE + documented_cache, str(cache))
    return path.replace(SOURCE_TREE, f"{ROOT}/")


def maxtext_columns(record: bytes, columns: list[str]) -> dict[str, np.ndarray]:
    """The record's `columns` as MaxText's grain pipeline keeps them."""
    features = tf.train.Example.FromString(record).features.feature
    assert all(column in features for column in columns), sorted(features)
    kept = {}
    for column in columns:
        feature = features[column]
        for values, dtype in ((feature.float_list.value, np.float32),
                              (feature.int64_list.value, np.int32),
                              (feature.bytes_list.value, object)):
            if values:
                kept[column] = np.asarray(list(values), dtype=dtype)
                break
        else:
            kept[column] = np.asarray([])
    return kept


def maxtext_tokens(text: np.ndarray, model: sentencepiece.SentencePieceProcessor,
                   settings: dict[str, object]) -> list[int]:
    """A text column's ids as MaxText's tokenizing step makes them with `settings`."""
    ids = model.EncodeAsIds(text[0].decode())
    ids = [model.bos_id()] * settings["add_bos"] + ids + [model.eos_id()] * settings["add_eos"]
    return ids[:settings["max_target_length"]]


@pytest.fixture(scope="module")
def maxtext_read(tmp_path_factory) -> tuple[Path, dict[str, object], list[str]]:
    """The page's cache, built here as the page builds it, and the files its flags glob."""
    cache_command, settings = documented_commands()
    output = cache_command[cache_command.index("--output-dir") + 1]
    assert cache_command[:2] == ["p3data", "cache"] and "arrayrecord" in cache_command
    assert settings["grain_train_files"].startswith(SOURCE_TREE + output + "/")
    cache = tmp_path_factory.mktemp("maxtext") / "t0_train"
    mixture = cache_command[cache_command.index("--mixture") + 1]
    run_cache(cache, "--mixture", mixture, "--shard-format", "arrayrecord",
              "--direct_num_workers=2", "--direct_running_mode=multi_processing")
    files = sorted(glob.glob(here(settings["grain_train_files"], cache=cache,
                                  documented_cache=output)))
    return cache, settings, files


def test_maxtexts_read_of_the_cache_yields_its_train_examples(maxtext_read):
    """Every task's train split, record for record, as `p3data.read` reads it."""
    cache, settings, files = maxtext_read
    assert settings["dataset_type"] == "grain" and settings["grain_file_type"] == "arrayrecord"
    reader = open_cache(str(cache))
    tasks = [task for task in reader.tasks if "train" in reader.splits(task)]
    assert sorted({Path(file).parent.name for file in files}) == tasks and len(tasks) > 300
    expected = [example for task in tasks for example in reader.split(task, "train")]
    source = grain.sources.ArrayRecordDataSource(files)
    assert len(source) == len(expected) > 3000
    columns = ["inputs", "targets", *TEXT_OF.values()]
    for number, example in enumerate(expected):
        got = maxtext_columns(source[number], columns)
        for ids in TEXT_OF:
            assert got[ids].dtype == np.int32 and got[ids].tolist() == example[ids].tolist()
        for text in TEXT_OF.values():
            assert got[text].tolist() == [example[text].encode()], (number, text)


def test_the_pages_tokenizer_flags_give_the_caches_ids(maxtext_read):
    """The page's text column, tokenized by MaxText with its flags, is the cache's `inputs`
    with EOS; the targets' text so tokenized is `targets`. The sample model has no BOS piece
    (id -1), which `add_bos=True` would put first."""
    _, settings, files = maxtext_read
    column, = settings["train_data_columns"]
    assert column == TEXT_OF["inputs"] and settings["tokenize_train_data"] is True
    assert settings["tokenizer_type"] == "sentencepiece"
    model_file = Path(here(settings["tokenizer_path"]))
    assert model_file.resolve() == SAMPLE_VOCAB.resolve()
    model = sentencepiece.SentencePieceProcessor(model_file=str(model_file))
    assert model.bos_id() == -1 and settings["add_bos"] is False
    assert model.eos_id() == EOS and settings["add_eos"] is True
    assert settings["vocab_size"] >= model.vocab_size() + EXTRA_IDS
    length = settings["max_target_length"]
    source = grain.sources.ArrayRecordDataSource(files)
    cut = 0
    for number in range(len(source)):
        got = maxtext_columns(source[number], ["inputs", "targets", *TEXT_OF.values()])
        assert maxtext_tokens(got[column], model, settings) == [*got["inputs"], EOS][:length]
        targets = maxtext_tokens(got[TEXT_OF["targets"]], model, settings)
        assert targets == got["targets"].tolist()[:length], number
        cut += len(got["inputs"]) + 1 > length
    assert cut > 0  # some prompts are longer than the rows: MaxText cuts them, EOS too
