"""The cache builder's Beam graph: the stages of `p3data.builder`, run on any Beam runner.

    pool units --Reshuffle--> each source shard of a pool split rendered into a part of every
              exemplar pool it feeds (few-shot variants only)
          --GroupByKey pool--> merge each pool's parts; all pools are a side input of stage 1,
              so no shard is worked before every pool is ready
    units --Reshuffle--> render+tokenize each source shard (stage 1, parallel over shards)
          --GroupByKey (task, split)--> triage each task split (stage 2: reuse, fail or assemble):
              its parts --Reshuffle--> deal each part's examples into one file, by output shard
              (a split's only part: straight into its output shards and their indexes)
              --GroupByKey output shard--> write each output shard and its record index from
              its range of every dealt part (unless written already)
          --CoGroupByKey (task, split), plan and shard digests--> info, stats, split summary
          --GroupByKey task--> manifest, then COMPLETED (only if every split is complete)

The graph holds the units' indices only: each step reads the plan (settings, model, tasks,
units) from the work folder, where `graph_runner` ships it before the job starts
(`p3data.builder.shipping`).
Each stage skips what a previous run already finished with the same settings, so a rerun
after a crash redoes only the missing shards. `p3data.builder.driver.run_cache` drives a run;
`graph_runner` is the graph it runs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence

import apache_beam as beam

from p3data import fs
from p3data.builder.assembly import (
    PartJob,
    ShardJob,
    SplitAssembly,
    deal_part,
    finish_split,
    triage_split,
    write_shard,
)
from p3data.builder.completion import complete_task
from p3data.builder.jobs import CacheConfig, CachePlan, TaskInfo
from p3data.builder.pool_work import build_pool_parts, merge_pool
from p3data.builder.shard_work import process_unit
from p3data.builder.shipping import ShippedPlan, ship
from p3data.builder.work_folder import SplitSummary, UnitMarker, write_json
from p3data.gc_policy import long_lived_frozen
from p3data.pipelines.workers import service_refusals
from p3data.tokenize import Tokenizer


class _PlanStep(beam.DoFn):
    """A step of the plan's job: it carries where the plan is, and reads it once per worker
    process (`p3data.builder.shipping`)."""

    def __init__(self, shipped: ShippedPlan):
        self.shipped = shipped
        self.plan: CachePlan | None = None

    def setup(self) -> None:
        self.plan = self.shipped.receive()

    @property
    def config(self) -> CacheConfig:
        return self.plan.config


class _Tokenizing(_PlanStep):
    """A step that tokenizes: it loads the plan's model once per worker."""

    def setup(self) -> None:
        super().setup()
        self.tokenizer = Tokenizer(self.config.vocab_model, self.config.extra_ids)
        long_lived_frozen()  # the plan, the model, TensorFlow: walked by no later collection


class BuildPoolParts(_Tokenizing):
    """The pool stage for one source shard (the index of a pool unit); emits (pool name,
    part index) for every pool it feeds."""

    def process(self, index: int) -> Iterator[tuple[str, int]]:
        unit = self.plan.pool_units[index]
        build_pool_parts(self.config, unit, self.tokenizer)
        for pool in unit.pools:
            yield pool.name, unit.index


class MergePool(_PlanStep):
    """Emits the pool's name once its parts are merged (or its failure recorded)."""

    def setup(self) -> None:
        super().setup()
        self.pools = self.plan.pools

    def process(self, element: tuple[str, Iterable[int]]) -> Iterator[str]:
        name, _ = element
        merge_pool(self.config, self.pools[name])
        yield name


class RenderShard(_Tokenizing):
    """Stage 1 for one unit (its index in the plan); emits ((task, split), shard index) for
    every output. Its side input, the pools' names, is only there to make it wait for the
    pool stage."""

    def process(self, index: int,
                pools: Sequence[str] = ()) -> Iterator[tuple[tuple[str, str], int]]:
        unit = self.plan.units[index]
        if process_unit(self.config, unit, self.tokenizer):  # a failed unit is redone
            write_json(self.config.workdir.unit_marker(unit.name),
                         UnitMarker(unit.rows, unit.key))
        for out in unit.job.outputs:
            yield (out.task, out.split), unit.index


SplitTriage = SplitAssembly | SplitSummary  # what stage 2 does with a task split


class _TasksDoFn(_PlanStep):
    """Stage 2 and 3 steps, which need the tasks being built."""

    @property
    def tasks(self) -> dict[str, TaskInfo]:
        return self.plan.tasks

    def finish_bundle(self) -> None:
        fs.wait_for_writes()  # the bundle's uploads sent in the background (object stores)


class TriageSplit(_TasksDoFn):
    """Emits ((task, split), a `SplitAssembly`, or the `SplitSummary` of a split reused or
    failed as it stands)."""

    def process(self, element) -> Iterator[tuple[tuple[str, str], SplitTriage]]:
        (task, split), _ = element
        yield (task, split), triage_split(self.config, self.tasks[task], split)


class DealPart(_TasksDoFn):
    """Emits (output shard, the files already written for it) for every output shard once
    the part is dealt; an output shard is (task, split, shard index, shards), `ShardJob`'s
    fields, and its files are a name -> sha256 dict (empty unless the part was its split's
    only one, dealt straight into the output shards)."""

    def process(self, job: PartJob) -> Iterator[tuple[tuple[str, str, int, int], dict]]:
        written = deal_part(self.config, self.tasks[job.task], job)
        for shard in range(job.shards):
            yield (job.task, job.split, shard, job.shards), written[shard]


class WriteShard(_TasksDoFn):
    """Emits ((task, split), (name, sha256)) for the shard and its index; runs once every
    part is dealt."""

    def process(self, element) -> Iterator[tuple[tuple[str, str], tuple[str, str]]]:
        job = ShardJob(*element[0])
        written = next((files for files in element[1] if files), None)
        files = written or write_shard(self.config, self.tasks[job.task], job)
        for file in files.items():
            yield (job.task, job.split), file


class FinishSplit(_TasksDoFn):
    """Emits (task, the split's summary); marks the split assembled for the progress line."""

    def process(self, element) -> Iterator[tuple[str, SplitSummary]]:
        (task, split), joined = element
        (plan,) = joined["plan"]
        if isinstance(plan, SplitSummary):  # reused or failed as it stands
            fs.write_bytes(self.config.workdir.assembled(task, split), b"{}")
            yield task, plan
        else:  # marks it assembled with its summary
            yield task, finish_split(self.config, self.tasks[task], plan, dict(joined["shards"]))


def _part_jobs(element: tuple[tuple[str, str], SplitTriage]) -> tuple[PartJob, ...]:
    _, plan = element
    return plan.parts if isinstance(plan, SplitAssembly) else ()


class CompleteTask(_TasksDoFn):
    def process(self, element: tuple[str, Iterable[SplitSummary]]) -> Iterator[str]:
        task, summaries = element
        status = complete_task(self.config, self.tasks[task], list(summaries))
        if status.failed:  # a task completed says so itself: COMPLETED
            write_json(self.config.workdir.task_status(task), status)
        yield task


def build(pipeline: beam.Pipeline, plan: CachePlan, shipped: ShippedPlan) -> beam.PCollection:
    """The plan's graph; its steps read the plan from where it was `shipped`, so the graph
    holds the units' indices, not the units."""
    pools_ready = ([beam.pvalue.AsList(_pool_stage(pipeline, plan, shipped))]
                   if plan.pool_units else [])
    plans = (
        pipeline
        | "Units" >> beam.Create(range(len(plan.units)))  # spread over workers (Create reshuffles)
        | "Render and tokenize shards" >> beam.ParDo(RenderShard(shipped), *pools_ready)
        | "Group by task split" >> beam.GroupByKey()
        | "Triage splits" >> beam.ParDo(TriageSplit(shipped))
    )
    shards = (
        plans
        | "Parts" >> beam.FlatMap(_part_jobs)
        | "Spread parts" >> beam.Reshuffle()
        | "Deal parts" >> beam.ParDo(DealPart(shipped))
        | "Group dealt parts by output shard" >> beam.GroupByKey()
        | "Write output shards" >> beam.ParDo(WriteShard(shipped))
    )
    return (
        {"plan": plans, "shards": shards}
        | "Join shards to their split" >> beam.CoGroupByKey()
        | "Finish splits" >> beam.ParDo(FinishSplit(shipped))
        | "Group by task" >> beam.GroupByKey()
        | "Complete tasks" >> beam.ParDo(CompleteTask(shipped))
    )


def _pool_stage(pipeline: beam.Pipeline, plan: CachePlan,
                shipped: ShippedPlan) -> beam.PCollection:
    """The exemplar pools the plan's few-shot variants draw from (a run without variants has
    no such stage)."""
    return (
        pipeline
        | "Pool units" >> beam.Create(range(len(plan.pool_units)))  # spread, as the units
        | "Build pool parts" >> beam.ParDo(BuildPoolParts(shipped))
        | "Group parts by pool" >> beam.GroupByKey()
        | "Merge pools" >> beam.ParDo(MergePool(shipped))
    )


def graph_runner(pipeline: beam.Pipeline) -> Callable[[CachePlan], None]:
    """The driver's `run_graph` on this pipeline (from `beam_pipeline`, whose options are
    checked before the driver touches the folder): it ships the plan, runs its graph, and
    removes the plan once the job has finished."""

    def run_graph(plan: CachePlan) -> None:
        shipped = ship(plan)
        build(pipeline, plan, shipped)
        with service_refusals(pipeline):
            result = pipeline.run()
        result.wait_until_finish()
        shipped.withdraw()

    return run_graph
