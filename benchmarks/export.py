"""Throughput of `p3data export`: examples/s and MB/s written, as parquet and as JSON lines.

The cache: the 13 training tasks of app_reviews, dbpedia_14 and web_questions over generated
train splits (~100k examples with the default 7,700 rows per dataset), built once with
`p3data cache`. Each format is exported into a fresh folder in this process, reading through
`p3data.read`; peak memory is the process' resident size while exporting.

    .venv/bin/python benchmarks/export.py [--rows 7700] [--examples-per-shard 500000]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import DATASETS, PeakMemory, t0_tasks, write_mirror

from p3data.export.exported import DEFAULT_EXAMPLES_PER_SHARD, ExportSettings
from p3data.export.folder import export_tasks
from p3data.export.formats import EXPORT_FORMATS
from p3data.read import open_cache
from p3data.vocab import SAMPLE_VOCAB

TASKS = "(app_reviews|dbpedia_14|web_questions)_(?!.*_score_eval$).*"  # no twins


def build_cache(work: Path, rows: int) -> Path:
    """The benchmark's cache (kept between runs: building it is not what is measured)."""
    mirror, cache = work / f"mirror-{rows}", work / f"export-cache-{rows}"
    write_mirror(mirror, DATASETS, rows)
    if not (cache / "web_questions_whats_the_answer" / "COMPLETED").exists():
        shutil.rmtree(cache, ignore_errors=True)
        subprocess.run([str(Path(sys.executable).with_name("p3data")), "cache", "--data-dir",
                        str(mirror), "--vocab", str(SAMPLE_VOCAB), "--tasks", t0_tasks(TASKS),
                        "--splits", "train", "--output-dir", str(cache),
                        "--direct_num_workers=2", "--direct_running_mode=multi_processing"],
                       check=True, capture_output=True)
    return cache


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=7_700, help="source rows per dataset")
    parser.add_argument("--examples-per-shard", type=int,
                        default=DEFAULT_EXAMPLES_PER_SHARD)
    parser.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "p3data-bench"))
    args = parser.parse_args()
    cache = open_cache(str(build_cache(Path(args.work), args.rows)))
    tasks = cache.tasks
    examples = sum(len(cache.split(t, s)) for t in tasks for s in cache.splits(t))
    source = sum(os.path.getsize(p) for t in tasks for s in cache.splits(t)
                 for p in cache.split(t, s).shards)
    print(f"cache: {len(tasks)} tasks, {examples:,} examples, {source / 1e6:.1f} MB of "
          "TFRecords")
    start = time.perf_counter()
    for task in tasks:
        for split in cache.splits(task):
            for _ in cache.split(task, split).examples():
                pass
    seconds = time.perf_counter() - start
    print(f"{'read':8} {examples / seconds:9,.0f} examples/s  (p3data.read alone, for "
          "comparison)")
    for kind in EXPORT_FORMATS:
        out = Path(args.work) / f"export-{kind}"
        shutil.rmtree(out, ignore_errors=True)
        settings = ExportSettings(kind, examples_per_shard=args.examples_per_shard)
        with PeakMemory(os.getpid()) as memory:
            start = time.perf_counter()
            outcomes = export_tasks(open_cache(str(cache.root)), tasks, str(out),
                                    settings=settings)
            seconds = time.perf_counter() - start
        assert all(o.status == "exported" for o in outcomes), outcomes
        written = sum(p.stat().st_size for p in out.rglob(f"*.{kind}"))
        print(f"{kind:8} {examples / seconds:9,.0f} examples/s  {written / 1e6 / seconds:6.1f} "
              f"MB/s written ({written / 1e6:.1f} MB in {seconds:.1f} s)  peak RSS "
              f"{memory.peak / 2**20:,.0f} MiB")
        start = time.perf_counter()
        export_tasks(open_cache(str(cache.root)), tasks, str(out), settings=settings)
        print(f"{'':8} rerun (nothing to do): {time.perf_counter() - start:.2f} s")


if __name__ == "__main__":
    main()
