"""xP3's recipe as data (`p3data/xp3_recipe/`): its configs, language folders, prompt folders,
splits and skips, checked against the figures `../shared/reference/xp3.md` derives from
`prepare_xp3_train.py@aa872e7` and the fork's templates, installed from the archives."""

from __future__ import annotations

from collections import Counter
from functools import cache
from pathlib import Path

import pytest

from p3data.templates.collection import folder_templates
from p3data.templates.yaml_io import read_template_file
from p3data.xp3_recipe.languages import BLOOM_LANGUAGES, config_language, template_language
from p3data.xp3_recipe.pairs import PromptPair, prompt_pairs
from p3data.xp3_recipe.recipe import (
    EVAL_DATASETS_L1,
    EVAL_DATASETS_L2,
    FLORES_LANGUAGES,
    WMT22_PAIRS,
    flores_configs,
    train_datasets,
    unique_train_datasets,
    wmt22_configs,
)
from p3data.xp3_recipe.splits import skipped, train_splits, validation_splits

# reference 3.1: xP3's (config, template) pairs by family
XP3_FAMILIES = {
    "facebook/flores": 5940, "GEM/wiki_lingua": 567, "mlqa": 256, "GEM/xlsum": 198,
    "allenai/wmt22_african": 184, "Helsinki-NLP/tatoeba_mt": 94, "khalidalt/tydiqa": 126,
    "xquad": 54, "paws-x": 48, "clue": 25, "pasinit/xlwic": 20,
}
# reference 3.2: xP3's pairs by language folder
XP3_LANGUAGES = {
    "en": 772, "zh": 464, "es": 287, "vi": 266, "hi": 264, "fr": 252, "id": 227, "pt": 211,
    "sw": 176, "bn": 163, "te": 163, "ig": 154, "ar": 153, "yo": 153,
    **dict.fromkeys(["rw", "lg", "nso", "ny", "tn", "ts", "xh", "zu"], 145), "rn": 144,
    "sn": 144, "ur": 143, "mr": 142, "ta": 142, "gu": 141, "ne": 141, "pa": 141, "ca": 136,
    "eu": 134, "ln": 134, "wo": 134, "ml": 133,
    **dict.fromkeys(["as", "bm", "fon", "kn", "ki", "or", "st", "tum", "tw", "ak"], 132),
    "code": 47,
}


@cache
def _name_counts(root: Path, folder: str) -> Counter[str]:
    path = root / folder / "templates.yaml"
    return Counter(t.name for t in read_template_file(path)[2]) if path.is_file() else Counter()


def recipe_entries(root: Path, pairs: list[PromptPair]) -> Counter[PromptPair]:
    """How often the recipe's name list for each pair's config (the fork's sorted
    `all_template_names`, a name there once per template bearing it) holds the pair's name:
    what the reference counts."""
    return Counter({pair: _name_counts(root, pair.prompt_folder)[pair.template] for pair in pairs})


def family(dataset: str) -> str:
    return dataset.removesuffix("-primary").removesuffix("-goldp")


def test_train_datasets_as_the_recipe_lists_them_mlqa_slip_included():
    entries = train_datasets()
    assert (len(entries), len(unique_train_datasets())) == (2357, 2353)
    twice = [config for config, count in Counter(entries).items() if count > 1]
    assert sorted(twice) == [("mlqa", f"mlqa.es.{x}") for x in ("es", "hi", "vi", "zh")]
    configs = {config for config in entries if config[0] == "mlqa"}
    assert len(configs) == 32 and ("mlqa", "mlqa.en.ar") in configs
    assert not {("mlqa", f"mlqa.en.{x}") for x in ("vi", "zh", "es", "hi")} & configs
    by_dataset = Counter(dataset for dataset, _ in unique_train_datasets())
    assert (len(FLORES_LANGUAGES), len(set(WMT22_PAIRS))) == (204, 248)
    assert by_dataset["facebook/flores"] == len(flores_configs()) == 1980
    assert by_dataset["allenai/wmt22_african"] == len(wmt22_configs()) == 92
    assert {"eng-swh", "fra-wol", "yor-zul"} <= set(wmt22_configs())
    assert by_dataset["GEM/wiki_lingua"] == 9 + 72 and by_dataset["Helsinki-NLP/tatoeba_mt"] == 47
    flores_languages = {config.split("-")[0] for config in flores_configs()}
    assert len(flores_languages) == 45 and {"zho_Hans", "zho_Hant"} <= flores_languages
    assert "arb_Arab" not in flores_languages  # Arabic's ISO 639-3 is `ara`, FLORES's `arb`
    code = [c for c in unique_train_datasets() if config_language(*c) == "code"]
    assert len(code) == 16
    assert len(BLOOM_LANGUAGES) == 46 and "code" in BLOOM_LANGUAGES


def test_eval_sets_held_out():
    assert (len(EVAL_DATASETS_L1), len(EVAL_DATASETS_L2)) == (32, 14)
    assert not set(EVAL_DATASETS_L1 + EVAL_DATASETS_L2) & set(train_datasets())


@pytest.mark.parametrize(("dataset", "config", "template", "language"), [
    ("facebook/flores", "eng_Latn-zho_Hant", "ab-eng_Latn-zho_Hant", "zh"),
    ("facebook/flores", "npi_Deva-swh_Latn", "in-npi_Deva-swh_Latn", "sw"),
    ("pasinit/xlwic", "xlwic_en_zh", "same_sense", "zh"),
    ("GEM/wiki_lingua", "ar_en", "summarize", "en"),
    ("GEM/wiki_lingua", "hi", "summarize", "hi"),
    ("mlqa", "mlqa.hi.zh", "answer_the_question", "hi"),
    ("xquad", "xquad.vi", "answer", "vi"),
    ("Helsinki-NLP/tatoeba_mt", "ara-eng", "translate-this-ara-eng", "en"),
    ("Helsinki-NLP/tatoeba_mt", "ara-eng", "translate-this-eng-ara", "ar"),
    ("Helsinki-NLP/tatoeba_mt", "eng-cmn_Hans", "translate-this-eng-cmn_Hans", "zh"),
    ("Helsinki-NLP/tatoeba_mt", "ara-eng", "no-language-last", "en"),
    ("allenai/wmt22_african", "eng-swh", "translate-eng-swh", "sw"),
    ("allenai/wmt22_african", "eng-swh", "translate-swh-eng-source+target", "en"),
    ("GEM/xlsum", "kirundi", "summarize", "rn"),
    ("khalidalt/tydiqa-goldp", "swahili", "any", "sw"),
    ("clue", "c3", "any", "zh"),
    ("codeparrot/apps", "all", "abovesol", "code"),
    ("glue", "mrpc", "equivalent", "en"),
    ("web_questions", None, "any", "en"),
])
def test_language_folder_rules(dataset, config, template, language):
    assert template_language(dataset, config, template) == language


def test_splits_and_skips():
    assert train_splits("glue", "mrpc", ["train", "validation", "test"]) == ["train", "test"]
    assert train_splits("x", None, ["validation"]) == ["validation"]
    wiki = ["train", "validation", "test", "sampled_validation", "sampled_test"]
    assert train_splits("GEM/wiki_lingua", "ar", wiki) == ["train", "test"]
    assert train_splits("pasinit/xlwic", "xlwic_en_zh", ["train", "validation", "test"]) == [
        "test"]
    assert validation_splits("pasinit/xlwic", "xlwic_en_zh", ["train", "validation"]) == []
    assert validation_splits("glue", "mrpc", ["train", "validation"]) == ["validation"]
    corpus = ["class_level", "top_level"]
    assert train_splits("teven/code_docstring_corpus", "top_level", corpus) == ["top_level"]
    assert skipped("piqa", "test", "anything") and not skipped("piqa", "train", "anything")
    assert skipped("clue/drcd", "test", "xp3longcontinue")
    assert not skipped("clue/drcd", "test", "answer_the_question")
    assert skipped("imdb", "unsupervised", "x") and not skipped("imdb", "test", "x")


def test_xp3_pairs_counts_families_and_languages(xp3_templates):
    root = xp3_templates["xp3"]
    pairs = prompt_pairs("xp3", root)
    entries = recipe_entries(root, pairs)
    assert sum(entries.values()) == 8041
    # one name twice in one file: two entries of the recipe's list, one output, one pair
    assert [(p.prompt_folder, p.template) for p, n in entries.items() if n > 1] == [
        ("codeparrot/apps/all", "abovesol")]
    assert len(pairs) == 8040
    families = Counter()
    for pair, count in entries.items():
        families[family(pair.dataset)] += count
    assert {name: families[name] for name in XP3_FAMILIES} == XP3_FAMILIES
    languages = Counter()
    for pair, count in entries.items():
        languages[pair.language] += count
    assert dict(languages) == XP3_LANGUAGES and len(languages) == 46
    assert {p.prompt_folder for p in pairs if p.dataset == "mlqa"} == {"mlqa/mlqa.en.en"}
    assert len({p.task_name for p in pairs}) == len(pairs)
    assert pairs == prompt_pairs("xp3", root)  # deterministic


def test_xp3mt_own_folders_74_configs_without_templates(xp3_templates):
    root = xp3_templates["xp3mt"]
    pairs = prompt_pairs("xp3mt", root)
    assert sum(recipe_entries(root, pairs).values()) == 7532 and len(pairs) == 7531
    built = {(p.dataset, p.config) for p in pairs}
    without = [config for config in unique_train_datasets() if config not in built]
    cross = [c for c in without if c[0] == "GEM/wiki_lingua" and "_" in c[1]]
    assert len(without) == 74 and len(cross) == 72
    assert set(without) - set(cross) == {("mlqa", "mlqa.en.ar"), ("GEM/xlsum", "kirundi")}
    assert all(p.prompt_folder == f"{p.dataset}/{p.config}" for p in pairs if p.config)


def test_pairs_found_by_folder_not_by_declared_subset(xp3_templates):
    root = xp3_templates["xp3"]
    folder = "codeparrot/xlcost-text-to-code/Java-program-level"
    assert read_template_file(root / folder / "templates.yaml")[1] == "Python-program-level"
    assert list(folder_templates(root, folder)) == ["abovejava", "soljava"]
    assert folder_templates(root, "Fraser/python-state-changes")
    assert folder_templates(root, "no/such/folder") == {}
    # a name used twice: the last template bearing it, as the fork's `DatasetTemplates[name]`
    file_order = read_template_file(root / "codeparrot/apps/all/templates.yaml")[2]
    last = [t for t in file_order if t.name == "abovesol"][-1]
    assert folder_templates(root, "codeparrot/apps/all")["abovesol"] == last
    pair = next(p for p in prompt_pairs("xp3", root) if p.dataset.startswith("codeparrot/xlcost"))
    assert pair.task_name == "xp3_codeparrot_xlcost_text_to_code_Python_program_level_abovepy"


def test_unknown_set_name_is_one_line(xp3_templates):
    with pytest.raises(ValueError, match="unknown xP3 set 'xp3all': expected one of xp3, xp3mt"):
        prompt_pairs("xp3all", xp3_templates["xp3"])
