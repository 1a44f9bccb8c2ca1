"""Command-line options and checks shared by several subcommands."""

from __future__ import annotations

import argparse
import contextlib
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING

from p3data.datasets.hub import ENV_HUB_ROOT
from p3data.datasets.samples import SAMPLES_DIR
from p3data.datasets.stores import ENV_DATA_DIR
from p3data.errors import P3DataError

if TYPE_CHECKING:
    from p3data.quality.validate import Lengths


# The options that set what `P3DataError.setting` names.
SETTING_OPTIONS = {
    "vocab": ("--vocab",),
    "rows": ("--data-dir", "--samples"),
    "tasks": ("--mixture", "--tasks"),
    "task_pattern": ("--tasks",),
    "lock": ("--force",),
    "split": ("--split",),
}


def option_hint(error: P3DataError, parser: argparse.ArgumentParser) -> str:
    """` (--vocab)`: the options of `parser` that set what `error` says to change, if any."""
    usage = parser.format_usage()
    options = [o for o in SETTING_OPTIONS.get(error.setting or "", ())
               if re.search(rf"(?<![\w-]){re.escape(o)}(?![\w-])", usage)]
    return f" ({', '.join(options)})" if options else ""


def positive_int(text: str) -> int:
    """An argparse type: a whole number above zero."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number above 0, not {text!r}")
    return value


def rate(text: str) -> float:
    """An argparse type: a share between 0 and 1."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value <= 1:  # also refuses nan
        raise argparse.ArgumentTypeError(f"expected a rate between 0 and 1, not {text!r}")
    return value


def token_lengths(text: str) -> Lengths:
    """An argparse type: token limits as INPUTS,TARGETS, e.g. 1024,256."""
    from p3data.quality.validate import Lengths

    try:
        return Lengths.parse(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def add_hub_option(parser: argparse.ArgumentParser) -> None:
    """Where "the Hub" is, as `args.hub_root`: a copy of its layout, or None for the Hub."""
    parser.add_argument("--hub-root", metavar="URL",
                        help="read the Hub from a copy laid out as URL/<owner>/<name>/"
                             f"<revision>/<path> (default: ${ENV_HUB_ROOT}, else the Hub)")


def add_data_options(parser: argparse.ArgumentParser, *, max_rows: bool,
                     hub: bool = False) -> None:
    """Where rows come from, as `args.data_dir`: a local mirror or the bundled samples (the
    `data_dir` of `stores.mirror_dir`); with `hub`, no mirror means manual files or the Hub;
    with `max_rows`, how many rows of each split to read."""
    otherwise = ", else the manual folder or the Hub" if hub else ""
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--data-dir", metavar="DIR",
                        help="a mirror (a folder or any fsspec URL, e.g. gs://), "
                             "DIR/<dataset>[/<subset>]/<split>.jsonl|parquet "
                             f"(default: ${ENV_DATA_DIR}{otherwise})")
    source.add_argument("--samples", action="store_const", dest="data_dir",
                        const=str(SAMPLES_DIR),
                        help="read the bundled sample rows: the samples folder as --data-dir, and "
                             "xP3's families made by rule (docs/xp3.md)")
    if hub:
        add_hub_option(parser)
    if max_rows:
        parser.add_argument("--max-rows", type=positive_int, metavar="N",
                            help="read at most N rows of each split (default: all)")


def cache_root(path: str) -> str:
    """A cache folder given on the command line, without a trailing slash; an error when there
    is nothing there, or a file. (A gs:// folder exists only as the prefix of the objects in
    it.)"""
    from p3data import fs

    root = fs.without_trailing_slash(path)
    if not (fs.exists(root) or fs.glob(fs.join(root, "*"))):
        raise P3DataError(f"{path}: no such cache folder; build one with p3data cache "
                          f"--output-dir {path}")
    if fs.exists(root) and not fs.is_dir(root):
        raise P3DataError(f"{path}: is a file, not a cache folder; give the folder p3data cache "
                          "wrote")
    return root


def seconds(text: str) -> float:
    """An argparse type: a number of seconds, 0 or more."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value < float("inf"):  # also refuses nan
        raise argparse.ArgumentTypeError(f"expected a number of seconds, not {text!r}")
    return value


@contextlib.contextmanager
def writing(path: object) -> Iterator[None]:
    """Failing to write an output the user named (no permission, no space, a folder in the
    way) is one error line, not a traceback."""
    try:
        yield
    except OSError as err:
        raise P3DataError(f"{path}: cannot write it ({err.strerror or err})") from None
