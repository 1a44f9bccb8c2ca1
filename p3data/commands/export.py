"""`p3data export`: a cache as parquet (or JSON lines) laid out as P3 is on the Hub.

    p3data export CACHE --out DIR [--format parquet|jsonl]
        [--shape p3|prompt-completion|messages] [--mixture NAME] [--tasks REGEX]
    p3data export CACHE --out DIR --format arrayrecord [--mixture NAME] [--tasks REGEX]

Writes DIR/<task>/<split>-NNNNN-of-MMMMM.parquet for every task of the cache (or of the
mixtures and task patterns given) and, last, the dataset card DIR/README.md, so that
`datasets.load_dataset("DIR", "<task>")` and `load_dataset("parquet", data_dir="DIR/<task>")`
load it. --shape prompt-completion or messages writes TRL's standard rows instead of P3's
columns (`prompt` and `completion`, or a user turn and an assistant turn: the cache's texts,
exactly), each with a `provenance` struct, in source order, score-eval twins left out.
CACHE and DIR are folders or any fsspec URL (gs://, s3://); DIR is missing, empty or
an export p3data made (anything else, and the cache itself, is refused). Examples are streamed:
memory stays flat whatever the cache's size. A rerun skips the task splits already exported
with the same settings (format, shape, shard size) from the same cache and redoes the rest;
one task's failure (a missing or corrupt file, a task the cache has not finished) does not
stop the others; exit 1 if any failed. One run writes to DIR at a time (its lock
DIR/.p3data-lock); --force takes over the lock of a run that is dead.

--format arrayrecord converts a TFRecord cache (p3data's, seqio's, or a downloaded P3's) into
an ArrayRecord cache in DIR without rebuilding: the records, info and stats JSON and manifest
`p3data cache --shard-format arrayrecord` writes. DIR is missing, empty or a cache; reruns
skip the tasks already converted; exit 1 if any task failed.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING

from p3data.commands.extras import require
from p3data.commands.options import cache_root, positive_int
from p3data.errors import P3DataError

if TYPE_CHECKING:
    from p3data.export.task import TaskExportOutcome
    from p3data.read import CacheReader

KINDS = ("exported", "already exported", "failed")
# Shard formats a TFRecord cache is converted to (a cache, not rows: `p3data/export/convert.py`)
CONVERTED = ("arrayrecord",)


def run(args: argparse.Namespace) -> int:
    from p3data.export.shapes import P3

    if args.format in CONVERTED:
        if args.shape != P3:
            raise P3DataError(f"--format {args.format} converts the cache's records as they "
                              f"are: --shape {args.shape} is for parquet or jsonl rows")
        return _convert(args)
    from p3data import fs
    from p3data.export.exported import ExportSettings
    from p3data.export.folder import export_tasks
    from p3data.export.naming import CARD
    from p3data.export.selection import select_tasks, training_tasks
    from p3data.export.shapes import export_shape
    from p3data.lock import refuse_live_writer
    from p3data.progress import ProgressBar
    from p3data.read import open_cache

    require("pyarrow")
    refuse_live_writer(cache_root(args.cache))  # a rebuild withdraws what it would read
    cache = open_cache(cache_root(args.cache))
    # Unfinished tasks asked for are selected too: each fails, named, as a task it cannot read.
    tasks, lacking = select_tasks(cache.tasks + cache.unfinished, args.mixture, args.tasks)
    if lacking:
        print(f"[p3data export] the cache lacks {len(lacking):,} of the tasks asked for, e.g. "
              f"{lacking[0]}: they are not exported", file=sys.stderr)
    if export_shape(args.shape).sft:
        tasks, twins = training_tasks(tasks)
        if twins:
            print(f"[p3data export] {len(twins):,} score-eval twins left out, e.g. {twins[0]} "
                  f"(one example per answer choice: not SFT data)", file=sys.stderr)
    out = fs.without_trailing_slash(args.out)
    settings = ExportSettings(args.format, shape=args.shape,
                              examples_per_shard=args.examples_per_shard)
    expected = {task: _examples(cache, task) for task in tasks}
    with ProgressBar(expected, unit="examples", label="p3data export") as progress:
        outcomes = export_tasks(cache, tasks, out, settings=settings, force=args.force,
                                on_task=lambda outcome: progress.finish(outcome.task),
                                on_examples=progress.advance)
    print(summary(outcomes, fs.join(out, CARD)))
    return 1 if any(o.status == "failed" for o in outcomes) else 0


def _convert(args: argparse.Namespace) -> int:
    """A TFRecord cache (p3data's, seqio's, a downloaded P3) as a cache of another format."""
    from p3data import fs
    from p3data.export.convert import convert_tasks, summary
    from p3data.export.selection import select_tasks
    from p3data.format.arrayrecord_shards import package
    from p3data.format.shard_format import shard_format
    from p3data.lock import refuse_live_writer
    from p3data.read import open_cache

    package()  # or one line naming the extra
    refuse_live_writer(cache_root(args.cache))
    cache = open_cache(cache_root(args.cache))
    tasks, lacking = select_tasks(cache.tasks + cache.unfinished, args.mixture, args.tasks)
    if lacking:
        print(f"[p3data export] the cache lacks {len(lacking):,} of the tasks asked for, e.g. "
              f"{lacking[0]}: they are not converted", file=sys.stderr)
    outcomes = convert_tasks(cache, tasks, fs.without_trailing_slash(args.out),
                             shard_format=shard_format(args.format), force=args.force)
    print(summary(outcomes))
    return 1 if any(o.status == "failed" for o in outcomes) else 0


def _examples(cache: CacheReader, task: str) -> int:
    """The examples of a task's splits as its stats say; 0 for a task that cannot be read
    (its export fails and says why, and the other tasks go on)."""
    try:
        return sum(len(cache.split(task, split)) for split in cache.splits(task))
    except P3DataError:
        return 0


def summary(outcomes: Sequence[TaskExportOutcome], card: str) -> str:
    """Per task: splits, examples, files and bytes written (or held); one line per failure."""
    from p3data.tables import text_table

    rows, totals = [], [0, 0, 0, 0]
    for outcome in outcomes:
        exported = outcome.exported
        counts = [len(exported.splits), sum(s.examples for s in exported.splits.values()),
                  len(exported.files), sum(exported.files.values())] if exported else [None] * 4
        if exported:
            totals = [a + b for a, b in zip(totals, counts, strict=True)]
        rows.append([outcome.task, *counts, outcome.status])
    rows.append([f"TOTAL ({len(outcomes)} tasks)", *totals, ""])
    kinds = Counter(o.status for o in outcomes)
    lines = [text_table(["task", "splits", "examples", "files", "bytes", "status"], rows)]
    lines += [f"FAILED {o.task}: {o.reason}" for o in outcomes if o.status == "failed"]
    lines.append(", ".join(f"{kinds[kind]} {kind}" for kind in KINDS) + f"; card {card}")
    return "\n".join(lines)


def register(commands: argparse._SubParsersAction) -> None:
    from p3data.export.exported import DEFAULT_EXAMPLES_PER_SHARD
    from p3data.export.formats import EXPORT_FORMATS
    from p3data.export.shapes import EXPORT_SHAPES, P3

    parser = commands.add_parser(
        "export", help="write a cache as parquet or JSON lines with a dataset card",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("cache", metavar="CACHE", help="the cache root (local or gs://)")
    parser.add_argument("--out", required=True, metavar="DIR",
                        help="the folder to write (local or any fsspec URL)")
    parser.add_argument("--format", choices=[*EXPORT_FORMATS, *CONVERTED], default="parquet",
                        help="file format (default: parquet); arrayrecord: the TFRecord cache "
                             "(or P3's download) as a cache of ArrayRecord shards, not rebuilt")
    parser.add_argument("--shape", choices=list(EXPORT_SHAPES), default=P3,
                        help="the rows' columns: P3's (default), or TRL's standard "
                             "prompt-completion or conversational messages, with provenance")
    parser.add_argument("--mixture", action="append", default=[], metavar="NAME",
                        help="export this mixture's tasks (repeatable), e.g. t0_train")
    parser.add_argument("--tasks", action="append", default=[], metavar="REGEX",
                        help="export tasks whose full name matches (repeatable)")
    parser.add_argument("--examples-per-shard", type=positive_int,
                        default=DEFAULT_EXAMPLES_PER_SHARD, metavar="N",
                        help="at most N examples per file "
                             f"(default {DEFAULT_EXAMPLES_PER_SHARD:,})")
    parser.add_argument("--force", action="store_true",
                        help="take over DIR's lock from a run that is dead")
    parser.set_defaults(run=run)
