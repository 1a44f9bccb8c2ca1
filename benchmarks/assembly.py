"""Stage 2 (assembly) of one big task split with 1 and with 2 DirectRunner worker processes.

One template of app_reviews over --rows generated train rows, cut into --rows-per-shard units
of work. Stage 1 runs once, in this process; each measured run starts from a copy of its parts,
finds them done and runs stage 2: deal the parts into pieces, write the output shards, info and
stats. Stage 2's wall seconds run from the last unit of stage 1 checked to the split assembled
(both markers' times); the whole run adds Beam's start-up and the task's completion.

    .venv/bin/python benchmarks/assembly.py [--rows 500000] [--task NAME] [--shards N]
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import tempfile
import time
from pathlib import Path

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions
from common import write_mirror

from p3data import fs
from p3data.builder.jobs import CacheConfig, CachePlan
from p3data.builder.planning import build_plan
from p3data.builder.shard_work import process_unit
from p3data.dataset_key import DatasetKey
from p3data.format import layout
from p3data.pipelines.cache import graph_runner
from p3data.taskset import load_definitions
from p3data.tokenize import Tokenizer
from p3data.vocab import SAMPLE_VOCAB

WORKERS = {1: [], 2: ["--direct_num_workers=2", "--direct_running_mode=multi_processing"]}


def run(plan: CachePlan, workers: int) -> float:
    """Run the whole graph; returns its wall seconds."""
    start = time.monotonic()
    graph_runner(beam.Pipeline(options=PipelineOptions(WORKERS[workers])))(plan)
    return time.monotonic() - start


def stage_1(plan: CachePlan) -> None:
    """Every unit's parts, one unit after another."""
    tokenizer = Tokenizer(plan.config.vocab_model, plan.config.extra_ids)
    for unit in plan.units:
        process_unit(plan.config, unit, tokenizer)


def stage_2_seconds(plan: CachePlan) -> float:
    work = plan.config.workdir
    return _last_written(work.assembled_markers) - _last_written(work.unit_markers)


def _last_written(pattern: str) -> float:
    return max(os.path.getmtime(path) for path in fs.glob(pattern))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=500_000)
    parser.add_argument("--task", default="app_reviews_convert_to_star_rating")
    parser.add_argument("--shards", type=int, default=None,
                        help="output shards (default: p3data's, one per 10k examples, max 64)")
    parser.add_argument("--rows-per-shard", type=int, default=50_000)
    parser.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "p3data-bench"))
    args = parser.parse_args()
    logging.getLogger("apache_beam").setLevel(logging.ERROR)
    mirror = Path(args.work) / f"mirror-{args.rows}"
    write_mirror(mirror, [DatasetKey("app_reviews")], args.rows)
    out = Path(args.work) / "assembly"
    shutil.rmtree(out, ignore_errors=True)
    config = CacheConfig(str(out), SAMPLE_VOCAB.read_bytes(), data_dir=str(mirror),
                         shards=args.shards, rows_per_shard=args.rows_per_shard)
    plan = build_plan(config, [load_definitions(["t0"]).task(args.task)], ["train"])
    start = time.monotonic()
    stage_1(plan)
    parts = Path(args.work) / "assembly-parts"
    shutil.rmtree(parts, ignore_errors=True)
    shutil.copytree(config.workdir.root, parts)
    print(f"stage 1, once: {time.monotonic() - start:.1f} s")
    seconds = {}
    for workers in WORKERS:
        shutil.rmtree(out)
        shutil.copytree(parts, config.workdir.root)
        total = run(plan, workers)
        seconds[workers] = stage_2_seconds(plan)
        print(f"{workers} worker(s): stage 2 {seconds[workers]:.2f} s; whole run {total:.1f} s")
    folder = Path(layout.task_dir(config.output_dir, args.task))
    examples = json.loads((folder / "stats.train.json").read_text())["examples"]
    shards = list(folder.glob("train.tfrecord-*"))
    size = sum(shard.stat().st_size for shard in shards)
    print(f"{args.task}: {examples:,} examples, {size / 1e6:,.0f} MB, {len(plan.units)} parts, "
          f"{len(shards)} output shards")
    print(f"stage 2 speed-up with 2 workers: {seconds[1] / seconds[2]:.2f}x")
    shutil.rmtree(out)
    shutil.rmtree(parts)


if __name__ == "__main__":
    main()
