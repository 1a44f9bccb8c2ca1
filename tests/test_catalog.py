"""Catalog files are validated against the declared schema, every problem one line naming file,
entry and field; and `RowChecker` sorts row mismatches into stable categories."""

from __future__ import annotations

import json

import jsonschema
import pytest
import yaml

from p3data.cli import main
from p3data.dataset_key import DatasetKey
from p3data.datasets.catalog import (
    CATALOG_FILE,
    ENV_CATALOG,
    EVAL_ROLES,
    SCHEMA_FILE,
    TRAIN_ROLES,
    Catalog,
    CatalogError,
    read_catalog_file,
)
from p3data.datasets.schema import RowChecker

SCHEMA = json.loads(SCHEMA_FILE.read_text())
FIRST = {"dataset": "ok", "splits": {"train": 1}, "features": {"a": "string"}}
TREC = {
    "dataset": "trec", "train": "t0", "train_size": 5452,
    "splits": {"train": 5452, "test": 500},
    "features": {"text": "string", "label": {"class_label": ["a", "b"]},
                 "answers": {"sequence": {"text": "string", "start": "int32"}}},
    "text_lengths": {"text": 60},
    "hub": {"repo": "CogComp/trec", "revision": "refs/convert/parquet",
            "files": {"train": "default/train/*.parquet", "test": "default/test/*.parquet"},
            "columns": {"coarse_label": "label"}, "notes": ""},
}
TYPE_HINT = SCHEMA["$defs"]["feature"]["description"]
ENTRY_FIELDS = ", ".join(SCHEMA["$defs"]["entry"]["properties"])


def write(tmp_path, entries, name="my_catalog.yaml"):
    path = tmp_path / name
    path.write_text(yaml.safe_dump(entries, sort_keys=False))
    return path


def problems(path) -> list[str]:
    with pytest.raises(CatalogError) as caught:
        read_catalog_file(path)
    return str(caught.value).splitlines()


def test_the_shipped_catalog_validates():
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    validated = read_catalog_file(CATALOG_FILE)
    assert len(validated) == 67
    assert validated == list(Catalog.load())  # what `load` reads without validating


def test_schema_roles_are_the_python_roles():
    entry = SCHEMA["$defs"]["entry"]["properties"]
    assert entry["train"]["enum"] == [*TRAIN_ROLES, None]
    assert entry["eval"]["enum"] == [*EVAL_ROLES, None]


@pytest.mark.parametrize(("changes", "expected"), [
    ({"hub": "x"},
     "hub: expected a mapping (a Hub location: repo, revision, files, columns, labels, drift, "
     "notes), got 'x'"),
    ({"rounds": ["r1"]},
     "rounds: expected a mapping (round -> {task split: source split}), got ['r1']"),
    ({"train_size": "5452"}, "train_size: expected an integer, got '5452'"),
    ({"train_size": -1}, "train_size: expected at least 0, got -1"),
    ({"splits": {"train": -3, "test": 500}}, "splits.train: expected at least 0, got -3"),
    ({"splits": {"train": 5452, 2016: 3}}, "splits: keys must be non-empty strings, got 2016"),
    ({"train": "t1"}, "train: expected one of t0, t0+, t0++, null; got 't1'"),
    ({"eval": "heldout"}, "eval: expected one of held_out, bias_fairness, null; got 'heldout'"),
    ({"hubs": {}}, f"unknown field 'hubs' (known: {ENTRY_FIELDS})"),
    ({"hub": {**TREC["hub"], "branch": "main"}},
     "hub: unknown field 'branch' (known: repo, revision, files, columns, labels, drift, notes)"),
    ({"subset": True}, "subset: expected a string or an integer (a Hugging Face config name; "
                       "numbers such as 2016 are read as text), got True"),
    ({"features": {"text": "string",
                   "answers": {"sequence": {"text": "strng", "start": "int32"}}}},
     "features.answers.sequence.text: expected one of string, bool, int8, int16, int32, int64, "
     "float32, float64; got 'strng'"),
    ({"features": {"label": {"class_lable": ["a", "b"]}}},
     f"features.label.class_lable: expected a string or a mapping ({TYPE_HINT}), got ['a', 'b']"),
    ({"features": {"label": {"class_label": ["a", "b"], "names": 2}}},
     "features.label: unknown field 'names' (known: class_label)"),
    ({"features": {"label": {"class_label": ["a", "b", "a"]}}},
     "features.label.class_label: repeats 'a'"),
    ({"features": {"text": None}},
     f"features.text: expected a string or a mapping ({TYPE_HINT}), got null"),
    ({"features": {}}, "features: must not be empty"),
    ({"rounds": {"r1": {"train": "train_r1"}}},
     "rounds.r1.train: 'train_r1' is not one of the entry's splits (train, test)"),
    ({"manual_download": {"files": {"validation": "v.csv"}}},
     "manual_download.files.validation: 'validation' is not one of the entry's splits "
     "(train, test)"),
    ({"text_lengths": {"txt": 60}},
     "text_lengths.txt: 'txt' is not one of the entry's features (text, label, answers)"),
    ({"hub": {"columns": {"coarse_label": "label_coarse"}}},
     "hub.columns.coarse_label: 'label_coarse' is not one of the entry's features "
     "(text, label, answers)"),
    ({"splits": None}, "splits: expected a mapping (split name -> number of examples), got null"),
], ids=lambda value: next(iter(value)) if isinstance(value, dict) else None)
def test_each_malformed_value_is_one_line_naming_file_entry_and_field(tmp_path, changes,
                                                                      expected):
    path = write(tmp_path, [FIRST, {**TREC, **changes}])
    assert problems(path) == [f"{path}: entry 2 (trec): {expected}"]


@pytest.mark.parametrize(("entry", "expected"), [
    (5, "expected a mapping (a dataset entry with dataset, subset, subsets, train, eval, "
        "train_size, splits, rounds, features, text_lengths, hub, manual_download), got 5"),
    ({"subset": "x"}, "missing 'dataset', 'splits', 'features'"),
])
def test_an_entry_that_is_not_an_entry(tmp_path, entry, expected):
    path = write(tmp_path, [FIRST, entry])
    assert problems(path) == [f"{path}: entry 2: {expected}"]


def test_every_problem_of_a_file_at_once_each_on_its_own_line(tmp_path):
    path = write(tmp_path, [{**TREC, "hub": "x", "train": "t9"}, FIRST, {**FIRST, "eval": 1},
                            FIRST])
    assert problems(path) == [
        f"{path}: entry 1 (trec): train: expected one of t0, t0+, t0++, null; got 't9'",
        f"{path}: entry 1 (trec): hub: expected a mapping (a Hub location: repo, "
        "revision, files, columns, labels, drift, notes), got 'x'",
        f"{path}: entry 3 (ok): eval: expected one of held_out, bias_fairness, null; got 1",
        f"{path}: entry 4 (ok): the same dataset/subset as entry 2",
    ]


def test_a_long_list_of_problems_is_cut_short(tmp_path):
    path = write(tmp_path, [{**FIRST, "train": "x"} for _ in range(30)])
    lines = problems(path)
    assert len(lines) == 21 and lines[-1] == f"{path}: ... and 10 more problems"


@pytest.mark.parametrize(("content", "expected"), [
    (b"- dataset: x\n  splits: {train: 1\n",
     ":3:1: invalid YAML: did not find expected ',' or '}'"),
    (b"dataset: x\n", ": expected a list (dataset entries), got {'dataset': 'x'}"),
    (b"", ": expected a list (dataset entries), got null"),
    (b"- dataset: caf\xe9\n", ": not UTF-8 text: invalid continuation byte at byte 14"),
])
def test_a_file_that_is_not_a_catalog(tmp_path, content, expected):
    path = tmp_path / "my_catalog.yaml"
    path.write_bytes(content)
    assert problems(path) == [f"{path}{expected}"]


def test_what_the_shipped_catalog_relies_on_stays_accepted(tmp_path):
    entry = {**TREC, "subset": 2016, "hub": None, "text_lengths": None, "rounds": None,
             "manual_download": {"url": "https://example.org", "instructions": "by hand",
                                 "files": {"test": "test.csv"}, "columns": {"Text": "text"},
                                 "downloads": ["test.csv"]}}
    (read,) = read_catalog_file(write(tmp_path, [entry]))
    assert read.key == DatasetKey("trec", "2016")
    assert read.hub.repo is None and read.text_lengths == {}
    assert read.manual_download["files"] == {"test": "test.csv"}
    rounds = {"r1": {"train": "train", "test": "test"}}
    (read,) = read_catalog_file(write(tmp_path, [{**TREC, "rounds": rounds}]))
    assert read.split_mappings() == rounds


def test_p3data_list_with_a_bad_user_catalog_exits_2_with_one_line(tmp_path, monkeypatch,
                                                                  capsys):
    path = write(tmp_path, [{**TREC, "hub": "x"}])
    monkeypatch.setenv(ENV_CATALOG, str(path))
    assert main(["list"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.splitlines() == [
        f"p3data: error: {path}: entry 1 (trec): hub: expected a mapping (a Hub location: repo, "
        "revision, files, columns, labels, drift, notes), got 'x'"]


# ---- entries standing for many subsets (`subsets:`) ----

PAIRS = {
    "dataset": "flores", "subsets": {"pairs": ["eng", "fra", "swh"], "separator": "-"},
    "splits": {"dev": 9, "devtest": None},
    "features": {"id": "int32", "sentence_{source}": "string", "sentence_{target}": "string",
                 "pair": {"{source}": "string", "{target}": {"sequence": "string"}}},
    "text_lengths": {"sentence_{source}": 40},
    "hub": {"repo": "o/flores", "revision": "main",
            "files": {"dev": ["{subset}/dev/*.parquet", "{subset}/old-dev.parquet"],
                      "devtest": "{subset}/devtest/*.parquet"},
            "columns": {"text_{target}": "sentence_{target}"}},
}


def test_a_pairs_rule_is_one_entry_per_ordered_pair_its_names_filled_in(tmp_path):
    entries = read_catalog_file(write(tmp_path, [PAIRS]))
    assert [e.subset for e in entries] == ["eng-fra", "eng-swh", "fra-eng", "fra-swh",
                                           "swh-eng", "swh-fra"]
    swh_fra = entries[5]
    assert swh_fra.key == DatasetKey("flores", "swh-fra")
    assert swh_fra.splits == {"dev": 9, "devtest": None}
    assert swh_fra.features == {"id": "int32", "sentence_swh": "string", "sentence_fra": "string",
                                "pair": {"swh": "string", "fra": {"sequence": "string"}}}
    assert swh_fra.text_lengths == {"sentence_swh": 40}
    assert swh_fra.hub.files == {"dev": ("swh-fra/dev/*.parquet", "swh-fra/old-dev.parquet"),
                                 "devtest": ("swh-fra/devtest/*.parquet",)}
    assert swh_fra.hub.columns == {"text_fra": "sentence_fra"}
    assert Catalog(entries).get("flores", "fra-eng").features["sentence_eng"] == "string"


def test_a_names_rule_gives_each_subset_its_own_splits_and_their_files_only(tmp_path):
    rule = {**TREC, "subsets": {"names": {"a": {"train": 3}, "b": None}}}
    rule["hub"] = {**TREC["hub"], "files": {"train": "{subset}/train.parquet",
                                           "test": "{subset}/test.parquet"}}
    a, b = read_catalog_file(write(tmp_path, [rule]))
    assert (a.subset, a.splits, a.hub.files) == ("a", {"train": 3},
                                                 {"train": ("a/train.parquet",)})
    assert (b.subset, b.splits) == ("b", TREC["splits"])
    assert b.hub.files == {"train": ("b/train.parquet",), "test": ("b/test.parquet",)}
    (c,) = read_catalog_file(write(tmp_path, [{**TREC, "subsets": {"names": ["c"]}}]))
    assert c.key == DatasetKey("trec", "c")


@pytest.mark.parametrize(("entry", "expected"), [
    ({**PAIRS, "subset": "x"},
     "subsets: an entry has either a subset or a subsets rule, not both"),
    ({**PAIRS, "subsets": {"separator": "-"}}, "subsets: give either names or pairs"),
    ({**PAIRS, "subsets": {"pairs": ["a", "b"]}},
     "subsets.pairs: pairs need a separator to join them"),
    ({**PAIRS, "subsets": {"names": ["a", "b"]}},
     "subsets: {source} and {target} need a separator to split the names"),
    ({**PAIRS, "subsets": {"names": ["a-b", "c"], "separator": "-"}},
     "subsets.names.c: 'c' is not two names joined by '-'"),
    ({**PAIRS, "subsets": {"names": ["a-b", "a-b"], "separator": "-"}},
     "subsets: repeats the subsets a-b"),
    ({**PAIRS, "subsets": {"pairs": ["a", "b"], "separator": "-", "sep": "_"}},
     "subsets: unknown field 'sep' (known: names, pairs, separator)"),
    ({**PAIRS, "subsets": {"names": {"a-b": {"dev": -1}}, "separator": "-"}},
     "subsets.names.a-b.dev: expected at least 0, got -1"),
    ({**PAIRS, "subsets": {"names": {"a-b": ["dev"]}, "separator": "-"}},
     "subsets.names.a-b: expected a mapping (split name -> number of examples, or null for the "
     "entry's splits), got ['dev']"),
    ({**PAIRS, "text_lengths": {"sentence_{target}": 40, "sentense_{source}": 4}},
     "subset eng-fra: text_lengths.sentense_eng: 'sentense_eng' is not one of the entry's "
     "features (id, sentence_eng, sentence_fra, pair)\nand 5 more of its subsets have problems"),
], ids=lambda value: value if isinstance(value, str) else None)
def test_a_bad_rule_is_one_line_naming_the_entry_and_the_subset(tmp_path, entry, expected):
    path = write(tmp_path, [entry])
    named = "flores/x" if "subset" in entry else "flores"
    assert problems(path) == [f"{path}: entry 1 ({named}): {line}"
                              for line in expected.splitlines()]


def test_a_rule_subset_that_repeats_a_plain_entry_is_named(tmp_path):
    path = write(tmp_path, [{**TREC, "subset": "b"}, {**TREC, "subsets": {"names": ["a", "b"]}}])
    assert problems(path) == [
        f"{path}: entry 2 (trec): subset b: the same dataset/subset as entry 1"]


# ---- RowChecker ----

FLAT = {"premise": "string", "hypothesis": "string", "label": {"class_label": ["e", "n", "c"]},
        "idx": "int32", "small": "int8", "score": "float32", "flag": "bool"}
GOOD = {"premise": "p", "hypothesis": "h", "label": 2, "idx": 7, "small": -128, "score": 0.5,
        "flag": False}


def test_a_conforming_row_has_no_problems_and_extra_columns_are_fine():
    checker = RowChecker(FLAT)
    assert checker.problems(GOOD) == []
    assert checker.problems({**GOOD, "extra": [1, None], "score": 1}) == []  # an int is a float
    assert [checker.problems({**GOOD, "label": label}) for label in (-1, 0, 1, 2)] == [[]] * 4


@pytest.mark.parametrize(("changes", "expected"), [
    ({"premise": None}, ["premise: null where string expected"]),
    ({"label": "c"}, ["label: string where class_label expected"]),
    ({"label": 3}, ["label: class id out of range"]),
    ({"label": -2}, ["label: class id out of range"]),
    ({"label": True}, ["label: bool where class_label expected"]),
    ({"idx": True}, ["idx: bool where int32 expected"]),
    ({"idx": 7.0}, ["idx: float where int32 expected"]),
    ({"idx": 2 ** 31}, ["idx: int out of int32 range"]),
    ({"small": 128}, ["small: int out of int8 range"]),
    ({"score": "0.5"}, ["score: string where float32 expected"]),
    ({"flag": 0}, ["flag: int where bool expected"]),
    ({"hypothesis": ["h"], "label": None},
     ["hypothesis: list where string expected", "label: null where class_label expected"]),
])
def test_flat_row_categories_name_field_and_kind_never_values(changes, expected):
    assert RowChecker(FLAT).problems({**GOOD, **changes}) == expected


def test_missing_is_not_null():
    row = {name: value for name, value in GOOD.items() if name != "premise"}
    assert RowChecker(FLAT).problems(row) == ["premise: missing"]
    assert RowChecker(FLAT).problems([GOOD]) == ["row: list where struct expected"]


SQUAD = {"id": "string", "answers": {"sequence": {"text": "string", "answer_start": "int32"}}}


@pytest.mark.parametrize(("answers", "expected"), [
    ({"text": ["a", "b"], "answer_start": [0, 5]}, []),
    ({"text": [], "answer_start": []}, []),
    ({"text": ["a", 3, 4], "answer_start": [0, None, 1]},
     ["answers.text[]: int where string expected",
      "answers.answer_start[]: null where int32 expected"]),
    ({"text": "a", "answer_start": [0]}, ["answers.text: string where list expected"]),
    ({"text": ["a"]}, ["answers.answer_start: missing"]),
    ({"text": ["a"], "answer_start": None}, ["answers.answer_start: null where list expected"]),
    ([{"text": "a", "answer_start": 0}], ["answers: list where struct expected"]),
])
def test_a_sequence_of_structs_is_a_struct_of_lists(answers, expected):
    assert RowChecker(SQUAD).problems({"id": "1", "answers": answers}) == expected


def test_lists_of_structs_nested_sequences_and_sequences_of_labels():
    checker = RowChecker({
        "output": {"list": {"answer": "string", "meta": {"score": "int32"}}},
        "tree": {"sequence": {"a": {"sequence": {"b": "string"}}}},
        "tags": {"sequence": {"class_label": ["x", "y"]}},
        "words": {"sequence": "int32"},
        "grid": {"list": {"list": "float64"}},
    })
    row = {"output": [{"answer": "a", "meta": {"score": 1, "more": "fine"}}],
           "tree": {"a": [{"b": ["x"]}, {"b": []}]}, "tags": [0, 1, -1], "words": [1, 2],
           "grid": [[0.5, 1], []]}
    assert checker.problems(row) == []
    bad = {"output": [{"answer": "a", "meta": {}}, {"meta": {"score": "1"}}],
           "tree": {"a": [{"b": [1]}, {"c": []}]}, "tags": [0, 2, 5], "words": [1, True],
           "grid": [[0.5], ["1"], None]}
    assert checker.problems(bad) == [
        "output[].meta.score: missing", "output[].answer: missing",
        "output[].meta.score: string where int32 expected",
        "tree.a[].b[]: int where string expected", "tree.a[].b: missing",
        "tags[]: class id out of range", "words[]: bool where int32 expected",
        "grid[][]: string where float64 expected", "grid[]: null where list expected"]


def test_an_unknown_type_in_the_features_is_named_when_compiled():
    with pytest.raises(CatalogError, match=r"^features\.answers\.text\[\]: unknown type 'strng'$"):
        RowChecker({"answers": {"sequence": {"text": "strng"}}})
