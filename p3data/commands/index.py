"""`p3data index CACHE_DIR`: write the record index of every output shard that has none, so that
readers can fetch example i directly (`p3data.read`: `cache.split(task, split)[i]`).

For caches built without indexes: by stock `seqio_cache_tasks`, P3's `data/<task>/` folders, or
an older p3data (its manifests then list the new files, so `p3data verify` still passes).
`p3data cache` writes them itself. Resumable: indexes already there are kept. Holds the
cache's lock while it runs; prints a progress line on stderr and a summary.
"""

from __future__ import annotations

import argparse
import sys

from p3data.commands.options import seconds


def run(args: argparse.Namespace) -> int:
    from p3data.read.indexing import index_cache

    result = index_cache(args.cache_dir, force=args.force, progress_every=args.progress_every,
                         out=sys.stderr)
    print(result.summary())
    return 0


def register(commands: argparse._SubParsersAction) -> None:
    index = commands.add_parser(
        "index", help="write the record indexes of a cache (random access by example number)",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    index.add_argument("cache_dir", metavar="CACHE_DIR",
                       help="a cache: p3data's, seqio_cache_tasks', or P3's (local or gs://)")
    index.add_argument("--force", action="store_true",
                       help="take the cache's lock over from a run that is dead")
    index.add_argument("--progress-every", type=seconds, default=10.0, metavar="SECONDS",
                       help="a progress line on stderr this often (default 10)")
    index.set_defaults(run=run)
