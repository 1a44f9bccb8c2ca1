"""Driving a cache run: plan, run the Beam graph, report, and write P3's index."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TextIO

from p3data.cache import fs, layout
from p3data.cache.plan import CacheConfig, CachePlan, build_plan
from p3data.cache.progress import Progress
from p3data.t0 import TaskSpec


@dataclass
class RunResult:
    plan: CachePlan
    built: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.failed


def run_cache(config: CacheConfig, specs: Sequence[TaskSpec], splits: Sequence[str] = (),
              pipeline_args: Sequence[str] = (), progress_every: float = 10.0,
              out: TextIO = sys.stderr) -> RunResult:
    import apache_beam as beam
    from apache_beam.options.pipeline_options import PipelineOptions

    from p3data.pipelines.cache import build, status_path

    start = time.monotonic()
    plan = build_plan(config, specs, splits)
    result = RunResult(plan, failed=dict(plan.failed))
    print(f"[p3data cache] {len(specs)} tasks: {len(plan.tasks)} to build "
          f"({len(plan.units)} source shards, {plan.rows:,} rows), {len(plan.done)} already "
          f"complete, {len(plan.failed)} cannot be built", file=out, flush=True)
    for task, reason in sorted(plan.failed.items()):
        print(f"[p3data cache] cannot build {task}: {reason}", file=out)
    if plan.units:
        options = PipelineOptions(list(pipeline_args) or ["--runner=DirectRunner"])
        with Progress(fs.join(config.work_dir, "units", "*.json"), plan.rows, progress_every,
                      out):
            pipeline = beam.Pipeline(options=options)
            build(pipeline, plan)
            pipeline.run().wait_until_finish()
        for task in plan.tasks:
            path = status_path(config, task)
            status = json.loads(fs.read_bytes(path)) if fs.exists(path) else {
                "failed": "no status: the pipeline did not finish this task"}
            if status["failed"]:
                result.failed[task] = status["failed"]
            else:
                result.built.append(task)
    if config.p3_layout:
        write_p3_index(config.output_dir)
    if result.ok:
        fs.delete_tree(config.work_dir)
    result.seconds = time.monotonic() - start
    return result


def write_p3_index(root: str) -> None:
    """P3's `data_split_sizes.csv`: `task|{"split": examples, ...}` for every complete task,
    non-empty splits only (the JSON is written as is, as P3's file has it)."""
    lines = [layout.P3_INDEX_HEADER]
    for completed in fs.listdir(fs.join(root, "data", "*", layout.COMPLETED)):
        folder = completed.rsplit("/", 1)[0]
        manifest = json.loads(fs.read_bytes(fs.join(folder, layout.MANIFEST)))
        sizes = {split: s["stats"]["examples"] for split, s in manifest["splits"].items()
                 if s["stats"]["examples"]}
        lines.append(f"{manifest['task']}|{json.dumps(sizes)}")
    fs.write_bytes(fs.join(root, layout.P3_INDEX), ("\n".join(lines) + "\n").encode())


def summary_table(result: RunResult, output_dir: str, p3_layout: bool = False) -> str:
    """Per task: examples, tokens, dropped rows; then totals and time."""
    lines = [f"{'task':60} {'examples':>10} {'tokens':>12} {'dropped':>8}"]
    totals = [0, 0, 0]
    for task in sorted(set(result.built) | set(result.plan.done)):
        manifest_path = fs.join(layout.task_dir(output_dir, task, p3_layout), layout.MANIFEST)
        manifest = json.loads(fs.read_bytes(manifest_path))
        examples = tokens = dropped = 0
        for split in manifest["splits"].values():
            stats = split["stats"]
            examples += stats["examples"]
            tokens += stats.get("inputs_tokens", 0) + stats.get("targets_tokens", 0)
            dropped += sum(split["dropped"].values())
        totals = [totals[0] + examples, totals[1] + tokens, totals[2] + dropped]
        lines.append(f"{task[:60]:60} {examples:>10,} {tokens:>12,} {dropped:>8,}")
    lines.append(f"{'TOTAL (' + str(len(lines) - 1) + ' tasks)':60} {totals[0]:>10,} "
                 f"{totals[1]:>12,} {totals[2]:>8,}")
    for task, reason in sorted(result.failed.items()):
        lines.append(f"FAILED {task}: {reason}")
    lines.append(f"time: {result.seconds:.1f} s")
    return "\n".join(lines)
