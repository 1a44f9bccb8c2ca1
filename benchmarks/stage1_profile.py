"""Where stage 1 of `p3data cache` spends its CPU: every source shard of a benchmark set
(generated rows) through `process_unit`, the code the Beam worker runs, timed, then again
under cProfile, summed up by activity (cProfile charges each Python call, so the Python-heavy
activities look somewhat bigger than they are), then the functions with the most own time.

    .venv/bin/python benchmarks/stage1_profile.py [--set long|short] [--rows 3000] [--top 25]
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import shutil
import tempfile
import time
from pathlib import Path

from cache_vs_stock import SHORT
from common import write_mirror
from long_text import LONG

from p3data.builder import work_folder as work
from p3data.builder.jobs import CacheConfig
from p3data.builder.planning import build_plan
from p3data.builder.shard_work import process_unit
from p3data.taskset import load_definitions
from p3data.tokenize import Tokenizer
from p3data.vocab import SAMPLE_VOCAB


def profile(config: CacheConfig, plan, tokenizer: Tokenizer, out: Path) -> pstats.Stats:
    profiler = cProfile.Profile()
    for unit in plan.units:
        shutil.rmtree(out, ignore_errors=True)
        profiler.runcall(process_unit, config, unit, tokenizer)
    return pstats.Stats(profiler)


def cumulative(stats: pstats.Stats, file: str, *functions: str) -> float:
    """The cumulative time of the outermost of these functions of this file."""
    return max((ct for (path, _, name), (_, _, _, ct, _) in stats.stats.items()
                if path.endswith(file) and name in functions), default=0.0)


def activities(stats: pstats.Stats) -> dict[str, float]:
    """CPU shares by activity (the tokenizer's entry point was `encode` before `encode_packed`)."""
    tokenizing = cumulative(stats, "tokenize/tokenizer.py", "encode_packed", "encode")
    shares = {
        "reading rows": cumulative(stats, "stores.py", "read"),
        "checking rows against the schema": cumulative(stats, "schema.py", "problems"),
        "rendering": cumulative(stats, "render.py", "render_batch"),
        "tokenizing": tokenizing,
        "encoding and writing examples": cumulative(stats, "shard_work.py", "_write") - tokenizing,
    }
    total = cumulative(stats, "shard_work.py", "process_unit")
    shares["the rest"] = total - sum(shares.values())
    return {activity: seconds / total for activity, seconds in shares.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--set", choices=["long", "short"], default="long")
    parser.add_argument("--rows", type=int, default=3000, help="rows per dataset")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "p3data-bench"))
    args = parser.parse_args()
    bench = LONG if args.set == "long" else SHORT
    folder = Path(args.work)
    mirror = folder / f"mirror-{bench.name.replace(' ', '-')}-{args.rows}"
    write_mirror(mirror, bench.datasets, args.rows)
    out = folder / "stage1-profile"
    config = CacheConfig(output_dir=str(out), vocab_model=SAMPLE_VOCAB.read_bytes(),
                         data_dir=str(mirror))
    plan = build_plan(config, load_definitions(["t0"]).select([], [bench.tasks]), ["train"])
    tokenizer = Tokenizer(config.vocab_model, config.extra_ids)
    seconds = examples = 0
    for unit in plan.units:
        shutil.rmtree(out, ignore_errors=True)
        start = time.process_time()
        process_unit(config, unit, tokenizer)
        seconds += time.process_time() - start
        examples += sum(work.read_json(config.workdir.part(o.task, o.split, unit.index, ".json"),
                                         work.PartMeta).examples for o in unit.job.outputs)
    print(f"== {bench.name}: {len(plan.units)} source shards, {examples:,} examples: "
          f"{seconds:.2f} CPU-s, {examples / seconds:,.0f} examples/CPU-s; profiled:")
    stats = profile(config, plan, Tokenizer(config.vocab_model, config.extra_ids), out)
    for activity, share in activities(stats).items():
        print(f"{share:6.1%}  {activity}")
    stats.sort_stats("tottime").print_stats(args.top)
    shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    main()
