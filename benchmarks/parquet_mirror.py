"""`p3data cache` from a parquet mirror, and the cost of reading parquet by row groups.

The 13 training tasks of app_reviews, dbpedia_14 and web_questions over generated train splits
of ROWS rows each, written as parquet (row groups of 10,000 rows): wall time, examples/s and
peak memory of the process tree with 1 and 2 DirectRunner workers. Then reading alone: one
dataset's split at a quarter of ROWS and at ROWS (time per row should not grow: reading is
linear), and its first and last shards (equal times: no shard rescans the file from its start).

    .venv/bin/python benchmarks/parquet_mirror.py [--rows 1000000] [--workers 1 2]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from cache_vs_stock import TASKS, count_examples, measure
from common import DATASETS, t0_tasks

from p3data.dataset_key import DatasetKey
from p3data.datasets.catalog import Catalog
from p3data.datasets.samples import generate_rows
from p3data.datasets.shards import ROWS_PER_SHARD
from p3data.datasets.stores import MirrorStore
from p3data.vocab import SAMPLE_VOCAB

GROUP_ROWS = 10_000
READ_DATASET = DatasetKey("dbpedia_14")


def write_parquet_mirror(root: Path, datasets: list[DatasetKey], rows: int) -> None:
    """`rows` generated train rows per dataset, as `<root>/<dataset>/train.parquet`."""
    catalog = Catalog.load()
    for key in datasets:
        path = Path(key.folder(root)) / "train.parquet"
        if path.exists() and pq.read_metadata(path).num_rows == rows:
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        generated = generate_rows(catalog[key], "train", rows)
        writer = None
        for start in range(0, rows, GROUP_ROWS):
            batch = [next(generated) for _ in range(min(GROUP_ROWS, rows - start))]
            table = pa.Table.from_pylist(batch, schema=writer.schema if writer else None)
            writer = writer or pq.ParquetWriter(path, table.schema)
            writer.write_table(table, row_group_size=GROUP_ROWS)
        if writer:
            writer.close()


def read_seconds(store: MirrorStore, shards: list) -> tuple[float, int]:
    """(seconds, rows) to read `shards` into rows, as a worker does."""
    start = time.perf_counter()
    count = sum(1 for shard in shards for _ in store.read("train", shard))
    return time.perf_counter() - start, count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "p3data-bench"))
    args = parser.parse_args()
    mirror = Path(args.work) / f"parquet-mirror-{args.rows}"
    write_parquet_mirror(mirror, DATASETS, args.rows)

    for workers in args.workers:
        out = Path(args.work) / f"parquet-cache-{workers}"
        shutil.rmtree(out, ignore_errors=True)
        runner = ["--direct_num_workers=2", "--direct_running_mode=multi_processing"] \
            if workers == 2 else []
        wall, _, peak = measure([
            str(Path(sys.executable).with_name("p3data")), "cache", "--data-dir", str(mirror),
            "--vocab", str(SAMPLE_VOCAB), "--tasks", t0_tasks(TASKS), "--splits", "train",
            "--output-dir", str(out), *runner], dict(os.environ))
        examples = count_examples(out)
        shutil.rmtree(out)  # a million-row cache is gigabytes
        print(f"{workers} worker(s): {examples:,} examples from {3 * args.rows:,} rows in "
              f"{wall:.1f} s, {examples / wall:,.0f} examples/s, peak {peak / 2**20:,.0f} MiB")

    entry = Catalog.load()[READ_DATASET]
    for rows in (args.rows // 4, args.rows):
        root = Path(args.work) / f"parquet-mirror-{rows}"
        write_parquet_mirror(root, [READ_DATASET], rows)
        store = MirrorStore(root, entry, ROWS_PER_SHARD)
        shards = store.list_shards("train")
        seconds, count = read_seconds(store, shards)
        first, _ = read_seconds(store, shards[:1])
        last, _ = read_seconds(store, shards[-1:])
        print(f"read {READ_DATASET} {count:>9,} rows: {seconds:6.2f} s, "
              f"{seconds / count * 1e6:5.2f} µs/row; first shard {first:.3f} s, "
              f"last shard {last:.3f} s")


if __name__ == "__main__":
    main()
