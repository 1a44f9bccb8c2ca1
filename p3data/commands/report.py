"""`p3data report`: a built cache as a self-contained HTML page with plots, and Markdown."""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import TYPE_CHECKING

from p3data.commands.options import positive_int
from p3data.errors import P3DataError

if TYPE_CHECKING:
    from p3data.quality.validate import Lengths


def run(args: argparse.Namespace) -> int:
    from p3data import t0
    from p3data.quality.report import collect, render_html, render_markdown, totals

    if not Path(args.cache_dir).is_dir():
        raise P3DataError(f"{args.cache_dir}: no such cache folder")
    start = time.perf_counter()
    report = collect(args.cache_dir.rstrip("/"), args.split, args.lengths, args.max_records,
                     t0.load_definitions())
    out = Path(args.out)
    markdown = Path(args.markdown) if args.markdown else out.with_suffix(".md")
    for folder in {out.parent, markdown.parent}:
        folder.mkdir(parents=True, exist_ok=True)
    out.write_text(render_html(report), encoding="utf-8")
    markdown.write_text(render_markdown(report, out.name if markdown.parent == out.parent
                                        else str(out)), encoding="utf-8")
    counts = totals(report)
    print(f"{counts['tasks']:,} tasks, {counts['examples']:,} examples, "
          f"{len(report.mixtures)} mixtures; wrote {out} ({out.stat().st_size / 1e6:.1f} MB) "
          f"and {markdown} in {time.perf_counter() - start:.1f} s")
    for problem in report.problems:
        print(f"warning: {problem}")
    return 0 if report.tasks else 1


def _lengths(text: str) -> Lengths:
    from p3data.quality.validate import Lengths

    try:
        return Lengths.parse(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "report", help="a built cache as an HTML page with plots (and Markdown)")
    parser.add_argument("cache_dir", metavar="CACHE_DIR", help="cache root (local or gs://)")
    parser.add_argument("--out", required=True, metavar="FILE.html", help="the HTML page")
    parser.add_argument("--markdown", metavar="FILE.md",
                        help="the Markdown twin (default: beside the page, ending .md)")
    parser.add_argument("--split", default="train",
                        help="task split to read token lengths from (default: train)")
    parser.add_argument("--lengths", type=_lengths, default="1024,256", metavar="IN,TGT",
                        help="limits to show truncation at; targets count their EOS "
                             "(default 1024,256)")
    parser.add_argument("--max-records", type=positive_int, default=1000, metavar="N",
                        help="token lengths from at most the first N records of each task "
                             "(default 1000)")
    parser.set_defaults(run=run)
