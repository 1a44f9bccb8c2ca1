"""`p3data verify CACHE_DIR`: check a cache strictly against its manifests (and another build).

Prints one line per problem or unfinished part, then `OK` (exit 0), `INCOMPLETE` (exit 1: a
run is writing it or crashed, but every complete task is sound) or `FAILED` (exit 1).

With --against-p3-counts, then sets each task split's example count beside the one P3
publishes: every difference, the task splits only one side has (a `_score_eval` twin of a
training task is left out of P3 by design), and a summary; exit 1 if any count differs.
"""

from __future__ import annotations

import argparse


def run(args: argparse.Namespace) -> int:
    from p3data.format.verify import verify_cache

    verdict = verify_cache(args.cache_dir, against=args.against)
    for line in verdict.unfinished + verdict.problems:
        print(line)
    extra = f", compared with {args.against}" if args.against else ""
    print(verdict.summary() + extra)
    if not args.against_p3_counts:
        return verdict.exit_code
    from p3data.p3_release.counts import check_counts

    check = check_counts(args.cache_dir)
    for line in check.lines():
        print(line)
    return max(verdict.exit_code, check.exit_code)


def register(commands: argparse._SubParsersAction) -> None:
    verify = commands.add_parser(
        "verify", help="check a cache strictly against its manifests", description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    verify.add_argument("cache_dir")
    verify.add_argument("--against", metavar="OTHER_CACHE",
                        help="also check another build and compare every file's checksum")
    verify.add_argument("--against-p3-counts", action="store_true",
                        help="also set each task split's example count beside P3's published "
                             "one")
    verify.set_defaults(run=run)
