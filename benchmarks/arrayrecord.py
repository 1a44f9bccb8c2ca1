"""ArrayRecord shards against TFRecord shards: the build's CPU, and reading.

Builds the long- and short-text sets (`long_text.py`'s and `cache_vs_stock.py`'s T0-style
tasks, generated rows, one DirectRunner worker) with `--shard-format tfrecord` and
`arrayrecord`, and prints each build's CPU-seconds and their ratio (target: ArrayRecord at
most 1.1x TFRecord). Then, on each set's largest task split: random access on a shuffled
index, per second: serialized records through grain's `ArrayRecordDataSource` against decoded
examples through `p3data.read`'s indexed TFRecord access (and its ArrayRecord access), and
sequential reading of each (target: grain's random access at least p3data.read's). Last,
`p3data export --format arrayrecord` of the TFRecord cache: its CPU against the ArrayRecord
build's, and whether it wrote the same files.

    .venv/bin/python benchmarks/arrayrecord.py [--rows 20000] [--short-rows 20000]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import tempfile
import time
from pathlib import Path

import grain.python as grain
from cache_vs_stock import BIN, SHORT, measure, ours_build, zero_shot
from common import write_mirror
from long_text import LONG

from p3data.read import open_cache


def largest_split(cache: Path) -> str:
    """The task with the most training examples."""
    counts = {path.parent.name: json.loads(path.read_text())["examples"]
              for path in cache.glob("*/stats.train.json")}
    return max(counts, key=counts.get)


def rate(label: str, read, count: int) -> float:
    start = time.perf_counter()
    read()
    per_second = count / (time.perf_counter() - start)
    print(f"  {label:58} {per_second:12,.0f} /s")
    return per_second


def reading(caches: dict[str, Path]) -> None:
    task = largest_split(caches["tfrecord"])
    shards = sorted(str(path) for path in (caches["arrayrecord"] / task).glob(
        "train.array_record-*"))
    source = grain.ArrayRecordDataSource(shards)
    split = open_cache(str(caches["tfrecord"])).split(task, "train")
    ours_ar = open_cache(str(caches["arrayrecord"])).split(task, "train")
    order = list(range(len(source)))
    random.Random(0).shuffle(order)
    print(f"  {task}: {len(source):,} examples")
    grain_random = rate("random, grain ArrayRecordDataSource (records)",
                        lambda: [source[i] for i in order], len(order))
    tfrecord_random = rate("random, p3data.read TFRecord + index (decoded examples)",
                           lambda: [split[i] for i in order], len(order))
    rate("random, p3data.read ArrayRecord (decoded examples)",
         lambda: [ours_ar[i] for i in order], len(order))
    rate("sequential, grain ArrayRecordDataSource (records)",
         lambda: [source[i] for i in range(len(source))], len(order))
    rate("sequential, p3data.read TFRecord (decoded examples)", lambda: list(split), len(order))
    rate("sequential, p3data.read ArrayRecord (decoded examples)", lambda: list(ours_ar),
         len(order))
    print(f"  grain random / p3data.read indexed TFRecord random: "
          f"{grain_random / tfrecord_random:.2f}x (target: at least 1x)")


def conversion(caches: dict[str, Path], work: Path, build_cpu: float) -> None:
    """The TFRecord cache converted to ArrayRecord shards, against building them."""
    out = work / "cache-converted"
    shutil.rmtree(out, ignore_errors=True)
    wall, cpu, _ = measure([str(BIN / "p3data"), "export", str(caches["tfrecord"]), "--out",
                            str(out), "--format", "arrayrecord"], dict(os.environ))
    files = {path.relative_to(out): path.read_bytes() for path in out.rglob("*")
             if path.is_file()}
    built = {path.relative_to(caches["arrayrecord"]): path.read_bytes()
             for path in caches["arrayrecord"].rglob("*") if path.is_file()}
    print(f"  export --format arrayrecord of the TFRecord cache: {wall:.1f} s wall, {cpu:.1f} "
          f"CPU-s, {cpu / build_cpu:.2f}x the ArrayRecord build's CPU; the build's files, "
          f"byte for byte: {files == built}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=20_000, help="rows per long-text dataset")
    parser.add_argument("--short-rows", type=int, default=20_000, help="rows per short dataset")
    parser.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "p3data-bench"))
    args = parser.parse_args()
    work = Path(args.work)
    for bench, rows in ((LONG, args.rows), (SHORT, args.short_rows)):
        mirror = work / f"mirror-{bench.name.replace(' ', '-')}-{rows}"
        write_mirror(mirror, bench.datasets, rows)
        print(f"== {bench.name}: {rows:,} rows of {', '.join(map(str, bench.datasets))}")
        caches, cpu = {}, {}
        for shard_format in ("tfrecord", "arrayrecord"):
            caches[shard_format] = work / f"cache-{shard_format}"
            print(f"  --shard-format {shard_format}: ", end="")
            _, cpu[shard_format] = ours_build(zero_shot(bench), mirror, work,
                                              options=("--shard-format", shard_format),
                                              out=caches[shard_format])
        print(f"  build CPU, ArrayRecord / TFRecord: {cpu['arrayrecord'] / cpu['tfrecord']:.2f}x "
              "(target: at most 1.1x)")
        reading(caches)
        conversion(caches, work, cpu["arrayrecord"])


if __name__ == "__main__":
    main()
