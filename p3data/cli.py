"""The `p3data` command line: one subcommand per job (see `p3data/commands/`).

Mistakes in what a user asks for end as one line `p3data: error: ...` and exit 2; a write the
storage refuses (a full disk) as one such line and exit 1; anything else is a bug in p3data
and keeps its traceback.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import os
import sys
import threading
import traceback
from collections.abc import Sequence
from typing import NoReturn

from p3data.commands import (
    cache,
    compare,
    console,
    export,
    fetch,
    index,
    lint,
    overlap,
    peek,
    plan,
    render,
    report,
    tasks,
    templates,
    validate,
    verify,
    vocab,
)
from p3data.commands.extras import missing_extra
from p3data.commands.options import option_hint
from p3data.errors import BUG, P3DataError, storage_refusal

COMMANDS = (render, tasks, fetch, cache, verify, compare, peek, vocab, lint, validate, plan,
            overlap, report, export, index, templates)


class _Parser(argparse.ArgumentParser):
    """argparse, but a mistake is one line (argparse prints the whole usage first)."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} -h)\n")


def build_parser() -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    """The parser, and each subcommand's own."""
    parser = _Parser(
        prog="p3data", description="T0's prompted tasks: render, register, cache, check.")
    parser.add_argument("-v", "--verbose", action="count", default=0,
                        help="also show the libraries' logs (TensorFlow, absl, Beam)")
    commands = parser.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        command.register(commands)
    return parser, commands.choices


def main(argv: Sequence[str] | None = None) -> int:
    parser, subcommands = build_parser()
    args, rest = parser.parse_known_args(argv)
    if rest and args.command != "cache":
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    args.beam_args = rest  # `p3data cache` hands unknown options to Beam
    console.configure(args.verbose)
    try:
        return args.run(args)
    except P3DataError as err:
        hint = option_hint(err, subcommands[args.command])
        print(f"p3data: error: {err}{hint}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # the reader went away, e.g. `p3data list | head`
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second complaint
        return 0
    except KeyboardInterrupt:
        print("p3data: interrupted", file=sys.stderr)
        return 130
    except Exception as err:
        if (missing := missing_extra(err, args.command)) is not None:
            print(f"p3data: error: {missing}", file=sys.stderr)
            return 2
        if (refusal := storage_refusal(err)) is not None:  # not a bug: the disk is full
            print(f"p3data: error: {refusal} (p3data {args.command} stopped there; what it had "
                  f"not finished is not marked complete: make room and run it again)",
                  file=sys.stderr)
            return 1
        traceback.print_exc()
        print(f"p3data: this is {BUG} above", file=sys.stderr)
        return 1


def run() -> NoReturn:
    """The `p3data` executable: `main`, then out without tearing the interpreter down.

    A cache run leaves millions of objects (task definitions, the tokenizer's memos, Beam's
    modules) whose one-by-one release at exit costs ~0.7 CPU-s. What p3data writes is closed
    and committed when `main` returns; threads are waited for and exit handlers run as at a
    normal exit, and only the memory is left to the system to take back."""
    code = main()
    for thread in threading.enumerate():
        if thread is not threading.main_thread() and not thread.daemon:
            thread.join()
    atexit._run_exitfuncs()  # what the interpreter's own exit runs first
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(BrokenPipeError, ValueError):  # reader gone, or closed
            stream.flush()
    os._exit(code)


if __name__ == "__main__":
    run()
