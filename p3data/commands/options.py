"""Command-line options and checks shared by several subcommands."""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING

from p3data.errors import P3DataError

if TYPE_CHECKING:
    from p3data.quality.validate import Lengths


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


def add_data_options(parser: argparse.ArgumentParser) -> None:
    """Where rows come from: the bundled samples or a local mirror, never the Hub."""
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--samples", action="store_true",
                        help="read the bundled sample rows (same as --data-dir <samples>)")
    source.add_argument("--data-dir", metavar="DIR",
                        help="a local mirror, DIR/<dataset>[/<subset>]/<split>.jsonl|parquet "
                             "(default: $P3DATA_DATA_DIR)")
    parser.add_argument("--max-rows", type=positive_int, metavar="N",
                        help="read at most N rows of each split (default: all)")


def cache_root(path: str) -> str:
    """A cache folder given on the command line, without a trailing slash; an error when there
    is nothing there. (A gs:// folder exists only as the prefix of the objects in it.)"""
    from p3data import fs

    root = path.rstrip("/") or path
    if not (fs.exists(root) or fs.glob(fs.join(root, "*"))):
        raise P3DataError(f"{path}: no such cache folder; build one with p3data cache "
                          f"--output-dir {path}")
    return root


@contextlib.contextmanager
def writing(path: object) -> Iterator[None]:
    """Failing to write an output the user named (no permission, no space, a folder in the
    way) is one error line, not a traceback."""
    try:
        yield
    except OSError as err:
        raise P3DataError(f"{path}: cannot write it ({err.strerror or err})") from None
