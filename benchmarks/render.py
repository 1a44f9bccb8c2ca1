"""Rendering throughput: p3data's compiled, batched renderer against promptsource's `apply`.

Both run single-threaded on the same templates and the same generated rows (T0's per-row work:
removeHyphen, `Template.apply`, `get_answer_choices_list`). Prints (row, template) pairs per
second per dataset and overall. promptsource is slow, so it renders a prefix of the rows.

    .venv/bin/python benchmarks/render.py [--rows 4000] [--reference-rows 150] [DATASET ...]
"""

from __future__ import annotations

import argparse
import time

from p3data.dataset_key import DatasetKey
from p3data.datasets.catalog import Catalog
from p3data.datasets.samples import generate_rows, sample_splits
from p3data.templates import TemplateCollection
from p3data.templates.render import DatasetRenderer


def promptsource_rate(key: DatasetKey, rows: list[dict]) -> float:
    from promptsource.templates import DatasetTemplates
    from promptsource.utils import removeHyphen

    templates = DatasetTemplates(key.dataset, key.subset)
    start, pairs = time.perf_counter(), 0
    for name in templates.all_template_names:
        template = templates[name]
        for row in rows:
            example = removeHyphen(row)
            try:
                template.apply(example)
                template.get_answer_choices_list(example)
            except Exception:  # noqa: BLE001, S110 - T0 would crash; the time still counts
                pass
            pairs += 1
    return pairs / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("datasets", nargs="*", help="DATASET[/SUBSET]; default: all of T0's")
    parser.add_argument("--rows", type=int, default=4000)
    parser.add_argument("--reference-rows", type=int, default=150)
    args = parser.parse_args()
    catalog, collection = Catalog.load(), TemplateCollection.default()
    keys = [DatasetKey.parse(k) for k in args.datasets] or [
        e.key for e in catalog if e.key in collection]
    print(f"{'dataset':32} {'tmpl':>4} {'promptsource/s':>15} {'p3data/s':>10} "
          f"{'compile s':>9} {'ratio':>7}")
    totals = {"ps_pairs": 0.0, "ps_time": 0.0, "our_pairs": 0.0, "our_time": 0.0}
    for key in keys:
        entry = catalog[key]
        split = "train" if "train" in sample_splits(key) else sample_splits(key)[0]
        rows = list(generate_rows(entry, split, args.rows))
        templates = list(collection[key])
        ps = promptsource_rate(key, rows[: args.reference_rows])
        start = time.perf_counter()
        renderer = DatasetRenderer(templates)
        compile_time = time.perf_counter() - start
        start = time.perf_counter()
        renderer.render_batch(rows)
        ours = len(rows) * len(templates) / (time.perf_counter() - start)
        pairs = len(rows) * len(templates)
        totals["ps_pairs"] += pairs
        totals["ps_time"] += pairs / ps
        totals["our_pairs"] += pairs
        totals["our_time"] += pairs / ours + compile_time
        print(f"{entry.name:32} {len(templates):4d} {ps:15,.0f} {ours:10,.0f} "
              f"{compile_time:9.2f} {ours / ps:7.1f}x")
    ps_all = totals["ps_pairs"] / totals["ps_time"]
    our_all = totals["our_pairs"] / totals["our_time"]
    print(f"{'overall (p3data incl. compile)':32} {'':4} {ps_all:15,.0f} {our_all:10,.0f} "
          f"{'':9} {our_all / ps_all:7.1f}x")


if __name__ == "__main__":
    main()
