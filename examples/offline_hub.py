"""Write an offline copy of the Hub for a few catalog datasets, at the files their catalog
entries pin, with today's column and label names: a tree for `--hub-root` / `P3DATA_HUB_ROOT`.

    python examples/offline_hub.py /tmp/hub super_glue/copa trec

The rows are p3data's generated sample rows (as many as the catalog's split sizes), written
back into the Hub's spelling: columns renamed to the Hub's names, class ids to the Hub's label
order, parquet files carrying `datasets`' `huggingface` metadata. It is how docs/data.md's
`fetch` output was made, and a template for an organisation's own internal copy.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from p3data.dataset_key import DatasetKey
from p3data.datasets.catalog import Catalog, DatasetEntry
from p3data.datasets.samples import generate_rows


def hub_names(entry: DatasetEntry, column: str) -> list[str]:
    """The Hub's label names of a 2021 class-label column: a declared label map's keys (the
    catalog lists them in the Hub's order), else the 2021 names."""
    declared = entry.hub.labels.get(column)
    return list(declared) if declared else entry.features[column]["class_label"]


def hub_feature(entry: DatasetEntry, column: str) -> dict[str, Any]:
    kind = entry.features[column]
    if isinstance(kind, dict) and "class_label" in kind:
        return {"names": hub_names(entry, column), "_type": "ClassLabel"}
    if isinstance(kind, str):
        return {"dtype": kind, "_type": "Value"}
    raise SystemExit(f"{entry.name}: only flat features are written here ({column}: {kind})")


def hub_split(entry: DatasetEntry, split: str) -> tuple[pa.Table, dict]:
    """One split's generated rows in the Hub's spelling, and its `datasets` features."""
    to_hub = {old: new for new, old in entry.hub.columns.items()}
    rows = list(generate_rows(entry, split, entry.splits[split]))
    columns: dict[str, list] = {}
    for column, kind in entry.features.items():
        values = [row[column] for row in rows]
        if isinstance(kind, dict) and "class_label" in kind:
            old_names, declared = kind["class_label"], entry.hub.labels.get(column, {})
            to_new = {old_names.index(declared.get(name, name)): new_id
                      for new_id, name in enumerate(hub_names(entry, column))}
            values = [to_new[v] if v >= 0 else v for v in values]
        columns[to_hub.get(column, column)] = values
    features = {to_hub.get(c, c): hub_feature(entry, c) for c in entry.features}
    return pa.table(columns), features


def write_dataset(root: Path, entry: DatasetEntry) -> list[Path]:
    written = []
    for split, globs in entry.hub.files.items():
        glob = globs[0]
        path = root / entry.hub.repo / entry.hub.revision / glob.replace("*", "0000")
        table, features = hub_split(entry, split)
        table = table.replace_schema_metadata(
            {"huggingface": json.dumps({"info": {"features": features}})})
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(table, path, row_group_size=10_000)
        written.append(path)
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("root", type=Path, help="the Hub root to write")
    parser.add_argument("datasets", nargs="+", metavar="DATASET[/SUBSET]")
    args = parser.parse_args()
    catalog = Catalog.load()
    for name in args.datasets:
        entry = catalog[DatasetKey.parse(name)]
        for path in write_dataset(args.root, entry):
            print(path)


if __name__ == "__main__":
    main()
