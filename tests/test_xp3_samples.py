"""Every config of xP3's and xP3mt's training pairs has bundled sample rows in its catalog
schema (files, or made by the families' rules from `samples/languages.yaml`), and every task
makes examples of them; a language's mixture and the code one build from `--samples` offline
with the bundled multilingual sample vocabulary, and `p3data verify`, `peek` and stock seqio
read the result."""

from __future__ import annotations

import json
import os
import re
from collections import defaultdict
from pathlib import Path

import pytest
from helpers.cache import read_examples
from helpers.command_server import run_p3data

from p3data.commands.render import render_rows, spec_renderers
from p3data.dataset_key import DatasetKey
from p3data.datasets.sample_rules import FAMILIES, languages
from p3data.datasets.samples import SAMPLES_DIR, sample_rows, sample_splits
from p3data.datasets.schema import RowChecker
from p3data.format.manifest import read_manifest
from p3data.t0 import TaskSpec
from p3data.taskset import TaskSet, load_definitions, source_splits
from p3data.templates.install import ENV_HOME
from p3data.templates.render import Rendered
from p3data.vocab import XP3_SAMPLE_VOCAB

# clue/drcd's xp3longcontinue subtracts 5 from answers["answer_start"], a list (cmrc2018's
# template takes [0]): a TypeError on every DRCD row, so xP3 dropped the template's whole split
# and no sample row can make an example of it.
NEVER_RENDER = {"xp3_clue_drcd_xp3longcontinue", "xp3mt_clue_drcd_xp3longcontinue",
                "xp3mt_clue_drcd_xp3longcontinue_zhmt"}
MIXTURES = ("xp3_sw", "xp3_code")


@pytest.fixture(scope="module")
def definitions(xp3_home) -> TaskSet:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(ENV_HOME, str(xp3_home))
        return load_definitions(("xp3", "xp3mt"))


@pytest.fixture(scope="module")
def by_config(definitions) -> dict[DatasetKey, list[TaskSpec]]:
    """Both sets' tasks by the config they read."""
    found = defaultdict(list)
    for name in ("xp3", "xp3mt"):
        for spec in definitions.part(name).tasks.values():
            found[spec.entry.key].append(spec)
    return found


def read_splits(specs: list[TaskSpec]) -> list[str]:
    return sorted({split for spec in specs for sources in spec.split_mapping.values()
                   for split in source_splits(sources)})


def test_every_training_config_has_sample_rows_in_its_schema(by_config):
    assert len(by_config) == 2353  # every unique config of the recipe's TRAIN_DATASETS
    for key, specs in by_config.items():
        entry = specs[0].entry
        checker = RowChecker(entry.features)
        assert set(read_splits(specs)) <= set(sample_splits(key)), key
        for split in read_splits(specs):
            rows = sample_rows(key, split)
            assert len(rows) >= 2, (key, split)
            for number, row in enumerate(rows):
                assert checker.problems(row) == [], (key, split, number)
                assert set(row) == set(entry.features), (key, split, number)


def test_the_rules_make_pairs_of_parallel_sentences():
    """A pair config's row i is sentence i in both languages, in their scripts; a question
    answering config's answer is where its offset says. Rule families have no files."""
    row = sample_rows(DatasetKey("facebook/flores", "eng_Latn-zho_Hant"), "dev")[1]
    assert (row["sentence_eng_Latn"], row["sentence_zho_Hant"]) == (
        "The children are going to school.", "孩子們正在去學校。")
    wmt = sample_rows(DatasetKey("allenai/wmt22_african", "swh-yor"), "train")[0]
    assert wmt["translation"] == {"swh": "Maji ni uhai.", "yor": "Omi ni ìyè."}
    for config in ("mlqa.hi.zh", "mlqa.ar.es"):
        for qa in sample_rows(DatasetKey("mlqa", config), "test"):
            start, text = qa["answers"]["answer_start"][0], qa["answers"]["text"][0]
            assert qa["context"][start:start + len(text)] == text
    assert not any((SAMPLES_DIR / family).exists() for family in FAMILIES)
    assert {language.code for language in languages().values()} >= {
        "swh_Latn", "yor_Latn", "hin_Deva", "zho_Hans", "arb_Arab", "tam_Taml", "urd_Arab"}


@pytest.mark.collection  # renders the samples through every task of xP3 and xP3mt (15,571)
def test_every_task_makes_examples_of_the_samples(by_config):
    """Rendered as the build renders (templates, step, row rule): no task is left without an
    example but the three whose template fails on every row of its dataset."""
    kept = set()
    for key, specs in by_config.items():
        _, renderers = spec_renderers(specs, seed=0)
        for split in read_splits(specs):
            for per_row in render_rows(renderers, sample_rows(key, split), 0):
                kept |= {(key, split, name) for name, outcome in per_row.items()
                         if isinstance(outcome, Rendered)}
    empty = {spec.name for key, specs in by_config.items() for spec in specs
             if not any((key, split, spec.template.name) in kept
                        for sources in spec.split_mapping.values()
                        for split in source_splits(sources))}
    assert empty == NEVER_RENDER


@pytest.fixture(scope="module")
def built(xp3_home, definitions, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("xp3_samples_cache")
    mixtures = [arg for name in MIXTURES for arg in ("--mixture", name)]
    result = run_p3data(["cache", "--output-dir", str(out), "--samples", "--vocab",
                         str(XP3_SAMPLE_VOCAB), *mixtures],
                        env={**os.environ, ENV_HOME: str(xp3_home)})
    assert result.returncode == 0, result.stderr[-4000:] + result.stdout[-2000:]
    return out


def test_a_languages_mixture_and_codes_build_with_examples_in_every_task(built, definitions):
    names = {task for mixture in MIXTURES for task in definitions.mixture(mixture).tasks}
    assert len(names) == 176 + 46
    examples = {name: sum(split.examples for split in
                          read_manifest(str(built / name)).splits.values()) for name in names}
    assert [name for name, count in examples.items() if not count] == []


def test_verify_and_peek_read_the_cache(built, xp3_home):
    result = run_p3data(["verify", str(built)])
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    task = "xp3_facebook_flores_eng_Latn_swh_Latn_prev_eng_Latn_swh_Latn"
    result = run_p3data(["peek", str(built), task, "--split", "train", "-n", "3",
                         "--vocab", str(XP3_SAMPLE_VOCAB)],
                        env={**os.environ, ENV_HOME: str(xp3_home)})
    assert result.returncode == 0, result.stderr[-2000:]
    assert "Watoto wanakwenda shuleni." in result.stdout


def test_the_reader_and_export_read_the_cache(built, tmp_path):
    """p3data's reader (no TensorFlow) gives each task split the manifest's examples; `p3data
    export` writes them as JSON Lines."""
    from p3data.read import open_cache

    cache = open_cache(str(built))
    targets = []
    for task in cache.tasks:
        for split in cache.splits(task):
            examples = list(cache.split(task, split))
            assert len(examples) == read_manifest(str(built / task)).splits[split].examples
            targets += [example["targets_pretokenized"] for example in examples]
    assert "Watoto wanakwenda shuleni." in targets  # a flores pair's target, in Swahili
    task = "xp3_codeparrot_xlcost_text_to_code_Python_program_level_solpy"
    result = run_p3data(["export", str(built), "--out", str(tmp_path / "out"), "--format",
                         "jsonl", "--tasks", re.escape(task)])
    assert result.returncode == 0, result.stderr[-2000:]
    exported = [json.loads(line) for path in sorted((tmp_path / "out").rglob("*.jsonl"))
                for line in path.read_text().splitlines()]
    assert any("def is_even" in row["targets_pretokenized"] for row in exported)


def test_stock_seqio_reads_a_task_of_every_dataset(built, definitions):
    """seqio's own reader (use_cached=True) gives the manifest's examples, in the languages'
    own scripts (Swahili targets; code kept as code): one task of each dataset (all 222 would
    take minutes)."""
    import seqio

    from p3data.registry import register_task
    from p3data.vocab import set_vocabulary

    first = {}
    for mixture in MIXTURES:
        for name in definitions.mixture(mixture).tasks:
            first.setdefault(definitions.task(name).entry.dataset, name)
    assert len(first) > 10
    set_vocabulary(XP3_SAMPLE_VOCAB)
    try:
        texts = []
        for name in sorted(first.values()):
            if name not in seqio.TaskRegistry.names():
                register_task(definitions.task(name))
            for split, record in read_manifest(str(built / name)).splits.items():
                got = read_examples(name, split, built)
                assert len(got) == record.examples > 0, (name, split)
                texts += [e["targets_pretokenized"].decode() for e in got]
    finally:
        set_vocabulary(None)
    assert set(languages()["sw"].sentences) & set(texts)
    assert any("def " in text or "{" in text for text in texts)


def test_seqio_reads_every_task_of_a_language_mixture_on_train(built, definitions):
    """`seqio.get_mixture_or_task("xp3_sw").get_dataset(split="train")`, as every T5X recipe
    reads a training mixture, reads every task of it: each task's one split is `train`, which
    holds all of its training splits (flores' dev then devtest), and seqio's rate of each task
    is the examples its train split kept. A task without `train` would be skipped with no
    more than a warning in seqio's log."""
    import seqio

    from p3data.registry import register_mixture_spec, register_task
    from p3data.vocab import set_vocabulary

    mixture = definitions.mixture("xp3_sw")
    for name in mixture.tasks:
        if name not in seqio.TaskRegistry.names():
            register_task(definitions.task(name))
    if mixture.name not in seqio.MixtureRegistry.names():
        register_mixture_spec(mixture, definitions.tasks)
    examples = {name: read_manifest(str(built / name)).splits["train"].examples
                for name in mixture.tasks}
    before = seqio.utils.get_global_cache_dirs()
    seqio.utils.set_global_cache_dirs([str(built)])
    set_vocabulary(XP3_SAMPLE_VOCAB)
    try:
        registered = seqio.get_mixture_or_task(mixture.name)
        for task in registered.tasks:  # other modules may have pointed them at their caches
            task._cache_dir, task._stats = None, {}
        assert {task.name: task.splits for task in registered.tasks} == {
            name: ("train",) for name in mixture.tasks}
        assert {task.name: registered.get_rate(task) for task in registered.tasks} == examples
        dataset = registered.get_dataset(split="train", use_cached=True, shuffle=False,
                                         num_epochs=1, copy_pretokenized=True,
                                         trim_output_features=False)
        assert len(list(dataset.take(20).as_numpy_iterator())) == 20
    finally:
        seqio.utils.set_global_cache_dirs(before)
        set_vocabulary(None)
    flores = [name for name in mixture.tasks if "flores" in name]
    assert flores and all(
        read_manifest(str(built / name)).split_mapping == {"train": ["dev", "devtest"]}
        for name in flores)
