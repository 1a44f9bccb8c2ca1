"""The cache builder's Beam graph.

    units --Reshuffle--> render+tokenize each source shard (stage 1, parallel over shards)
          --GroupByKey (task, split)--> assemble output shards, info, stats (stage 2)
          --GroupByKey task--> manifest, then COMPLETED (only if every split is complete)

Each stage skips what a previous run already finished with the same settings, so a rerun
after a crash redoes only the missing shards. Run it through `p3data cache`, or directly:

    python -m p3data.pipelines.cache --mixture t0_train --output-dir gs://bucket/p3 \\
        --runner=DataflowRunner --project=... --region=... --setup_file=./setup.py
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator, Sequence

import apache_beam as beam

from p3data.cache import fs
from p3data.cache.finalize import finalize_split, finalize_task
from p3data.cache.plan import CacheConfig, CachePlan, TaskInfo, WorkUnit
from p3data.cache.shard_work import process_unit
from p3data.cache.tokenize import Tokenizer


class RenderShard(beam.DoFn):
    """Stage 1 for one unit; emits ((task, split), shard index) for every output."""

    def __init__(self, config: CacheConfig):
        self.config = config
        self.tokenizer: Tokenizer | None = None

    def setup(self) -> None:
        self.tokenizer = Tokenizer(self.config.vocab_model, self.config.extra_ids)

    def process(self, unit: WorkUnit) -> Iterator[tuple[tuple[str, str], int]]:
        for key in process_unit(self.config, unit, self.tokenizer):
            yield key, unit.index
        marker = {"rows": unit.rows, "key": unit.key}
        fs.write_bytes(self.config.work.unit_marker(unit.name), json.dumps(marker).encode())


class AssembleSplit(beam.DoFn):
    def __init__(self, config: CacheConfig, tasks: dict[str, TaskInfo]):
        self.config, self.tasks = config, tasks

    def process(self, element) -> Iterator[tuple[str, dict]]:
        (task, split), _ = element
        summary = finalize_split(self.config, self.tasks[task], split)
        fs.write_bytes(self.config.work.assembled(task, split), b"{}")
        yield task, summary


class CompleteTask(beam.DoFn):
    def __init__(self, config: CacheConfig, tasks: dict[str, TaskInfo]):
        self.config, self.tasks = config, tasks

    def process(self, element) -> Iterator[str]:
        task, summaries = element
        status = finalize_task(self.config, self.tasks[task], list(summaries))
        verdict = {"failed": status.get("failed", ""), "tracebacks": status.get("tracebacks", [])}
        fs.write_bytes(self.config.work.task_status(task), json.dumps(verdict).encode())
        yield task


def build(pipeline: beam.Pipeline, plan: CachePlan) -> beam.PCollection:
    config = plan.config
    return (
        pipeline
        | "Units" >> beam.Create(plan.units)
        | "Spread units" >> beam.Reshuffle()
        | "Render and tokenize shards" >> beam.ParDo(RenderShard(config))
        | "Group by task split" >> beam.GroupByKey()
        | "Assemble splits" >> beam.ParDo(AssembleSplit(config, plan.tasks))
        | "Group by task" >> beam.GroupByKey()
        | "Complete tasks" >> beam.ParDo(CompleteTask(config, plan.tasks))
    )


def main(argv: Sequence[str] | None = None) -> int:
    from p3data.cli import main as cli_main

    return cli_main(["cache", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    sys.exit(main())
