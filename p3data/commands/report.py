"""`p3data report`: a built cache as a self-contained HTML page with plots, and Markdown.

Exit status: 0 when the report is written; 1 when it is written but a task was left out, is
not complete, or cannot be read (the warnings say which); 2 on bad input (no cache there).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from p3data.commands.extras import require
from p3data.commands.options import cache_root, positive_int, token_lengths, writing
from p3data.errors import P3DataError


def run(args: argparse.Namespace) -> int:
    from p3data.report.collect import collect
    from p3data.report.html import render_html
    from p3data.report.markdown import render_markdown
    from p3data.taskset import load_definitions

    require("matplotlib")
    start = time.perf_counter()
    out = Path(args.out)
    markdown = Path(args.markdown) if args.markdown else out.with_suffix(".md")
    for path in (out, markdown):
        refuse_unless_a_report(path)
    report = collect(cache_root(args.cache_dir), split=args.split, lengths=args.lengths,
                     max_records=args.max_records, definitions=load_definitions())
    pages = {out: render_html(report),
             markdown: render_markdown(report, out.name if markdown.parent == out.parent
                                       else str(out))}
    for path, text in pages.items():
        with writing(path):
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
    counts = report.totals
    print(f"{counts['tasks']:,} tasks, {counts['examples']:,} examples, "
          f"{len(report.mixtures)} mixtures; wrote {out} ({out.stat().st_size / 1e6:.1f} MB) "
          f"and {markdown} in {time.perf_counter() - start:.1f} s")
    for problem in report.problems:
        print(f"warning: {problem}", file=sys.stderr)
    return 1 if report.problems else 0


def refuse_unless_a_report(path: Path) -> None:
    """p3data writes over no file it did not write: a page or twin is written only where
    there is nothing, or a report p3data wrote (the page's title, the twin's heading)."""
    if not path.is_file():
        return  # nothing there (a folder in the way is an error when writing)
    with writing(path), path.open("rb") as handle:
        head = handle.read(1024)
    if b"<title>p3data report: " not in head and not head.startswith(b"# Cache report: `"):
        raise P3DataError(f"{path}: not a report p3data wrote, so it is not written over; "
                          "choose another file name")


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "report", help="a built cache as an HTML page with plots (and Markdown)",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("cache_dir", metavar="CACHE_DIR",
                        help="cache root (local, gs:// or any fsspec URL)")
    parser.add_argument("--out", required=True, metavar="FILE.html", help="the HTML page")
    parser.add_argument("--markdown", metavar="FILE.md",
                        help="the Markdown twin (default: beside the page, ending .md)")
    parser.add_argument("--split",
                        help="task split to read token lengths from (default: train)")
    parser.add_argument("--lengths", type=token_lengths, default="1024,256", metavar="IN,TGT",
                        help="limits to show truncation at; targets count their EOS "
                             "(default 1024,256)")
    parser.add_argument("--max-records", type=positive_int, default=1000, metavar="N",
                        help="token lengths from at most the first N records of each task "
                             "(default 1000)")
    parser.set_defaults(run=run)
