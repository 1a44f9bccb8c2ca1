"""P3 at scale, simulated: one `p3data cache` of all of T0's 983 tasks, every split, over a
mirror of every dataset they read at a fraction of its real split sizes.

The mirror: each source split at F of its catalog size (at least one row), rows generated from
the samples with the catalog's text lengths, their long texts English-like prose
(`common.Prose`), tokenized with a 32k vocabulary trained on such prose (`common.prose_vocab`).
What it measures is what all of P3 at once adds to the long/short-text benchmarks: 2,668 task
splits of 1 to 10,000s of examples, where fixed costs per task split, file counts and the plan
matter as much as the rate per example.

Per run (one per fraction and worker count): examples, CPU-seconds of the whole process tree
(user + system, `getrusage` of the waited-for children, Beam's worker processes included),
examples per CPU-second, wall time, peak resident memory per worker process (psutil, every
0.2 s, per process of the tree: the driver, and Beam's SDK workers with 2 workers; with one
worker the driver is the worker), files and bytes written, wall time per stage (from the run's
own output lines and its COMPLETED files), and the projection for all of P3 (122,127,848
examples) in CPU-hours. With two fractions or more, a line through (examples, CPU-s) per
worker count splits the cost into a fixed part (per task split) and a part per example, and
projects from it.

    .venv/bin/python benchmarks/p3_scale.py --fraction 0.001 0.01 [--workers 1 2]
        [--reference 10914 30943] [--work DIR]

--reference: other benchmarks' examples per CPU-second (long/short text) to compare with
(target: at least 80% of them at F = 1%). Few-shot variants are left out (T0's tasks only:
the pattern of tests/helpers/cache.py's `t0_only`).
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import zlib
from dataclasses import dataclass
from pathlib import Path

from cache_vs_stock import BIN, count_examples, count_tokens, environment
from common import Measured, prose_vocab, run_measured, t0_tasks, write_split

from p3data.dataset_key import DatasetKey
from p3data.t0 import TaskSpec, group_by_source_split
from p3data.tables import text_table
from p3data.taskset import load_definitions

P3_EXAMPLES = 122_127_848  # bigscience/P3's data_split_sizes.csv, summed
T0_TASKS = t0_tasks(".*")  # every task but few-shot variants
CPU_HOURS_TARGET = 3.0
RATE_SHARE_TARGET = 0.8
MIB = 2**20


def percent(fraction: float) -> str:
    return f"{100 * fraction:g}%"


@dataclass
class ScaleRun:
    """One measured build and what it wrote."""

    fraction: float
    workers: int
    rows: int
    task_splits: int
    examples: int
    tokens: int
    files: int
    bytes: int
    run: Measured
    stages: dict[str, float]

    @property
    def rate(self) -> float:
        return self.examples / self.run.cpu

    @property
    def projection(self) -> float:
        """CPU-hours for all of P3 at this run's examples per CPU-second."""
        return P3_EXAMPLES / self.rate / 3600

    @property
    def worker_role(self) -> str:
        """Whose memory is a worker's: the DirectRunner works in the driver with one worker."""
        return "worker" if self.workers > 1 else "driver"

    def peak_stage(self) -> str:
        """The stage during which a worker's memory peaked."""
        at, end = self.run.memory.peak_time_of(self.worker_role), 0.0
        for stage, seconds in self.stages.items():
            end += seconds
            if at <= end:
                return stage
        return "wrap-up"

    def cells(self) -> list:
        memory = self.run.memory
        worker = memory.peak_of(self.worker_role)
        return [percent(self.fraction), self.workers, f"{self.rows:,}", f"{self.examples:,}",
                f"{self.run.cpu:,.0f} ({self.run.user:,.0f}+{self.run.system:,.0f})",
                f"{self.rate:,.0f}", f"{self.tokens / self.run.cpu:,.0f}",
                f"{self.run.wall:,.0f}", f"{worker / MIB:,.0f} ({self.peak_stage()})",
                f"{memory.peak_of('driver') / MIB:,.0f}", f"{memory.peak / MIB:,.0f}",
                f"{self.files:,}", f"{self.bytes / 1e6:,.0f}",
                " / ".join(f"{s:,.0f}" for s in self.stages.values()),
                f"{self.projection:.2f}"]


COLUMNS = ["F", "workers", "rows", "examples", "CPU-s (user+sys)", "ex/CPU-s", "tok/CPU-s",
           "wall s", "peak/worker MiB (stage)", "driver MiB", "tree MiB", "files", "MB", "stages s",
           "P3 CPU-h"]
STAGES = "start-up+plan / render+tokenize / assemble / wrap-up"


def t0_specs() -> list[TaskSpec]:
    return load_definitions(["t0"]).select(patterns=[T0_TASKS])


def source_sizes(specs: list[TaskSpec]) -> dict[tuple[DatasetKey, str], int]:
    """(dataset, source split) -> its real size, for every source split the tasks read."""
    return {(key, split): pairs[0][0].entry.splits[split]
            for (key, split), pairs in group_by_source_split(specs).items()}


def write_scaled_mirror(root: Path, fraction: float) -> int:
    """Every source split at `fraction` of its size (at least a row), in prose; its rows."""
    total = 0
    for (key, split), size in source_sizes(t0_specs()).items():
        rows = max(1, round(size * fraction))
        seed = zlib.crc32(f"{key.name}/{split}".encode())  # prose differs between splits
        write_split(root, key, split, rows, seed=seed, prose=True)
        total += rows
    return total


def stages(run: Measured, out: Path) -> dict[str, float]:
    """Wall seconds of each stage: the plan ends with the run's announcement, stage 1 (render
    and tokenize) when the progress line first says every row is done (it comes every
    second), assembly with the last task's COMPLETED; the rest is the driver's wrap-up
    (verdicts, summary, removing the work folder) and the workers' shutdown."""
    planned = run.first("[p3data cache] ") or 0.0
    rendered = run.first(" done · task splits assembled") or planned
    completed = max((p.stat().st_mtime for p in out.rglob("COMPLETED")), default=run.started)
    assembled = max(rendered, completed - run.started)
    return {"plan": planned, "render": rendered - planned, "assemble": assembled - rendered,
            "wrap-up": run.wall - assembled}


def build(mirror: Path, out: Path, vocab: Path, *, workers: int) -> tuple[Measured, dict]:
    shutil.rmtree(out, ignore_errors=True)
    beam = ([f"--direct_num_workers={workers}", "--direct_running_mode=multi_processing"]
            if workers > 1 else [])
    run = run_measured([str(BIN / "p3data"), "cache", "--data-dir", str(mirror), "--vocab",
                        str(vocab), "--tasks", T0_TASKS, "--output-dir", str(out),
                        "--progress-every", "1", *beam], environment(mirror, vocab))
    return run, stages(run, out)


def measure_scale(work: Path, fraction: float, vocab: Path, *, workers: int) -> ScaleRun:
    mirror = work / f"p3-scale-mirror-{fraction:g}"
    rows = write_scaled_mirror(mirror, fraction)
    out = work / "p3-scale-cache"
    run, stage_times = build(mirror, out, vocab, workers=workers)
    files = [p for p in out.rglob("*") if p.is_file()]
    splits = sum(len(spec.split_mapping) for spec in t0_specs())
    scaled = ScaleRun(fraction, workers, rows, splits, count_examples(out, "*"),
                      count_tokens(out, "*"), len(files), sum(p.stat().st_size for p in files),
                      run, stage_times)
    print(f"F={percent(fraction)}, {workers} worker(s): {scaled.examples:,} examples, "
          f"{run.cpu:,.1f} CPU-s, {run.wall:,.1f} s wall", flush=True)
    return scaled


def fit_lines(runs: list[ScaleRun]) -> list[str]:
    """Per worker count, the line through its runs' (examples, CPU-s): the slope is the CPU per
    example, the intercept the fixed cost (start-up, plan, per task split), which a
    run of all of P3 pays once; and memory per worker from the smallest fraction to the
    largest."""
    lines = []
    for workers in sorted({r.workers for r in runs}):
        mine = sorted((r for r in runs if r.workers == workers), key=lambda r: r.fraction)
        if len(mine) < 2:
            continue
        low, high = mine[0], mine[-1]
        slope = (high.run.cpu - low.run.cpu) / (high.examples - low.examples)
        fixed = low.run.cpu - slope * low.examples
        projected = (fixed + slope * P3_EXAMPLES) / 3600
        memory = [r.run.memory.peak_of(r.worker_role) / MIB for r in (low, high)]
        lines += [
            f"{workers} worker(s): {1e6 * slope:,.1f} CPU-us per example "
            f"({1 / slope:,.0f} examples/CPU-s at the margin); fixed {fixed:,.1f} CPU-s = "
            f"{1e3 * fixed / low.task_splits:,.1f} CPU-ms per task split ({low.task_splits:,}"
            f" task splits, start-up included); all of P3: {projected:.2f} CPU-hours "
            f"(target {CPU_HOURS_TARGET:g})",
            f"{workers} worker(s): peak per worker {memory[0]:,.0f} MiB at "
            f"F={percent(low.fraction)}, {memory[1]:,.0f} MiB at F={percent(high.fraction)} "
            f"({100 * (memory[1] / memory[0] - 1):+.0f}%)"]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--fraction", type=float, nargs="+", default=[0.001, 0.01],
                        help="fractions of the real split sizes (0.01 is 1%%)")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--reference", type=float, nargs="*", default=[],
                        help="other benchmarks' examples per CPU-second, to compare with")
    parser.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "p3data-bench"))
    args = parser.parse_args()
    work = Path(args.work)
    vocab = prose_vocab(work)
    runs = [measure_scale(work, fraction, vocab, workers=workers)
            for fraction in args.fraction for workers in args.workers]
    print(f"== P3 at scale, simulated: {runs[0].task_splits:,} task splits of 983 tasks; "
          f"stages: {STAGES}")
    print(text_table(COLUMNS, [r.cells() for r in runs]))
    for line in fit_lines(runs):
        print(line)
    largest = max(r.fraction for r in runs)
    for run in (r for r in runs if r.fraction == largest):
        for reference in args.reference:
            share = run.rate / reference
            print(f"F={percent(largest)}, {run.workers} worker(s): {run.rate:,.0f} examples/CPU-s "
                  f"is {share:.0%} of {reference:,.0f} (target "
                  f"{RATE_SHARE_TARGET:.0%}{'' if share >= RATE_SHARE_TARGET else ': MISSED'})")


if __name__ == "__main__":
    main()
