"""The cache builder's Beam graph and its driver.

    units --Reshuffle--> render+tokenize each source shard (stage 1, parallel over shards)
          --GroupByKey (task, split)--> plan each task split's assembly (stage 2):
              its parts --Reshuffle--> deal each part's examples into one file, by output shard
              --GroupByKey output shard--> write each output shard and its record index from
              its range of every dealt part
          --CoGroupByKey (task, split), plan and shard digests--> info, stats, split summary
          --GroupByKey task--> manifest, then COMPLETED (only if every split is complete)

Each stage skips what a previous run already finished with the same settings, so a rerun
after a crash redoes only the missing shards. `run_cache` drives a run: it locks the output
folder, plans, withdraws what will be rebuilt, runs the graph on any Beam runner, and collects
each task's verdict. `p3data cache` is its command line.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable, Iterator, Sequence
from typing import TextIO

import apache_beam as beam
from p3data.pipelines.options import beam_pipeline

from p3data import fs
from p3data.builder.finalize import (
    PartJob,
    ShardJob,
    SplitAssembly,
    deal_part,
    finalize_task,
    finish_split,
    plan_split,
    write_p3_index,
    write_shard,
)
from p3data.builder.folder import check_output_folder
from p3data.builder.lock import output_lock
from p3data.builder.plan import (
    CacheConfig,
    CachePlan,
    TaskInfo,
    WorkUnit,
    build_plan,
    withdraw,
)
from p3data.builder.progress import Progress
from p3data.builder.shard_work import process_unit
from p3data.builder.summary import RunResult
from p3data.format.work import SplitSummary, TaskStatus, UnitMarker, read_record, write_record
from p3data.t0 import TaskSpec
from p3data.tokenize import Tokenizer


class RenderShard(beam.DoFn):
    """Stage 1 for one unit; emits ((task, split), shard index) for every output."""

    def __init__(self, config: CacheConfig):
        self.config = config
        self.tokenizer: Tokenizer | None = None

    def setup(self) -> None:
        self.tokenizer = Tokenizer(self.config.vocab_model, self.config.extra_ids)

    def process(self, unit: WorkUnit) -> Iterator[tuple[tuple[str, str], int]]:
        if process_unit(self.config, unit, self.tokenizer):  # a failed unit is redone
            write_record(self.config.workdir.unit_marker(unit.name),
                         UnitMarker(unit.rows, unit.key))
        for out in unit.job.outputs:
            yield (out.task, out.split), unit.index


SplitPlan = SplitAssembly | SplitSummary  # what stage 2 does with a task split


class _TasksDoFn(beam.DoFn):
    """Stage 2 and 3 steps, which need the settings (not the model) and the tasks being
    built."""

    def __init__(self, config: CacheConfig, tasks: dict[str, TaskInfo]):
        self.config, self.tasks = config.without_model(), tasks


class PlanSplit(_TasksDoFn):
    """Emits ((task, split), a `SplitAssembly`, or the `SplitSummary` of a split reused or
    failed as it stands)."""

    def process(self, element) -> Iterator[tuple[tuple[str, str], SplitPlan]]:
        (task, split), _ = element
        yield (task, split), plan_split(self.config, self.tasks[task], split)


class DealPart(_TasksDoFn):
    """Emits (output shard, part index) for every output shard once the part is dealt; an
    output shard is (task, split, shard index, shards), `ShardJob`'s fields."""

    def process(self, job: PartJob) -> Iterator[tuple[tuple[str, str, int, int], int]]:
        deal_part(self.config, self.tasks[job.task], job)
        for shard in range(job.shards):
            yield (job.task, job.split, shard, job.shards), job.index


class WriteShard(_TasksDoFn):
    """Emits ((task, split), (name, sha256)) for the shard and its index; runs once every
    part is dealt."""

    def process(self, element) -> Iterator[tuple[tuple[str, str], tuple[str, str]]]:
        job = ShardJob(*element[0])
        for file in write_shard(self.config, self.tasks[job.task], job).items():
            yield (job.task, job.split), file


class FinishSplit(_TasksDoFn):
    """Emits (task, the split's summary); marks the split assembled for the progress line."""

    def process(self, element) -> Iterator[tuple[str, SplitSummary]]:
        (task, split), joined = element
        (plan,) = joined["plan"]
        summary = plan if isinstance(plan, SplitSummary) else finish_split(
            self.config, self.tasks[task], plan, dict(joined["shards"]))
        fs.write_bytes(self.config.workdir.assembled(task, split), b"{}")
        yield task, summary


def _part_jobs(element: tuple[tuple[str, str], SplitPlan]) -> tuple[PartJob, ...]:
    _, plan = element
    return plan.parts if isinstance(plan, SplitAssembly) else ()


class CompleteTask(_TasksDoFn):
    def process(self, element: tuple[str, Iterable[SplitSummary]]) -> Iterator[str]:
        task, summaries = element
        status = finalize_task(self.config, self.tasks[task], list(summaries))
        write_record(self.config.workdir.task_status(task), status)
        yield task


def build(pipeline: beam.Pipeline, plan: CachePlan) -> beam.PCollection:
    config, tasks = plan.config, plan.tasks
    plans = (
        pipeline
        | "Units" >> beam.Create(plan.units)
        | "Spread units" >> beam.Reshuffle()
        | "Render and tokenize shards" >> beam.ParDo(RenderShard(config))
        | "Group by task split" >> beam.GroupByKey()
        | "Plan splits" >> beam.ParDo(PlanSplit(config, tasks))
    )
    shards = (
        plans
        | "Parts" >> beam.FlatMap(_part_jobs)
        | "Spread parts" >> beam.Reshuffle()
        | "Deal parts" >> beam.ParDo(DealPart(config, tasks))
        | "Group dealt parts by output shard" >> beam.GroupByKey()
        | "Write output shards" >> beam.ParDo(WriteShard(config, tasks))
    )
    return (
        {"plan": plans, "shards": shards}
        | "Join shards to their split" >> beam.CoGroupByKey()
        | "Finish splits" >> beam.ParDo(FinishSplit(config, tasks))
        | "Group by task" >> beam.GroupByKey()
        | "Complete tasks" >> beam.ParDo(CompleteTask(config, tasks))
    )


def run_cache(config: CacheConfig, specs: Sequence[TaskSpec], *, splits: Sequence[str] = (),
              pipeline_args: Sequence[str] = (), own_options: Sequence[str] = (),
              force: bool = False, progress_every: float = 10.0,
              out: TextIO = sys.stderr) -> RunResult:
    """Build the caches of `specs`; every failure of a task is in the result, none is raised.
    Beam's options are checked first (`own_options`: the caller's, offered when an unknown
    one is close to them): a bad one raises `P3DataError` before the folder is touched."""
    start = time.monotonic()
    pipeline = beam_pipeline(pipeline_args, own_options=own_options)
    check_output_folder(config.output_dir)
    command = " ".join(["p3data cache", *sys.argv[2:]])
    with output_lock(config.output_dir, force=force, command=command):
        swept = fs.sweep_temporaries(config.output_dir)
        plan = build_plan(config, specs, splits)
        result = RunResult(plan, failed=dict(plan.failed), tracebacks=list(plan.tracebacks))
        _announce(plan, len(specs), swept, out)
        for info in plan.tasks.values():
            withdraw(config, info)
        if plan.units:
            _run_pipeline(plan, pipeline, progress_every, out)
        for task, info in plan.tasks.items():
            if not info.splits:  # it keeps every split as it is: only its manifest is written
                write_record(config.workdir.task_status(task), finalize_task(config, info, []))
        for task in plan.tasks:
            status = read_record(config.workdir.task_status(task), TaskStatus) or TaskStatus(
                "the pipeline ended without finishing this task")
            if status.failed:
                result.failed[task] = status.failed
                result.tracebacks += status.tracebacks
            else:
                result.built.append(task)
        if config.p3_layout:
            write_p3_index(config.output_dir)
        if result.ok:
            fs.delete_tree(config.workdir.root)
    result.seconds = time.monotonic() - start
    return result


def _announce(plan: CachePlan, selected: int, swept: int, out: TextIO) -> None:
    units = len(plan.units)
    resumed = (f"; {len(plan.resumed):,} of them ({plan.resumed_rows:,} rows) done by an "
               f"earlier run" if plan.resumed else "")
    failed = f", {len(plan.failed)} cannot be built (listed at the end)" if plan.failed else ""
    skipped = (f", {len(plan.skipped)} without the splits asked for (left as they are)"
               if plan.skipped else "")
    print(f"[p3data cache] {selected} tasks: {len(plan.tasks)} to build ({units:,} source "
          f"shards, {plan.rows + plan.resumed_rows:,} rows{resumed}), {len(plan.done)} already "
          f"complete{failed}{skipped}", file=out, flush=True)
    if swept:
        print(f"[p3data cache] removed {swept} temporary files left by an interrupted run",
              file=out)
    for where, lines in plan.drift.items():
        for line in lines:
            print(f"[p3data cache] {where}: accepted drift from T0's rows: {line}", file=out)


def _run_pipeline(plan: CachePlan, pipeline: beam.Pipeline, progress_every: float,
                  out: TextIO) -> None:
    work = plan.config.workdir
    todo = {work.unit_marker(u.name): u.rows for u in plan.units if u.name not in plan.resumed}
    fs.delete([path for path in fs.glob(work.unit_markers) if path in todo])
    fs.delete_tree(work.assembled_root)
    with Progress(unit_markers=work.unit_markers, todo=todo,
                  assembled_markers=work.assembled_markers, splits=plan.task_splits,
                  interval=progress_every, stream=out):
        build(pipeline, plan)
        pipeline.run().wait_until_finish()
