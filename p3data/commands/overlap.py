"""`p3data overlap`: datasets and n-grams a training mixture shares with an evaluation one."""

from __future__ import annotations

import argparse
import json
import sys

from p3data.commands.options import add_data_options, positive_int, writing


def run(args: argparse.Namespace) -> int:
    from p3data.quality.common import data_root
    from p3data.quality.overlap import as_json, exclusions, format_report, overlap
    from p3data.taskset import load_definitions

    root = data_root(args.data_dir)
    report = overlap(load_definitions(), args.train, args.eval, root, n=args.n,
                     train_split=args.train_split, eval_split=args.eval_split,
                     max_rows=args.max_rows)
    print(json.dumps(as_json(report), indent=2, ensure_ascii=False) if args.json
          else format_report(report))
    if args.exclude_out:
        rows = exclusions(report)
        with writing(args.exclude_out), open(args.exclude_out, "w", encoding="utf-8") as out:
            out.writelines(json.dumps(row) + "\n" for row in rows)
        print(f"wrote {len(rows)} training rows to exclude to {args.exclude_out}",
              file=sys.stderr)
    return 1 if report.found or report.missing else 0


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "overlap", help="contamination: datasets and n-grams shared by training and evaluation")
    parser.add_argument("--train", required=True, metavar="MIXTURE", help="e.g. t0++_train")
    parser.add_argument("--eval", required=True, metavar="MIXTURE",
                        help="e.g. t0_eval_score_eval")
    parser.add_argument("--n", type=positive_int, default=13,
                        help="words per n-gram (default 13)")
    parser.add_argument("--train-split", default="train", help="task split trained on")
    parser.add_argument("--eval-split", default="validation", help="task split evaluated on")
    parser.add_argument("--exclude-out", metavar="FILE.jsonl",
                        help="write the overlapping training rows as {task, split, row} lines")
    add_data_options(parser, max_rows=True)
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.set_defaults(run=run)
