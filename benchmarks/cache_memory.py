"""Peak memory of `p3data cache` as rows grow: it should stay flat (rows stream through).

Two app_reviews tasks over generated train splits of 100k and 1M rows, one DirectRunner worker.

    .venv/bin/python benchmarks/cache_memory.py [--rows 100000 1000000]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

from cache_vs_stock import count_examples, measure
from common import write_mirror

from p3data.vocab import SAMPLE_VOCAB

TASKS = "app_reviews_convert_to_rating|app_reviews_generate_review"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "p3data-bench"))
    args = parser.parse_args()
    for rows in args.rows:
        mirror = Path(args.work) / f"memory-mirror-{rows}"
        write_mirror(mirror, [("app_reviews", None)], rows)
        out = Path(args.work) / "memory-cache"
        shutil.rmtree(out, ignore_errors=True)
        wall, cpu, peak = measure([str(Path(sys.executable).with_name("p3data")), "cache",
                                   "--data-dir", str(mirror), "--vocab", str(SAMPLE_VOCAB),
                                   "--tasks", TASKS, "--output-dir", str(out)], dict(os.environ))
        print(f"{rows:>9,} rows: {count_examples(out):>9,} examples, {wall:6.1f} s wall, "
              f"peak {peak / 2**20:,.0f} MiB")


if __name__ == "__main__":
    main()
