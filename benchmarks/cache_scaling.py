"""Wall time of `p3data cache` with 1 and with 2 DirectRunner worker processes.

The 13 training tasks of app_reviews, dbpedia_14 and web_questions over generated train splits,
cut into 5,000-row units of work.

    .venv/bin/python benchmarks/cache_scaling.py [--rows 20000]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

from cache_vs_stock import TASKS, count_examples, measure
from common import DATASETS, t0_tasks, write_mirror

from p3data.vocab import SAMPLE_VOCAB


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "p3data-bench"))
    args = parser.parse_args()
    mirror = Path(args.work) / f"mirror-{args.rows}"
    write_mirror(mirror, DATASETS, args.rows)
    walls = {}
    for workers in (1, 2):
        out = Path(args.work) / f"scaling-{workers}"
        shutil.rmtree(out, ignore_errors=True)
        runner = ["--direct_num_workers=2", "--direct_running_mode=multi_processing"] \
            if workers == 2 else []
        walls[workers], _, _ = measure([
            str(Path(sys.executable).with_name("p3data")), "cache", "--data-dir", str(mirror),
            "--vocab", str(SAMPLE_VOCAB), "--tasks", t0_tasks(TASKS), "--splits", "train",
            "--rows-per-shard", "5000", "--output-dir", str(out), *runner], dict(os.environ))
        print(f"{workers} worker(s): {count_examples(out):,} examples in {walls[workers]:.1f} s")
    print(f"speed-up with 2 workers: {walls[1] / walls[2]:.2f}x")


if __name__ == "__main__":
    main()
