"""Command-line options shared by several subcommands."""

from __future__ import annotations

import argparse


def positive_int(text: str) -> int:
    """An argparse type: a whole number above zero."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number above 0, not {text!r}")
    return value


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
