"""An offline Hub tree (`P3DATA_HUB_ROOT`: `<root>/<owner>/<name>/<revision>/<path in repo>`)
written with pyarrow, its parquet files carrying `huggingface` schema metadata shaped as
`datasets` writes it, and catalog entries that point at it (as users' catalog files)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import yaml

from p3data.dataset_key import DatasetKey
from p3data.datasets.catalog import Catalog, DatasetEntry, read_catalog_file

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
