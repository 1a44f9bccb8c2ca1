"""`p3data compare CACHE_DIR P3_DIR`: a build beside a downloaded copy of P3, example by example.

P3_DIR (any filesystem fsspec knows: a local folder, gs://, s3://...) holds P3's seqio
caches, `data/<task>/<split>.tfrecord-00000-of-00001`, or its per-task parquet files,
`[data/]<task>/<split>-00000-of-00001.parquet`. For every task both hold, each split's examples
are compared in order: counts, token ids, texts (exactly, and without surrounding whitespace,
which P3's tasks cached before 2021-10-01 keep), answer_choices, idx, is_correct, weight.

Prints a table (task, split, examples here and in P3, then per kind of field `equal` or how
many examples differ), the first differences of each task split that disagrees, and a summary.
Exit 0 when counts and every field agree (texts differing only in surrounding whitespace are
reported, not failed), else 1.
"""

from __future__ import annotations

import argparse

from p3data.commands.extras import require
from p3data.commands.options import cache_root, seconds
from p3data.errors import P3DataError


def run(args: argparse.Namespace) -> int:
    from p3data import fs
    from p3data.p3_release.compare import compare_with_p3

    require("pyarrow")
    if fs.exists(args.p3_dir) and not fs.is_dir(args.p3_dir):
        raise P3DataError(f"{args.p3_dir}: is a file, not a folder; give the folder that holds "
                          "a copy of P3 (its data/ or its task folders)")
    comparison = compare_with_p3(cache_root(args.cache_dir), args.p3_dir,
                                 progress_every=args.progress_every)
    for line in comparison.lines():
        print(line)
    return comparison.exit_code


def register(commands: argparse._SubParsersAction) -> None:
    compare = commands.add_parser(
        "compare", help="compare a cache with a downloaded copy of P3, example by example",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    compare.add_argument("cache_dir", metavar="CACHE_DIR", help="a cache p3data cache wrote")
    compare.add_argument("p3_dir", metavar="P3_DIR",
                         help="a copy of bigscience/P3: its data/<task>/ TFRecord folders or "
                              "its per-task parquet files")
    compare.add_argument("--progress-every", type=seconds, default=10.0, metavar="SECONDS",
                         help="a progress line on stderr this often (default 10)")
    compare.set_defaults(run=run)
