"""`p3data verify CACHE_DIR`: check a cache against its manifests (and another build)."""

from __future__ import annotations

import argparse


def run(args: argparse.Namespace) -> int:
    from p3data.cache.verify import compare, task_folders, verify_task

    folders = task_folders(args.cache_dir)
    problems = [p for folder in folders for p in verify_task(folder)]
    if args.against:
        problems += compare(args.cache_dir, args.against)
    for problem in problems:
        print(problem)
    verdict = "FAILED" if problems else "OK"
    extra = f", compared with {args.against}" if args.against else ""
    print(f"{verdict}: {len(folders)} tasks checked, {len(problems)} problems{extra}")
    return 1 if problems or not folders else 0


def register(commands: argparse._SubParsersAction) -> None:
    verify = commands.add_parser("verify", help="check a cache against its manifests")
    verify.add_argument("cache_dir")
    verify.add_argument("--against", metavar="OTHER_CACHE",
                        help="also compare every file's checksum with another build")
    verify.set_defaults(run=run)
