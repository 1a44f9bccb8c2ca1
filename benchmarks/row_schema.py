"""Row-schema checking throughput: `RowChecker.problems` on every bundled sample row.

The cache builder checks every source row, so this must stay far above the rendering rate.
Prints rows per second for flat rows (scalar and class-label fields only), rows with lists or
structs, and all rows, plus the time to compile the checkers. Target: well above 100k rows/s
for flat rows.

    .venv/bin/python benchmarks/row_schema.py [--seconds 1.0]
"""

from __future__ import annotations

import argparse
import time

from p3data.datasets.catalog import Catalog
from p3data.datasets.samples import sample_rows, sample_splits
from p3data.datasets.schema import RowChecker


def is_flat(features: dict) -> bool:
    return all(isinstance(kind, str) or "class_label" in kind for kind in features.values())


def rate(work: list[tuple[RowChecker, dict]], seconds: float) -> float:
    """Rows per second, repeating the whole list for at least `seconds`."""
    rounds, start = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - start) < seconds or not rounds:
        for checker, row in work:
            checker.problems(row)
        rounds += 1
    return rounds * len(work) / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=1.0, help="time per measurement")
    args = parser.parse_args()

    entries = list(Catalog.load())
    start = time.perf_counter()
    checkers = {entry.key: RowChecker(entry.features) for entry in entries}
    compile_ms = (time.perf_counter() - start) * 1000 / len(entries)

    flat, nested = [], []
    for entry in entries:
        group = flat if is_flat(entry.features) else nested
        for split in sample_splits(entry.key):
            group += [(checkers[entry.key], row) for row in sample_rows(entry.key, split)]
    problems = sum(len(checker.problems(row)) for checker, row in flat + nested)

    print(f"compile: {compile_ms:.3f} ms per features spec ({len(entries)} specs)")
    for label, work in (("flat rows", flat), ("nested rows", nested), ("all rows", flat + nested)):
        print(f"{label + ':':13} {rate(work, args.seconds):>11,.0f} rows/s ({len(work)} rows)")
    print(f"problems found: {problems} (expected 0: the samples are schema-true)")


if __name__ == "__main__":
    main()
