"""An offline Hub tree (`P3DATA_HUB_ROOT`: `<root>/<owner>/<name>/<revision>/<path in repo>`)
written with pyarrow, its parquet files carrying `huggingface` schema metadata shaped as
`datasets` writes it, and catalog entries that point at it (as users' catalog files)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from types import SimpleNamespace

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from p3data.cli import main
from p3data.dataset_key import DatasetKey
from p3data.datasets.catalog import ENV_CATALOG, Catalog, DatasetEntry, read_catalog_file
from p3data.datasets.hub import ENV_HUB_ROOT
from p3data.datasets.rows import read_jsonl
from p3data.datasets.samples import SAMPLES_DIR
from p3data.datasets.stores import ENV_DATA_DIR

EXPORT = "refs/convert/parquet"
TOY_FEATURES = {"sentence": "string", "idx": "int32", "label": {"class_label": ["no", "yes"]}}


def value(dtype: str) -> dict:
    return {"dtype": dtype, "_type": "Value"}


def class_label(names: list[str]) -> dict:
    return {"names": names, "_type": "ClassLabel"}


TOY_HUB_FEATURES = {"sentence": value("string"), "idx": value("int32"),
                    "label": class_label(["no", "yes"])}


def write_parquet(path: Path, columns: dict[str, pa.Array | list],
                  features: dict | None = None, **options) -> None:
    """A parquet file as `datasets` writes one: its features as `huggingface` metadata."""
    table = pa.table(columns)
    if features is not None:
        table = table.replace_schema_metadata(
            {"huggingface": json.dumps({"info": {"features": features}})})
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path, **options)


def toy_columns(first: int, count: int, *, tag: str = "s") -> dict[str, pa.Array]:
    numbers = range(first, first + count)
    return {"sentence": [f"{tag}{i}" for i in numbers],
            "idx": pa.array(numbers, pa.int32()),
            "label": pa.array([i % 2 for i in numbers], pa.int64()),
            "extra": ["not in the catalog"] * count}


def catalog_path(tmp_path: Path, dataset: str, subset: str | None = None) -> Path:
    """Where `catalog_entry` writes the catalog file of one dataset."""
    return tmp_path / f"{DatasetKey(dataset, subset).name.replace('/', '_')}_catalog.yaml"


def catalog_entry(tmp_path: Path, hub: dict, *, dataset: str = "toy", subset: str | None = None,
                  splits: dict[str, int] | None = None,
                  features: dict | None = None) -> DatasetEntry:
    """The entry as a user's catalog file declares it (validated like any user catalog)."""
    path = catalog_path(tmp_path, dataset, subset)
    item = {"dataset": dataset, **({"subset": subset} if subset else {}),
            "splits": splits or {"train": 5}, "features": features or TOY_FEATURES, "hub": hub}
    path.write_text(yaml.safe_dump([item]))
    (entry,) = read_catalog_file(path)
    return entry


# TREC since datasets PR #4801 (Aug 2022): renamed columns, coarse classes reordered, fine
# classes spelt "COARSE:fine" (50 of them where the 2021 script had 47 names).
TREC_COARSE_TODAY = ["ABBR", "ENTY", "DESC", "HUM", "LOC", "NUM"]
TREC_FINE_TODAY = [
    "ABBR:abb", "ABBR:exp", "ENTY:animal", "ENTY:body", "ENTY:color", "ENTY:cremat",
    "ENTY:currency", "ENTY:dismed", "ENTY:event", "ENTY:food", "ENTY:instru", "ENTY:lang",
    "ENTY:letter", "ENTY:other", "ENTY:plant", "ENTY:product", "ENTY:religion", "ENTY:sport",
    "ENTY:substance", "ENTY:symbol", "ENTY:techmeth", "ENTY:termeq", "ENTY:veh", "ENTY:word",
    "DESC:def", "DESC:desc", "DESC:manner", "DESC:reason", "HUM:gr", "HUM:ind", "HUM:title",
    "HUM:desc", "LOC:city", "LOC:country", "LOC:mount", "LOC:other", "LOC:state", "NUM:code",
    "NUM:count", "NUM:date", "NUM:dist", "NUM:money", "NUM:ord", "NUM:other", "NUM:period",
    "NUM:perc", "NUM:speed", "NUM:temp", "NUM:volsize", "NUM:weight"]
TREC_ROWS = [  # (text, coarse, fine) as today's export names them
    ("What does NASA stand for ?", "ABBR", "ABBR:exp"),
    ("What is the abbreviation for Texas ?", "ABBR", "ABBR:abb"),
    ("Where is the Eiffel Tower ?", "LOC", "LOC:other"),
    ("How many moons does Mars have ?", "NUM", "NUM:count"),
    ("Who wrote Hamlet ?", "HUM", "HUM:ind"),
    ("What is a tsunami ?", "DESC", "DESC:def"),
]


def write_trec_export(hub_root: Path) -> None:
    features = {"text": value("string"), "coarse_label": class_label(TREC_COARSE_TODAY),
                "fine_label": class_label(TREC_FINE_TODAY)}
    for split, rows in (("train", TREC_ROWS), ("test", TREC_ROWS[:2])):
        coarse = [TREC_COARSE_TODAY.index(c) for _, c, _ in rows]
        if split == "test":
            coarse[1] = -1  # a hidden label, as other datasets' test splits have
        write_parquet(hub_root / "CogComp" / "trec" / EXPORT / "default" / split / "0000.parquet",
                      {"text": [text for text, _, _ in rows], "coarse_label": coarse,
                       "fine_label": [TREC_FINE_TODAY.index(f) for _, _, f in rows]}, features)


def trec_hub(*, coarse_map: bool = True) -> dict:
    labels = {"label-fine": {name: name.split(":")[1] for name in TREC_FINE_TODAY}}
    if coarse_map:
        labels["label-coarse"] = {name: name for name in TREC_COARSE_TODAY}
    return {"repo": "CogComp/trec", "revision": EXPORT,
            "files": {"train": "default/train/*.parquet", "test": "default/test/*.parquet"},
            "columns": {"coarse_label": "label-coarse", "fine_label": "label-fine"},
            "labels": labels, "drift": ["row order: the 2021 order"]}


def trec_entry(tmp_path: Path, **hub_options) -> DatasetEntry:
    """T0's trec entry (its 2021 features) over the offline export."""
    shipped = Catalog.load().get("trec")
    return catalog_entry(tmp_path, trec_hub(**hub_options), dataset="trec",
                         splits={"train": len(TREC_ROWS), "test": 2}, features=shipped.features)


COPA_COMMIT = "3de24cf8022e94f4ee4b9d55a6f539891524d646"  # as the shipped catalog pins it
COPA_FEATURES = {"premise": value("string"), "choice1": value("string"),
                 "choice2": value("string"), "question": value("string"),
                 "idx": value("int32"), "label": class_label(["choice1", "choice2"])}


def copa_rows(split: str) -> list[dict]:
    return read_jsonl(SAMPLES_DIR / "super_glue" / "copa" / f"{split}.jsonl")


def write_copa_export(hub_root: Path) -> None:
    """COPA's sample rows where the shipped catalog pins them: a commit of aps/super_glue,
    in row groups of 4 rows."""
    for split in ("train", "validation", "test"):
        rows = copa_rows(split)
        columns = {name: [row[name] for row in rows] for name in COPA_FEATURES}
        columns["idx"] = pa.array(columns["idx"], pa.int32())
        write_parquet(hub_root / "aps" / "super_glue" / COPA_COMMIT / "copa"
                      / f"{split}-00000-of-00001.parquet", columns, COPA_FEATURES,
                      row_group_size=4)


def offline_hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> SimpleNamespace:
    """An offline Hub holding trec's export and COPA's pinned files, and a catalog pointing
    at them (the shipped entries, sized to these rows): `configure` rewrites trec's entry."""
    root = tmp_path / "hub"
    write_trec_export(root)
    write_copa_export(root)
    shipped = Catalog.load().get("super_glue", "copa")
    copa = catalog_entry(tmp_path, {"repo": shipped.hub.repo, "revision": shipped.hub.revision,
                                    "files": {s: list(g) for s, g in shipped.hub.files.items()}},
                         dataset="super_glue", subset="copa", features=shipped.features,
                         splits={s: len(copa_rows(s)) for s in shipped.splits})

    def configure(**trec_hub_options) -> DatasetEntry:
        return trec_entry(tmp_path, **trec_hub_options)

    trec = configure()
    monkeypatch.setenv(ENV_CATALOG, os.pathsep.join(
        str(catalog_path(tmp_path, *key)) for key in (("trec",), ("super_glue", "copa"))))
    monkeypatch.delenv(ENV_DATA_DIR, raising=False)
    monkeypatch.delenv(ENV_HUB_ROOT, raising=False)
    return SimpleNamespace(root=str(root), trec=trec, copa=copa, configure=configure)


def read_all(store, split: str) -> list[dict]:
    """Every row a store serves for a split, shard by shard."""
    return [row for shard in store.list_shards(split) for row in store.read(split, shard)]


def fetch(capsys, *args: str) -> tuple[int, list[str]]:
    """`p3data fetch ARGS`: the exit code and the lines printed."""
    code = main(["fetch", *args])
    return code, capsys.readouterr().out.splitlines()


def status_of(lines: list[str], dataset: str) -> str:
    """A dataset's status in the summary table (its last column)."""
    (line,) = [line for line in lines if line.split(" ", 1)[0] == dataset]
    return line.split("  ")[-1].strip()
