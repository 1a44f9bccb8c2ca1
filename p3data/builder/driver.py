"""A cache run, driven: it locks the output folder, plans, withdraws what will be rebuilt, runs
the graph and collects each task's verdict. The graph is handed in (`run_graph`: Beam's, from
`p3data.pipelines.cache`), so this module imports no Beam. `p3data cache` is its command line.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Sequence
from typing import TextIO

from p3data import fs
from p3data.builder.completion import complete_task, withdraw
from p3data.builder.folder import check_output_folder
from p3data.builder.jobs import CacheConfig, CachePlan, task_folder
from p3data.builder.planning import build_plan
from p3data.builder.summary import RunResult
from p3data.builder.work_folder import TaskStatus, read_json
from p3data.format.cache_folder import is_complete
from p3data.format.manifest import write_p3_index
from p3data.lock import output_lock
from p3data.progress import MarkerProgress
from p3data.t0 import TaskSpec

# Builds a plan's graph and runs it to its end (every unit rendered, every task completed).
GraphRun = Callable[[CachePlan], None]


def run_cache(config: CacheConfig, specs: Sequence[TaskSpec], *, run_graph: GraphRun,
              splits: Sequence[str] = (), force: bool = False, progress_every: float = 10.0,
              out: TextIO = sys.stderr) -> RunResult:
    """Build the caches of `specs`; every failure of a task is in the result, none is raised.
    `run_graph`'s options are checked before it is handed in, so a bad one has raised before
    the folder is touched."""
    start = time.monotonic()
    check_output_folder(config.output_dir)
    command = " ".join(["p3data cache", *sys.argv[2:]])
    with output_lock(config.output_dir, force=force, command=command):
        swept = fs.sweep_temporaries(config.output_dir)
        plan = build_plan(config, specs, splits)
        result = RunResult(plan, failed=dict(plan.failed), tracebacks=list(plan.tracebacks))
        _announce(plan, len(specs), swept, out)
        for info in plan.tasks.values():
            withdraw(config, info)
        if any(info.splits for info in plan.tasks.values()):  # the graph records its failures
            fs.delete(fs.glob(config.workdir.task_statuses))  # (earlier runs' are outdated)
        if plan.units:
            _run_graph(plan, run_graph, progress_every, out)
        statuses = {task: complete_task(config, info, []) for task, info in plan.tasks.items()
                    if not info.splits}  # it keeps every split as it is: a new manifest only
        listing = fs.files_by_folder(config.output_dir) if len(statuses) < len(plan.tasks) else {}
        for task in plan.tasks:
            status = statuses[task] if task in statuses else _verdict(config, task, listing)
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


def _verdict(config: CacheConfig, task: str, listing: dict[str, list[str]]) -> TaskStatus:
    """How the graph left a task: complete if its folder holds COMPLETED (withdrawing removed
    any older one), else failed for the reason its last stage recorded."""
    if is_complete(listing.get(task_folder(config, task), [])):
        return TaskStatus()
    return read_json(config.workdir.task_status(task), TaskStatus) or TaskStatus(
        "the pipeline ended without finishing this task")


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
    if plan.pool_units:
        print(f"[p3data cache] few-shot variants: {len(plan.pools):,} exemplar pools first "
              f"({len(plan.pool_units):,} source shards)", file=out, flush=True)
    if swept:
        print(f"[p3data cache] removed {swept} temporary files left by an interrupted run",
              file=out)
    for where, lines in plan.drift.items():
        for line in lines:
            print(f"[p3data cache] {where}: accepted drift from T0's rows: {line}", file=out)


def _run_graph(plan: CachePlan, run_graph: GraphRun, progress_every: float,
               out: TextIO) -> None:
    """Run the graph with a progress line; this run's unit markers and every assembled marker
    are cleared first, so the line counts this run's work only."""
    work = plan.config.workdir
    todo = {work.unit_marker(u.name): u.rows for u in plan.units if u.name not in plan.resumed}
    fs.delete([path for path in fs.glob(work.unit_markers) if path in todo])
    fs.delete_tree(work.assembled_root)
    with MarkerProgress(unit_markers=work.unit_markers, todo=todo,
                  assembled_markers=work.assembled_markers, splits=plan.task_splits,
                  interval=progress_every, stream=out):
        run_graph(plan)
