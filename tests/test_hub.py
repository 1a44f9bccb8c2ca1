"""The Hub store reads the catalog's pinned parquet files, checks them against the catalog and
adapts them to T0's 2021 rows; here on an offline Hub tree (`P3DATA_HUB_ROOT`) written by the
tests with pyarrow, with `huggingface` schema metadata shaped as `datasets` writes it."""

from __future__ import annotations

import pickle
from pathlib import Path

import httpx2
import pyarrow as pa
import pytest
import yaml
from helpers.hub import (
    EXPORT,
    TOY_FEATURES,
    TOY_HUB_FEATURES,
    TREC_ROWS,
    catalog_entry,
    class_label,
    toy_columns,
    trec_entry,
    value,
    write_parquet,
    write_trec_export,
)
from huggingface_hub import parse_hf_uri
from huggingface_hub.errors import HfHubHTTPError, RepositoryNotFoundError

from p3data.cli import main
from p3data.datasets.catalog import (
    ENV_CATALOG,
    CatalogError,
    HubLocation,
    read_catalog_file,
)
from p3data.datasets.drift import DriftError
from p3data.datasets.errors import DataNotFoundError, SourceError
from p3data.datasets.hub import ENV_HUB_ROOT, HubStore, hub_path
from p3data.datasets.parquet import is_transient, with_retries
from p3data.datasets.stores import ENV_DATA_DIR, open_store
from p3data.format.manifest import read_manifest
from p3data.templates import TemplateCollection
from p3data.templates.render import DatasetRenderer, Rendered
from p3data.vocab import SAMPLE_VOCAB


def read_split(store, split: str) -> list[dict]:
    return [row for shard in store.list_shards(split) for row in store.read(split, shard)]


def one_line(call, kind: type[Exception]) -> str:
    with pytest.raises(kind) as info:
        call()
    assert "\n" not in str(info.value)
    return str(info.value)


@pytest.fixture
def hub_root(tmp_path, monkeypatch) -> Path:
    """An empty offline Hub, used by stores opened without an explicit root."""
    root = tmp_path / "hub"
    root.mkdir()
    monkeypatch.setenv(ENV_HUB_ROOT, str(root))
    monkeypatch.delenv(ENV_DATA_DIR, raising=False)
    return root


def test_hub_paths_are_what_huggingface_hub_parses():
    url = hub_path("CogComp/trec", EXPORT, "default/train/*.parquet")
    assert url == "hf://datasets/CogComp/trec@refs%2Fconvert%2Fparquet/default/train/*.parquet"
    parsed = parse_hf_uri(url)
    assert (parsed.type, parsed.id, parsed.revision, parsed.path_in_repo) == (
        "dataset", "CogComp/trec", EXPORT, "default/train/*.parquet")
    assert hub_path("CogComp/trec", EXPORT, "default/x.parquet", "gs://org-hub/") == (
        "gs://org-hub/CogComp/trec/refs/convert/parquet/default/x.parquet")


def test_script_only_main_fails_and_its_parquet_export_is_read(tmp_path, hub_root):
    repo = hub_root / "acme" / "toy"
    (repo / "main").mkdir(parents=True)
    (repo / "main" / "toy.py").write_text("# a loading script\n")
    export = repo / EXPORT / "default"
    write_parquet(export / "train" / "0000.parquet", toy_columns(0, 3), TOY_HUB_FEATURES)
    write_parquet(export / "train" / "0001.parquet", toy_columns(3, 2), TOY_HUB_FEATURES)
    hub = {"repo": "acme/toy", "files": {"train": "default/train/*.parquet"},
           "drift": ["row order: the export's"]}

    on_main = open_store(catalog_entry(tmp_path, {**hub, "revision": "main"}))
    assert one_line(lambda: on_main.list_shards("train"), DataNotFoundError) == (
        "toy/train: acme/toy: the repository holds a loading script only at main: pin "
        "refs/convert/parquet or build a mirror (no parquet file matches "
        "default/train/*.parquet)")

    store = open_store(catalog_entry(tmp_path, {**hub, "revision": EXPORT}), rows_per_shard=2)
    assert isinstance(store, HubStore) and store.drift == ("row order: the export's",)
    expected = [{"sentence": f"s{i}", "idx": i, "label": i % 2} for i in range(5)]
    assert read_split(store, "train") == expected  # the extra column is never read
    shards = store.list_shards("train")
    assert [(s.start, s.stop) for s in shards] == [(0, 3), (3, 5)]  # whole row groups
    files = {f"default/train/{name}": (export / "train" / name).stat().st_size
             for name in ("0000.parquet", "0001.parquet")}
    assert store.identity("train") == {"repo": "acme/toy", "revision": EXPORT,
                                       "drift": ["row order: the export's"], "files": files}
    shipped = pickle.loads(pickle.dumps(store))  # as Beam ships it to a worker
    assert list(shipped.read("train", shards[1])) == expected[3:]


def test_both_export_layouts_are_read_through_a_list_of_globs(tmp_path, hub_root):
    old = hub_root / "acme" / "toy" / EXPORT / "plain_text"
    write_parquet(old / "toy-train.parquet", toy_columns(0, 5), TOY_HUB_FEATURES)
    write_parquet(old / "toy-test.parquet", toy_columns(0, 1), TOY_HUB_FEATURES)
    entry = catalog_entry(tmp_path, {
        "repo": "acme/toy", "revision": EXPORT, "files": {
            "train": ["default/train/*.parquet", "plain_text/*-train.parquet"]}})
    store = open_store(entry)
    assert [row["sentence"] for row in read_split(store, "train")] == [f"s{i}" for i in range(5)]
    assert list(store.identity("train")["files"]) == ["plain_text/toy-train.parquet"]


def test_a_merged_multi_config_export_fails_the_size_check(tmp_path, hub_root):
    export = hub_root / "acme" / "hop" / EXPORT
    write_parquet(export / "masked" / "train" / "0000.parquet", toy_columns(0, 5, tag="m"),
                  TOY_HUB_FEATURES)
    write_parquet(export / "original" / "train" / "0000.parquet", toy_columns(0, 5, tag="o"),
                  TOY_HUB_FEATURES)
    hub = {"repo": "acme/hop", "revision": EXPORT}
    merged = open_store(catalog_entry(tmp_path, {**hub, "files": {"train": "*/train/*.parquet"}},
                                      dataset="hop"))
    assert one_line(lambda: merged.list_shards("train"), DriftError) == (
        "hop/train: 10 rows in */train/*.parquet != catalog 5")
    original = open_store(catalog_entry(
        tmp_path, {**hub, "files": {"train": "original/train/*.parquet"}}, dataset="hop"))
    assert [row["sentence"] for row in read_split(original, "train")] == [
        f"o{i}" for i in range(5)]


def test_a_partial_export_is_refused_whatever_its_size(tmp_path, hub_root):
    export = hub_root / "acme" / "big" / EXPORT / "default"
    write_parquet(export / "partial-train" / "0000.parquet", toy_columns(0, 5), TOY_HUB_FEATURES)
    store = open_store(catalog_entry(
        tmp_path, {"repo": "acme/big", "revision": EXPORT,
                   "files": {"train": "default/*train/*.parquet"}}, dataset="big"))
    assert one_line(lambda: store.list_shards("train"), DriftError) == (
        "big/train: default/partial-train/0000.parquet is a partial export (a partial-* folder "
        "holds the first rows of a split too big to convert); pin the complete files, or build "
        "a mirror from the dataset's source")


def test_a_split_only_exported_in_part_says_so(tmp_path, hub_root):
    """The Hub converted only the first rows of a big split (`partial-train/`), and the
    catalog pins the complete folder: not "no parquet file matches"."""
    export = hub_root / "acme" / "big" / EXPORT / "default"
    write_parquet(export / "partial-train" / "0000.parquet", toy_columns(0, 5), TOY_HUB_FEATURES)
    store = open_store(catalog_entry(
        tmp_path, {"repo": "acme/big", "revision": EXPORT,
                   "files": {"train": "default/train/*.parquet"}}, dataset="big"))
    assert one_line(lambda: store.list_shards("train"), DataNotFoundError) == (
        f"big/train: acme/big: only a partial export of this split at {EXPORT} "
        "(default/partial-train/0000.parquet: a partial-* folder holds the first rows of a "
        "split too big to convert); pin the complete files, or build a mirror from the "
        "dataset's source")


@pytest.mark.parametrize(("columns", "features", "expected"), [
    ({**toy_columns(0, 5), "idx": pa.array(range(5), pa.int64())},
     {**TOY_HUB_FEATURES, "idx": value("int64")}, "idx: int64 != catalog int32"),
    (toy_columns(0, 5), {**TOY_HUB_FEATURES, "label": class_label(["yes", "no"])},
     "label names [yes, no] != catalog [no, yes]; declare a label map"),
    ({k: v for k, v in toy_columns(0, 5).items() if k != "label"},
     {k: v for k, v in TOY_HUB_FEATURES.items() if k != "label"},
     "no column 'label' in the files (they have sentence, idx, extra); declare a column rename"),
    (toy_columns(0, 5), None, "label: int64 != catalog class_label [no, yes]"),
    (toy_columns(0, 4), TOY_HUB_FEATURES, "4 rows in default/train/*.parquet != catalog 5"),
    ({**toy_columns(0, 5), "idx": [0.0, 1.0, 2.0, 3.0, 6.5], "label": [0, 1, 0.7, 1, 0]},
     TOY_HUB_FEATURES, "idx: the files hold float64 where their metadata declares int32; "
                       "label: the files hold float64 where their metadata declares "
                       "class_label [no, yes]"),
], ids=["type", "label-names", "missing-column", "no-class-names", "short-split",
        "floats-under-int-metadata"])
def test_undeclared_drift_is_one_line_naming_dataset_split_and_difference(
        tmp_path, hub_root, *, columns, features, expected):
    write_parquet(hub_root / "acme" / "toy" / EXPORT / "default" / "train" / "0000.parquet",
                  columns, features)
    store = open_store(catalog_entry(tmp_path, {
        "repo": "acme/toy", "revision": EXPORT, "files": {"train": "default/train/*.parquet"}}))
    assert one_line(lambda: store.list_shards("train"), DriftError) == f"toy/train: {expected}"


def test_a_size_the_catalog_could_not_confirm_is_not_checked(tmp_path, hub_root):
    """xP3's catalog has null where a split's size is unknown: the rows are read, their schema
    checked, their count taken as it is."""
    write_parquet(hub_root / "acme" / "toy" / EXPORT / "default" / "train" / "0000.parquet",
                  toy_columns(0, 4), TOY_HUB_FEATURES)
    hub = {"repo": "acme/toy", "revision": EXPORT, "files": {"train": "default/train/*.parquet"}}
    store = open_store(catalog_entry(tmp_path, hub, splits={"train": None}))
    assert [row["idx"] for row in read_split(store, "train")] == [0, 1, 2, 3]
    wrong = open_store(catalog_entry(tmp_path, hub, splits={"train": None},
                                     features={**TOY_FEATURES, "idx": "string"}))
    assert one_line(lambda: wrong.list_shards("train"), DriftError) == (
        "toy/train: idx: int32 != catalog string")


def test_missing_revision_names_the_hub_root_folder(tmp_path, hub_root):
    (hub_root / "acme" / "toy" / "main").mkdir(parents=True)
    store = open_store(catalog_entry(tmp_path, {
        "repo": "acme/toy", "revision": "v2", "files": {"train": "*.parquet"}}))
    assert one_line(lambda: store.list_shards("train"), DataNotFoundError) == (
        f"toy/train: acme/toy: no revision v2 under the Hub root ({hub_root}/acme/toy/v2 "
        "does not exist)")


def test_trec_labels_are_remapped_by_name_and_render_the_right_class(tmp_path, hub_root):
    write_trec_export(hub_root)
    entry = trec_entry(tmp_path)
    rows = read_split(open_store(entry), "train")
    coarse = entry.features["label-coarse"]["class_label"]
    fine = entry.features["label-fine"]["class_label"]
    assert [(coarse[row["label-coarse"]], fine[row["label-fine"]]) for row in rows] == [
        (c, f.split(":")[1]) for _, c, f in TREC_ROWS]
    test_rows = read_split(open_store(entry), "test")
    assert [row["label-coarse"] for row in test_rows] == [coarse.index("ABBR"), -1]

    templates = TemplateCollection.default()
    renderer = DatasetRenderer([templates.template("trec", None, name) for name in (
        "what_category_best_describe", "fine_grained_ABBR")])
    outcomes = renderer.render_batch(rows)
    targets = [o.targets if isinstance(o, Rendered) else None
               for o in outcomes["what_category_best_describe"]]
    assert targets == ["Abbreviation", "Abbreviation", "Location", "Quantity", "Person",
                       "Description"]
    abbreviations = [o.targets for o in outcomes["fine_grained_ABBR"] if isinstance(o, Rendered)]
    assert abbreviations == ["expression abbreviated", "abbreviation"]


def test_trec_without_a_coarse_label_map_names_both_orders(tmp_path, hub_root):
    write_trec_export(hub_root)
    store = open_store(trec_entry(tmp_path, coarse_map=False))
    assert one_line(lambda: store.list_shards("train"), DriftError) == (
        "trec/train: label-coarse names [ABBR, ENTY, DESC, HUM, LOC, NUM] != catalog "
        "[DESC, ENTY, ABBR, HUM, NUM, LOC]; declare a label map")


def test_cache_from_the_hub_tree_records_files_and_drift(tmp_path, hub_root, monkeypatch,
                                                         capsys):
    write_trec_export(hub_root)
    catalog = tmp_path / "trec_catalog.yaml"
    trec_entry(tmp_path)  # writes it
    monkeypatch.setenv(ENV_CATALOG, str(catalog))
    out = tmp_path / "cache"
    assert main(["cache", "--tasks", "trec_what_category_best_describe", "--output-dir",
                 str(out), "--vocab", str(SAMPLE_VOCAB), "--progress-every", "100"]) == 0, (
        capsys.readouterr())
    manifest = read_manifest(str(out / "trec_what_category_best_describe"))
    assert manifest.sources["train"]["drift"] == ["row order: the 2021 order"]
    assert list(manifest.sources["train"]["files"]) == ["default/train/0000.parquet"]
    assert manifest.splits["train"].examples == len(TREC_ROWS)


def test_transient_failures_are_retried_then_reported(tmp_path):
    request = httpx2.Request("GET", "https://huggingface.co/datasets/acme/toy")
    unavailable = HfHubHTTPError("503", response=httpx2.Response(503, request=request))
    missing = RepositoryNotFoundError("404", response=httpx2.Response(404, request=request))
    assert is_transient(ConnectionResetError()) and is_transient(unavailable)
    assert is_transient(httpx2.ConnectTimeout("slow", request=request))
    assert not is_transient(missing) and not is_transient(FileNotFoundError("x"))

    attempts: list[Exception] = []

    def failing(*errors: Exception):
        """An action failing with `errors` in turn, then succeeding."""
        pending = list(errors)

        def action() -> str:
            attempts.append(pending[0] if pending else None)
            if pending:
                raise pending.pop(0)
            return "rows"
        return action

    assert with_retries(failing(ConnectionResetError("reset"), unavailable), about="toy/train",
                        wait=0) == "rows"
    assert len(attempts) == 3
    attempts.clear()
    with pytest.raises(RepositoryNotFoundError):
        with_retries(failing(missing), about="toy/train", wait=0)
    assert len(attempts) == 1  # not retried
    attempts.clear()
    with pytest.raises(SourceError, match=r"^toy/train: reset \(failed 4 times\)$"):
        with_retries(failing(*[ConnectionResetError("reset")] * 4), about="toy/train", wait=0)
    assert len(attempts) == 4


GOOD_HUB = {"repo": "acme/toy", "revision": EXPORT,
            "files": {"train": "default/train/*.parquet"}}


@pytest.mark.parametrize(("hub", "expected"), [
    ({**GOOD_HUB, "files": {"train": "a/*.parquet", "dev": "b/*.parquet"}},
     "hub.files.dev: 'dev' is not one of the entry's splits (train)"),
    ({**GOOD_HUB, "files": {}}, "hub.files: no files for split 'train'"),
    ({"repo": "acme/toy", "files": GOOD_HUB["files"]}, "hub: missing 'revision'"),
    ({**GOOD_HUB, "repo": "toy"}, "hub.repo: expected owner/name on the Hub, or null when the "
                                  "Hub has no usable copy, got 'toy'"),
    ({"repo": None, "files": GOOD_HUB["files"]}, "hub.files: files need a repo"),
    ({**GOOD_HUB, "labels": {"label": {"No": "nope"}}},
     "hub.labels.label.No: 'nope' is not one of the class names of 'label'"),
    ({**GOOD_HUB, "labels": {"idx": {"0": "zero"}}}, "hub.labels.idx: 'idx' is not a "
                                                     "class_label feature"),
    ({**GOOD_HUB, "drift": ["two\nlines"]}, "hub.drift[0]: expected one line of text, "
                                            "got 'two\\nlines'"),
    ({**GOOD_HUB, "config": "default"}, "hub: unknown field 'config' (known: repo, revision, "
                                        "files, columns, labels, drift, notes)"),
], ids=["split", "no-files", "revision", "repo", "files-without-repo", "label-name",
        "label-column", "drift-line", "config"])
def test_a_bad_hub_block_is_one_line_naming_the_field(tmp_path, hub, expected):
    path = tmp_path / "catalog.yaml"
    path.write_text(yaml.safe_dump([{"dataset": "toy", "splits": {"train": 5},
                                     "features": TOY_FEATURES, "hub": hub}]))
    with pytest.raises(CatalogError) as info:
        read_catalog_file(path)
    assert str(info.value) == f"{path}: entry 1 (toy): {expected}"


def test_a_hub_block_reads_as_declared(tmp_path):
    entry = catalog_entry(tmp_path, {**GOOD_HUB, "files": {"train": ["a/*.parquet", "b/*"]},
                                     "labels": {"label": {"No": "no", "Yes": "yes"}},
                                     "drift": ["row order differs  "]})
    assert entry.hub == HubLocation(
        repo="acme/toy", revision=EXPORT, files={"train": ("a/*.parquet", "b/*")},
        labels={"label": {"No": "no", "Yes": "yes"}}, drift=("row order differs",))
    assert catalog_entry(tmp_path, GOOD_HUB).hub.files == {"train": ("default/train/*.parquet",)}
