"""The `p3data` command line: one subcommand per job (see `p3data/commands/`)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from p3data.commands import (
    cache,
    lint,
    overlap,
    peek,
    plan,
    render,
    report,
    tasks,
    validate,
    verify,
    vocab,
)
from p3data.errors import P3DataError

COMMANDS = (render, tasks, cache, verify, peek, vocab, lint, validate, plan, overlap,
            report)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="p3data", description="T0's prompted tasks: render, register, cache, check.")
    commands = parser.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        command.register(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args, rest = parser.parse_known_args(argv)
    if rest and args.command != "cache":
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    args.beam_args = rest  # `p3data cache` hands unknown options to Beam
    try:
        return args.run(args)
    except (P3DataError, KeyError) as err:
        message = err.args[0] if isinstance(err, KeyError) and err.args else err
        print(f"p3data: error: {message}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
