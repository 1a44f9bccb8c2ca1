"""Reading a cache: `p3data.read` (no TensorFlow) against `tf.data.TFRecordDataset` +
`tf.io.parse_example` on the same shards, in examples/s and MB/s of shard bytes.

The cache is one T0 task over --rows generated rows of its dataset (built once with
`p3data cache` and kept in --work). Measured, one after another in this process:
p3data.read in order (1 and 2 reading threads; all features; the token ids only), by number
(random access through the record index, one at a time and a batch at a time), then
TensorFlow: batched `parse_example` (its fastest path, padded batches) and per-record
`parse_single_example` as seqio reads a cache. All figures are one process.

    .venv/bin/python benchmarks/reader.py [--rows 100000] [--task NAME] [--work DIR]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from common import write_mirror

from p3data.dataset_key import DatasetKey
from p3data.read import open_cache
from p3data.vocab import SAMPLE_VOCAB

BIN = Path(sys.executable).parent
RANDOM_READS = 20_000
RANDOM_BATCH = 256  # examples fetched at a time, as a DataLoader batch
TF_BATCH = 512


def build(work: Path, task: str, dataset: DatasetKey, rows: int) -> Path:
    cache = work / f"reader-cache-{rows}"
    if (cache / task / "COMPLETED").exists():
        return cache
    mirror = work / f"mirror-{dataset.name}-{rows}"
    write_mirror(mirror, [dataset], rows)
    subprocess.run([str(BIN / "p3data"), "cache", "--output-dir", str(cache), "--vocab",
                    str(SAMPLE_VOCAB), "--data-dir", str(mirror), "--tasks", task,
                    "--splits", "train", "--progress-every", "60"], check=True)
    return cache


def timed(label: str, count, examples: int, size: int) -> None:
    start = time.perf_counter()
    counted = count()
    seconds = time.perf_counter() - start
    assert counted == examples, (label, counted, examples)
    print(f"{label:<58} {examples / seconds:>10,.0f} examples/s {size / seconds / 1e6:>8,.1f} MB/s",
          flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--task", default="dbpedia_14_given_list_what_category_does_the_"
                                           "paragraph_belong_to")
    parser.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "p3data-bench"))
    args = parser.parse_args()
    cache_dir = build(Path(args.work), args.task, DatasetKey("dbpedia_14"), args.rows)
    split = open_cache(str(cache_dir)).split(args.task, "train")
    size = sum(os.path.getsize(shard) for shard in split.shards)
    examples = len(split)
    print(f"{args.task}/train: {examples:,} examples, {len(split.shards)} shards, "
          f"{size / 1e6:,.1f} MB; features {', '.join(split.features)}")

    def count(iterator) -> int:
        return sum(1 for _ in iterator)

    timed("p3data.read, in order, all features", lambda: count(split), examples, size)
    timed("p3data.read, in order, all features, 2 threads",
          lambda: count(split.examples(workers=2)), examples, size)
    timed("p3data.read, in order, inputs and targets",
          lambda: count(split.examples(["inputs", "targets"])), examples, size)
    numbers = np.random.default_rng(0).integers(0, examples, RANDOM_READS)
    reads = len(numbers)
    timed(f"p3data.read, by number ({reads:,} random), all features",
          lambda: count(split[int(i)] for i in numbers), reads, size * reads / examples)
    batches = [numbers[k:k + RANDOM_BATCH].tolist() for k in range(0, reads, RANDOM_BATCH)]
    timed(f"p3data.read, by number, {RANDOM_BATCH} at a time (__getitems__)",
          lambda: sum(len(split.__getitems__(batch)) for batch in batches), reads,
          size * reads / examples)

    import tensorflow as tf  # after p3data.read's figures: TensorFlow starts its own threads

    def parsing(dtype: str, shape: tuple):
        kind = tf.string if dtype == "string" else tf.float32 if dtype == "float32" else tf.int64
        if shape and shape[0] is None:
            return tf.io.FixedLenSequenceFeature(shape[1:], kind, allow_missing=True)
        return tf.io.FixedLenFeature(shape, kind)

    spec = {name: parsing(f.dtype, f.shape) for name, f in split.features.items()}
    files = tf.data.TFRecordDataset(split.shards)
    batched = files.batch(TF_BATCH).map(lambda pb: tf.io.parse_example(pb, spec),
                                        num_parallel_calls=tf.data.AUTOTUNE)
    per_record = files.map(lambda pb: tf.io.parse_single_example(pb, spec),
                           num_parallel_calls=tf.data.AUTOTUNE)
    timed(f"tf.data + parse_example, batches of {TF_BATCH}, as numpy",
          lambda: sum(len(b["inputs"]) for b in batched.as_numpy_iterator()), examples, size)
    timed("tf.data + parse_single_example (seqio's way), as numpy",
          lambda: count(per_record.as_numpy_iterator()), examples, size)


if __name__ == "__main__":
    main()
