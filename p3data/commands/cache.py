"""`p3data cache`: build seqio caches (or P3's layout) of T0's tasks with Beam.

Options p3data does not know are Beam pipeline options and go to Beam as they are, e.g.
`--runner=DataflowRunner --project=... --region=... --temp_location=gs://...` or
`--direct_num_workers=2 --direct_running_mode=multi_processing`. Beam's options are checked
before anything is written: one Beam does not know either, a bad value or runner is an error.
Workers that do not share this machine's files (Dataflow's; a portable runner's outside
LOOPBACK) get the vocabulary, templates and catalog entries in the job, and must be given a
mirror and an output folder they can reach (gs://): a local one is refused. On Dataflow, p3data
stages itself for its workers unless --setup_file, --extra_package or --sdk_container_image is
given.

One run writes to an output folder at a time: a run holds the lock `<output>/.p3data-lock`
(owner, host, start time) and a second run says who holds it. If that run was killed on this
machine, `--force` takes the lock over; a run still alive, or one on another machine, is
never taken over (delete the lock by hand once that run has ended).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from p3data import fs
from p3data.builder.defaults import DEFAULT_MAX_ERROR_RATE, DEFAULT_SELECTION, SELECTIONS
from p3data.commands import console
from p3data.commands.extras import require
from p3data.commands.options import add_data_options, positive_int, rate
from p3data.datasets.hub import ENV_HUB_ROOT
from p3data.datasets.samples import SAMPLES_DIR
from p3data.datasets.shards import ROWS_PER_SHARD
from p3data.datasets.stores import ENV_DATA_DIR, ENV_MANUAL_DIR, manual_dir, mirror_dir
from p3data.errors import P3DataError

if TYPE_CHECKING:
    from p3data.builder.jobs import CacheConfig
    from p3data.taskset import TaskDef


def run(args: argparse.Namespace) -> int:
    from p3data import __version__
    from p3data.builder.driver import run_cache
    from p3data.builder.jobs import CacheConfig
    from p3data.builder.summary import summary_table
    from p3data.format.shard_format import SHARD_FORMATS
    from p3data.taskset import chosen, one_vocabulary
    from p3data.vocab import read_vocabulary

    require("apache_beam", "pyarrow")
    _check_data_dir(args.data_dir)
    if args.shard_format == "arrayrecord":
        from p3data.format.arrayrecord_shards import package

        package()  # or one line naming the extra
    specs = chosen(args.mixture, args.tasks)
    vocabulary = one_vocabulary(specs)  # the tasks' collection's: T0's T5, xP3's mT5
    config = CacheConfig(
        output_dir=fs.without_trailing_slash(args.output_dir),
        vocab_model=read_vocabulary(args.vocab or vocabulary.path()),
        extra_ids=vocabulary.extra_ids, data_dir=mirror_dir(args.data_dir),
        hub_root=args.hub_root or os.environ.get(ENV_HUB_ROOT), seed=args.seed, shards=args.shards,
        p3_layout=args.p3_layout, rows_per_shard=args.rows_per_shard,
        max_error_rate=args.max_error_rate, selection=args.selection, cap=args.cap,
        shard_format=args.shard_format)
    with (console.libraries_to_log(args.verbose, "cache") as stream,
          tempfile.TemporaryDirectory(prefix="p3data-staging-") as staging):
        from p3data.pipelines.cache import graph_runner  # Beam: its import talks too
        from p3data.pipelines.options import beam_pipeline
        from p3data.pipelines.workers import (
            check_submission_client,
            remote_workers,
            stage_p3data,
        )

        pipeline = beam_pipeline(args.beam_args, own_options=args.own_options)
        if workers := remote_workers(pipeline):
            _check_shared(_worker_paths(args, config, specs), workers)
        check_submission_client(pipeline)
        extra = SHARD_FORMATS[args.shard_format].extra  # what its workers write with
        if wheel := stage_p3data(pipeline, Path(staging), extras=[extra] if extra else []):
            print(f"[p3data cache] staging p3data {__version__} for Dataflow's workers: "
                  f"{wheel.name} (--extra_package; --setup_file, --extra_package or "
                  "--sdk_container_image stage your own instead)", file=stream, flush=True)
        result = run_cache(config, specs, run_graph=graph_runner(pipeline), splits=args.splits,
                           force=args.force, progress_every=args.progress_every, out=stream)
    with console.reader_may_leave(sys.stdout):
        print(summary_table(result))
    with console.reader_may_leave(sys.stderr):
        for text in result.tracebacks:
            print(text, file=sys.stderr)
    return 0 if result.ok else 1


def _check_data_dir(path: str | None) -> None:
    """A mirror folder given that is not one (missing, a file) fails every task alike: say it
    once. (A gs:// folder exists only as the prefix of the objects in it.)"""
    if path is not None and not (fs.is_dir(path) or fs.glob(fs.join(path, "*"))):
        raise P3DataError(f"{path}: not a folder, so no mirror of rows; give the folder p3data "
                          "fetch --to wrote", setting="rows")


def _worker_paths(args: argparse.Namespace, config: CacheConfig,
                  specs: Sequence[TaskDef]) -> dict[str, str]:
    """Every path a job's workers open themselves, by what set it: the output folder and
    where rows come from (the vocabulary, templates and catalog travel in the job)."""
    paths = {"--output-dir": args.output_dir}
    if config.data_dir is not None:
        source = ("--samples" if args.data_dir == str(SAMPLES_DIR) else
                  "--data-dir" if args.data_dir else f"${ENV_DATA_DIR}")
        paths[source] = config.data_dir
        return paths
    if config.hub_root:
        paths["--hub-root" if args.hub_root else f"${ENV_HUB_ROOT}"] = config.hub_root
    if any(spec.entry.manual_download for spec in specs):
        paths[f"${ENV_MANUAL_DIR} (files downloaded by hand)"] = str(manual_dir())
    return paths


def _check_shared(paths: dict[str, str], workers: str) -> None:
    for source, path in paths.items():
        if fs.machine_local(path):
            raise P3DataError(f"{source} {path}: only this machine can open it, not "
                              f"{workers}; give one on storage they share, e.g. gs://")


def register(commands: argparse._SubParsersAction) -> None:
    cache = commands.add_parser("cache", help="build seqio caches of tasks with Apache Beam",
                                description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    cache.add_argument("--mixture", action="append", default=[], metavar="NAME",
                       help="cache the tasks of this mixture (repeatable), e.g. t0_train")
    cache.add_argument("--tasks", action="append", default=[], metavar="REGEX",
                       help="cache tasks whose full name matches (repeatable)")
    cache.add_argument("--output-dir", required=True, help="cache root (local or gs://)")
    add_data_options(cache, max_rows=False, hub=True)
    cache.add_argument("--vocab", default=None,
                       help="SentencePiece model (default: $P3DATA_VOCAB, else the tasks' "
                       "collection's: T5's for T0, mT5's for xP3)")
    cache.add_argument("--shards", type=positive_int, default=None,
                       help="output shards per split (default: ~1 per 10k examples, max 64)")
    cache.add_argument("--shard-format", choices=("tfrecord", "arrayrecord"), default="tfrecord",
                       help="the shards' file format: TFRecord (seqio's, default) or ArrayRecord "
                            "(grain's; needs the arrayrecord extra); a cache "
                            "built in the other one is rebuilt")
    cache.add_argument("--splits", action="append", default=[], metavar="SPLIT",
                       help="only these task splits (repeatable), e.g. train")
    cache.add_argument("--seed", type=int, default=0,
                       help="seed of templates' random choices and of capped tasks' selection")
    cache.add_argument("--selection", choices=SELECTIONS, default=DEFAULT_SELECTION,
                       help="which examples a capped task (xP3's) keeps of each split: xP3's "
                            "rule, the smallest inputs in code point order, or a uniform "
                            f"sample; both seeded by --seed (default {DEFAULT_SELECTION})")
    cache.add_argument("--cap", type=positive_int, default=None, metavar="N",
                       help="examples a capped task (xP3's) keeps of each split, among 5N "
                            "candidate rows (default: xP3's cap, 100,000 of 500,000; wmt22's "
                            "candidates N/2, 50,000)")
    cache.add_argument("--p3-layout", action="store_true",
                       help="write P3's layout: data/<task>/, one shard per split, index CSV")
    cache.add_argument("--rows-per-shard", type=positive_int, default=ROWS_PER_SHARD,
                       help="source rows per unit of work: smaller means more parallelism")
    cache.add_argument("--max-error-rate", type=rate, default=DEFAULT_MAX_ERROR_RATE,
                       metavar="RATE",
                       help="fail a task split when more of its rows than this fail to render "
                            f"(default {DEFAULT_MAX_ERROR_RATE}; rows T0's rule drops by design "
                            "do not count)")
    cache.add_argument("--force", action="store_true",
                       help="take over the output folder's lock from a run on this machine "
                            "that has ended")
    cache.add_argument("--progress-every", type=float, default=10.0, metavar="SECONDS")
    cache.set_defaults(run=run, own_options=[o for a in cache._actions for o in a.option_strings])
