"""xP3's catalog (p3data/data/xp3_catalog.yaml): read and checked by p3data's own loader and
schema; an entry for every dataset and config xP3's recipe reads (here, T0's catalog or this
one, never both); every field the recipe's tr13 templates read from a row in the entry's
features; and the families written as rules expand to the recipe's counts. T0's catalog never
includes it.

The recipe's lists are written here from bigscience-workshop/bigscience@aa872e7
data/xp3/prepare_xp3_train.py (reference section 3.1 and 3.7); the generated families (flores,
wmt22, tatoeba) are the tr13 template folders, checked against the reference's counts.
"""

from __future__ import annotations

import itertools
import tarfile
from collections import Counter
from pathlib import Path

import pytest
from helpers.template_sets import shared_archive
from jinja2 import meta, nodes

from p3data.dataset_key import DatasetKey
from p3data.datasets.catalog import (
    CATALOG_FILE,
    XP3_CATALOG_FILE,
    Catalog,
    DatasetEntry,
    read_catalog_file,
)
from p3data.templates.install import TEMPLATE_SETS
from p3data.templates.render import RESERVED_FIELD
from p3data.templates.sandbox import ENVIRONMENT
from p3data.templates.yaml_io import read_template_file

T0_ENGLISH = """glue/mrpc glue/qqp paws/labeled_final ai2_arc/ARC-Challenge ai2_arc/ARC-Easy
kilt_tasks/hotpotqa trivia_qa/unfiltered web_questions wiki_qa adversarial_qa/dbidaf
adversarial_qa/dbert adversarial_qa/droberta duorc/SelfRC duorc/ParaphraseRC ropes squad_v2
super_glue/record quoref cos_e/v1.11 cosmos_qa dream openbookqa/main qasc quail quarel quartz
race/high race/middle sciq social_i_qa super_glue/boolq super_glue/multirc wiki_hop/original wiqa
piqa amazon_polarity app_reviews imdb rotten_tomatoes yelp_review_full common_gen wiki_bio
cnn_dailymail/3.0.0 gigaword multi_news samsum xsum ag_news dbpedia_14 trec super_glue/wic"""
CODE = """Muennighoff/mbpp/sanitized great_code neural_code_search/evaluation_dataset
codeparrot/codecomplex/codeparrot--codecomplex codeparrot/github-jupyter-text-code-pairs
codeparrot/apps/all teven/code_contests teven/code_docstring_corpus/top_level
Fraser/python-state-changes""" + "".join(
    f" codeparrot/xlcost-text-to-code/{language}-program-level"
    for language in ("Python", "C", "C++", "Csharp", "Java", "Javascript", "PHP"))
EVAL_T0 = """winogrande/winogrande_xl super_glue/cb super_glue/rte anli story_cloze/2016
super_glue/copa"""
WIKI_LINGUA = ["ar", "en", "es", "fr", "hi", "id", "pt", "vi", "zh"]
MLQA = ["ar", "vi", "zh", "es", "en", "hi"]
TYDIQA = ["arabic", "bengali", "english", "indonesian", "swahili", "telugu"]
XLSUM = ["arabic", "bengali", "chinese_simplified", "chinese_traditional", "english", "french",
         "gujarati", "hindi", "igbo", "indonesian", "kirundi", "marathi", "nepali", "portuguese",
         "punjabi", "spanish", "swahili", "tamil", "telugu", "urdu", "vietnamese", "yoruba"]
GENERATED = {"facebook/flores": 1_980, "allenai/wmt22_african": 92,
             "Helsinki-NLP/tatoeba_mt": 47}  # reference 3.1: the recipe's generated configs
# The English prompt folder the recipe uses for every config of these datasets (its
# DS_TO_ENG_PROMPT); other datasets use each config's own folder.
ENGLISH_PROMPTS = {
    "xcopa": "en", "Muennighoff/xstory_cloze": "en", "Muennighoff/xwinograd": "en",
    "GEM/wiki_lingua": "en_en", "xnli": "en", "paws-x": "en", "mlqa": "mlqa.en.en",
    "xquad": "xquad.en", "khalidalt/tydiqa-primary": "english",
    "khalidalt/tydiqa-goldp": "english", "pasinit/xlwic": "en", "GEM/xlsum": "english",
    "GEM/BiSECT": "en"}
# Fields the recipe's dataset steps add to a row before templating: not in the dataset's rows.
ADDED_BY_THE_RECIPE = {
    "GEM/wiki_lingua": {"source_language_name", "target_language_name"},
    "codeparrot/apps": {"solution"}, "codeparrot/xlcost-text-to-code": {"code_clean"}}


def keys(text: str) -> list[DatasetKey]:
    """'dataset[/subset]' names; a dataset name with an owner has two parts before the subset."""
    found = []
    for name in text.split():
        parts = name.split("/")
        owned = len(parts) > 2 or (len(parts) == 2 and name in OWNED_WITHOUT_SUBSET)
        dataset = "/".join(parts[:2]) if owned else parts[0]
        subset = "/".join(parts[2 if owned else 1:]) or None
        found.append(DatasetKey(dataset, subset))
    return found


OWNED_WITHOUT_SUBSET = {"codeparrot/github-jupyter-text-code-pairs", "teven/code_contests",
                        "Fraser/python-state-changes"}


@pytest.fixture(scope="module")
def tr13(tmp_path_factory) -> Path:
    """The tr13 templates folder (xP3's), read straight from the fork's archive."""
    root = tmp_path_factory.mktemp("tr13")
    with tarfile.open(shared_archive(TEMPLATE_SETS["xp3"])) as archive:
        members = [m for m in archive if m.isfile() and m.name.endswith("/templates.yaml")
                   and "/promptsource/templates/" in m.name]
        for member in members:
            member.name = member.name.split("/promptsource/templates/", 1)[1]
        archive.extractall(root, members=members, filter="data")
    return root


def generated(tr13: Path, dataset: str) -> list[DatasetKey]:
    return [DatasetKey(dataset, folder.name) for folder in sorted((tr13 / dataset).iterdir())]


@pytest.fixture(scope="module")
def recipe(tr13) -> list[DatasetKey]:
    """Every (dataset, config) xP3's recipe reads: TRAIN_DATASETS, then EVAL_DATASETS_L1."""
    wiki_lingua = [*WIKI_LINGUA, *(f"{a}_{b}" for a, b in itertools.permutations(WIKI_LINGUA, 2))]
    mlqa = [f"mlqa.{a}.{b}" for a in MLQA for b in MLQA
            if not (a == "en" and b in ("vi", "zh", "es", "hi"))]  # the recipe's en block slip
    multilingual = [
        *(DatasetKey("GEM/wiki_lingua", name) for name in wiki_lingua),
        *(DatasetKey("xquad", f"xquad.{code}") for code in ["ar", "zh", "vi", "en", "es", "hi"]),
        *(DatasetKey("mlqa", name) for name in mlqa),
        *(DatasetKey("paws-x", code) for code in ["en", "es", "fr", "zh"]),
        *(DatasetKey(f"khalidalt/tydiqa-{task}", name)
          for task in ("primary", "goldp") for name in TYDIQA),
        *(DatasetKey("clue", name) for name in ["c3", "cmrc2018", "csl", "drcd", "tnews"]),
        *(DatasetKey("pasinit/xlwic", name) for name in ("xlwic_en_zh", "xlwic_fr_fr")),
        *(DatasetKey("GEM/BiSECT", code) for code in ["en", "es", "fr"]),
        *(DatasetKey("GEM/xlsum", name) for name in XLSUM),
        *(key for dataset in GENERATED for key in generated(tr13, dataset))]
    evaluation = [
        *keys(EVAL_T0),
        *(DatasetKey("Muennighoff/xstory_cloze", code)
          for code in ["ar", "es", "eu", "id", "hi", "te", "sw", "zh"]),
        *(DatasetKey("Muennighoff/xwinograd", code) for code in ["en", "fr", "pt", "zh"]),
        *(DatasetKey("xcopa", code) for code in ["id", "ta", "sw", "vi", "zh"]),
        *(DatasetKey("xnli", code)
          for code in ["ar", "en", "es", "fr", "hi", "sw", "ur", "vi", "zh"])]
    return [*keys(T0_ENGLISH), *multilingual, *keys(CODE), *evaluation]


@pytest.fixture(scope="module")
def xp3_entries() -> list[DatasetEntry]:
    return read_catalog_file(XP3_CATALOG_FILE)  # validated against the schema


def test_the_generated_families_are_the_references_counts(tr13, recipe):
    counts = Counter(key.dataset for key in recipe)
    assert {dataset: counts[dataset] for dataset in GENERATED} == GENERATED
    flores = generated(tr13, "facebook/flores")  # every ordered pair of its 45 languages
    languages = sorted({key.subset.split("-")[0] for key in flores})
    assert len(languages) == 45
    assert [key.subset for key in flores] == [f"{a}-{b}" for a, b in
                                              itertools.permutations(languages, 2)]
    # the reference's 2,353 unique training configs (50 English + super_glue/wic, 2,286
    # multilingual, 16 code), and EVAL_DATASETS_L1's 32
    assert len(recipe) == 2_353 + 32 and len(set(recipe)) == len(recipe)


def test_every_config_the_recipe_reads_has_one_entry(recipe, xp3_entries):
    t0 = Catalog.load()
    xp3 = Catalog(xp3_entries)
    assert len(xp3) == len(xp3_entries)  # no key twice
    assert not [entry.name for entry in xp3_entries if entry.key in t0]
    missing = [key.name for key in recipe if key not in t0 and key not in xp3]
    assert missing == []
    assert sorted(entry.key for entry in xp3_entries) == sorted(
        key for key in recipe if key not in t0)  # and nothing else


def test_rules_expand_to_the_recipes_counts(xp3_entries):
    raw_entries = XP3_CATALOG_FILE.read_text().count("\n- dataset:")
    counts = Counter(entry.dataset for entry in xp3_entries)
    assert {name: counts[name] for name in (*GENERATED, "GEM/wiki_lingua", "mlqa", "GEM/xlsum")} \
        == {**GENERATED, "GEM/wiki_lingua": 81, "mlqa": 32, "GEM/xlsum": 22}
    assert len(xp3_entries) == 2_328 and raw_entries < 40
    flores = Catalog(xp3_entries).get("facebook/flores", "eng_Latn-swh_Latn")
    assert {"sentence_eng_Latn", "sentence_swh_Latn"} <= set(flores.features)
    assert flores.splits == {"dev": 997, "devtest": 1012}
    assert flores.hub.files["dev"][0] == "eng_Latn-swh_Latn/dev/*.parquet"


def test_t0s_catalog_never_includes_xp3s():
    assert {entry.source for entry in Catalog.load()} == {str(CATALOG_FILE)}
    assert "facebook/flores" not in {entry.dataset for entry in Catalog.load()}


def prompt_folders(key: DatasetKey, tr13: Path) -> list[str]:
    """The folders whose templates read this config's rows: the recipe's (the English one
    for the mapped datasets), and the config's own where tr13 has it."""
    own = key.name
    english = f"{key.dataset}/{ENGLISH_PROMPTS[key.dataset]}" if key.dataset in \
        ENGLISH_PROMPTS else own
    return [folder for folder in dict.fromkeys([english, own])
            if (tr13 / folder / "templates.yaml").is_file()]


def test_every_field_a_template_reads_is_in_the_entrys_features(tr13, recipe, xp3_entries):
    catalog = Catalog(xp3_entries)
    read_by_folder: dict[str, tuple[set[str], set[tuple[str, str]]]] = {}
    wrong = []
    for key in recipe:
        if key not in catalog:
            continue  # T0's entries: T0's tests check them against T0's templates
        entry = catalog[key]
        folders = prompt_folders(key, tr13)
        assert folders, f"{key}: no tr13 templates"
        offered = {name.replace("-", "_") for name in entry.features}  # the recipe's removeHyphen
        offered |= ADDED_BY_THE_RECIPE.get(key.dataset, set())
        for folder in folders:
            if folder not in read_by_folder:
                read_by_folder[folder] = fields_read(tr13 / folder / "templates.yaml")
            fields, attributes = read_by_folder[folder]
            fields = fields - {RESERVED_FIELD} - set(ENVIRONMENT.globals)
            wrong += [f"{key}: {folder} reads {field!r}" for field in sorted(fields - offered)]
            wrong += [f"{key}: {folder} reads {field}.{part}" for field, part in sorted(attributes)
                      if not offers(entry.features.get(field), part)]
    assert wrong == []


def fields_read(path: Path) -> tuple[set[str], set[tuple[str, str]]]:
    """The row fields a file's templates read (those they assign themselves excepted), and the
    parts of them read by name (`translation.eng`, `answers['text']`)."""
    fields: set[str] = set()
    parts: set[tuple[str, str]] = set()
    for template in read_template_file(path)[2]:
        sources = [source for source in (template.jinja, template.answer_choices) if source]
        trees = [ENVIRONMENT.parse(source) for source in sources]
        assigned = {name.name for tree in trees for node in tree.find_all(nodes.Assign)
                    for name in (node.target, *node.target.find_all(nodes.Name))
                    if isinstance(name, nodes.Name)}  # a namespace set in one part, read in both
        for tree in trees:
            fields |= meta.find_undeclared_variables(tree) - assigned
        for tree in trees:
            for node in tree.find_all((nodes.Getattr, nodes.Getitem)):
                part = node.attr if isinstance(node, nodes.Getattr) else getattr(node.arg, "value",
                                                                                  None)
                if isinstance(node.node, nodes.Name) and isinstance(part, str):
                    parts.add((node.node.name, part))
    return fields, parts


def offers(kind: object, part: str) -> bool:
    """Whether a feature of this type has a part of this name, for the types that have named
    parts (structs, and sequences of structs); any other type passes (a string's methods)."""
    if isinstance(kind, dict) and list(kind) == ["sequence"]:
        kind = kind["sequence"]
    if not isinstance(kind, dict) or set(kind) & {"class_label", "sequence", "list"}:
        return True
    return part in kind
