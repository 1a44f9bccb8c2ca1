"""Driving a cache run: lock the output, plan, withdraw what will be rebuilt, run the Beam
graph, report, and write P3's index."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TextIO

from p3data.cache import fs, layout
from p3data.cache.finalize import withdraw
from p3data.cache.lock import output_lock
from p3data.cache.plan import CacheConfig, CachePlan, build_plan
from p3data.cache.progress import Progress
from p3data.t0 import TaskSpec
from p3data.templates.render import RENDER_ERROR


@dataclass
class RunResult:
    plan: CachePlan
    built: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    tracebacks: list[str] = field(default_factory=list)  # of unexpected errors (bugs)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.failed


def run_cache(config: CacheConfig, specs: Sequence[TaskSpec], *, splits: Sequence[str] = (),
              pipeline_args: Sequence[str] = (), force: bool = False,
              progress_every: float = 10.0, out: TextIO = sys.stderr) -> RunResult:
    start = time.monotonic()
    command = " ".join(["p3data cache", *sys.argv[2:]])
    with output_lock(config.output_dir, force=force, command=command):
        swept = fs.sweep_temporaries(config.output_dir)
        plan = build_plan(config, specs, splits)
        result = RunResult(plan, failed=dict(plan.failed), tracebacks=list(plan.tracebacks))
        _announce(plan, len(specs), swept, out)
        for info in plan.tasks.values():
            withdraw(config, info)
        if plan.units:
            _run_pipeline(plan, pipeline_args, progress_every, out)
        for task in plan.tasks:
            status = _read_status(config, task)
            if status["failed"]:
                result.failed[task] = status["failed"]
                result.tracebacks += status.get("tracebacks", [])
            else:
                result.built.append(task)
        if config.p3_layout:
            write_p3_index(config.output_dir)
        if result.ok:
            fs.delete_tree(config.work.root)
    result.seconds = time.monotonic() - start
    return result


def _announce(plan: CachePlan, selected: int, swept: int, out: TextIO) -> None:
    units = len(plan.units)
    resumed = (f"; {len(plan.resumed):,} of them ({plan.resumed_rows:,} rows) done by an "
               f"earlier run" if plan.resumed else "")
    failed = f", {len(plan.failed)} cannot be built (listed at the end)" if plan.failed else ""
    print(f"[p3data cache] {selected} tasks: {len(plan.tasks)} to build ({units:,} source "
          f"shards, {plan.rows + plan.resumed_rows:,} rows{resumed}), {len(plan.done)} already "
          f"complete{failed}", file=out, flush=True)
    if swept:
        print(f"[p3data cache] removed {swept} temporary files left by an interrupted run",
              file=out)


def _run_pipeline(plan: CachePlan, pipeline_args: Sequence[str], progress_every: float,
                  out: TextIO) -> None:
    import apache_beam as beam
    from apache_beam.options.pipeline_options import PipelineOptions

    from p3data.pipelines.cache import build

    work = plan.config.work
    todo = {work.unit_marker(u.name): u.rows for u in plan.units if u.name not in plan.resumed}
    fs.delete([path for path in fs.listdir(work.unit_markers) if path in todo])
    fs.delete_tree(work.assembled_root)
    options = PipelineOptions(list(pipeline_args) or ["--runner=DirectRunner"])
    with Progress(unit_markers=work.unit_markers, todo=todo,
                  assembled_markers=work.assembled_markers, splits=plan.task_splits,
                  interval=progress_every, stream=out):
        pipeline = beam.Pipeline(options=options)
        build(pipeline, plan)
        pipeline.run().wait_until_finish()


def _read_status(config: CacheConfig, task: str) -> dict:
    try:
        return json.loads(fs.read_bytes(config.work.task_status(task)))
    except (OSError, ValueError):
        return {"failed": "the pipeline ended without finishing this task"}


def write_p3_index(root: str) -> None:
    """P3's `data_split_sizes.csv`: `task|{"split": examples, ...}` for every complete task,
    non-empty splits only (the JSON is written as is, as P3's file has it)."""
    lines = [layout.P3_INDEX_HEADER]
    for completed in fs.listdir(fs.join(root, "data", "*", layout.COMPLETED)):
        manifest = layout.read_manifest(completed.rsplit("/", 1)[0])
        sizes = {split: s["stats"]["examples"] for split, s in manifest["splits"].items()
                 if s["stats"]["examples"]}
        lines.append(f"{manifest['task']}|{json.dumps(sizes)}")
    fs.write_bytes(fs.join(root, layout.P3_INDEX), ("\n".join(lines) + "\n").encode())


def summary_table(result: RunResult, output_dir: str, p3_layout: bool = False) -> str:
    """Per task: examples, tokens, rows dropped by T0's row rule, rows that failed to render,
    rows that do not fit the catalog's schema; then totals, the schema mismatches by dataset
    split, one line per failed task, and the time."""
    tasks = sorted(set(result.built) | set(result.plan.done))
    width = max([len(task) for task in tasks] + [len("TOTAL (99999 tasks)")])
    columns = ("examples", "tokens", "dropped", "errors", "schema")
    lines = [f"{'task':{width}}" + "".join(f" {name:>10}" for name in columns)]
    totals = [0] * len(columns)
    mismatches: dict[tuple[str, str, str], int] = {}  # (dataset, source split, category) -> rows
    for task in tasks:
        manifest = layout.read_manifest(layout.task_dir(output_dir, task, p3_layout))
        row = [0] * len(columns)
        for split, record in manifest["splits"].items():
            stats, dropped = record["stats"], dict(record["dropped"])
            errors = dropped.pop(RENDER_ERROR, 0)
            schema = record.get("schema", {})
            for category, count in schema.items():
                key = (manifest["dataset"], manifest["split_mapping"][split], category)
                mismatches[key] = max(mismatches.get(key, 0), count)
            counts = (stats["examples"],
                      stats.get("inputs_tokens", 0) + stats.get("targets_tokens", 0),
                      sum(dropped.values()), errors, sum(schema.values()))
            row = [a + b for a, b in zip(row, counts, strict=True)]
        totals = [a + b for a, b in zip(totals, row, strict=True)]
        lines.append(f"{task:{width}}" + "".join(f" {n:>10,}" for n in row))
    lines.append(f"{f'TOTAL ({len(tasks)} tasks)':{width}}" + "".join(f" {n:>10,}"
                                                                    for n in totals))
    lines.append("dropped: left out by T0's row rule · errors: failed to render · schema: rows "
                 "unlike the catalog's schema")
    for (dataset, split, category), count in sorted(mismatches.items()):
        lines.append(f"SCHEMA {dataset} {split}: {count:,} rows: {category}")
    for task, reason in sorted(result.failed.items()):
        lines.append(f"FAILED {task}: {reason}")
    lines.append(f"time: {result.seconds:.1f} s")
    return "\n".join(lines)
