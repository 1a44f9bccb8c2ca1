"""`p3data validate`: render and tokenize real rows, report per task, fail on thresholds."""

from __future__ import annotations

import argparse
import json
import sys

from p3data.commands.options import add_data_options, rate, token_lengths


def run(args: argparse.Namespace) -> int:
    from p3data.quality.common import TokenCounter, data_root
    from p3data.quality.validate import Thresholds, as_json, format_report, validate
    from p3data.taskset import chosen

    mixtures = [args.mixture] if args.mixture else []
    specs = chosen(mixtures, args.tasks)
    root = data_root(args.data_dir)
    tokens = TokenCounter(args.vocab) if args.vocab else TokenCounter()
    result = validate(specs, root, tokens, lengths=args.lengths, split=args.split,
                      max_rows=args.max_rows)
    thresholds = Thresholds(args.max_drop_rate, args.max_truncated_rate,
                            args.max_off_choice_rate)
    violations = [v for report in result.reports for v in thresholds.violations(report)]
    if args.json:
        print(json.dumps(as_json(result, thresholds), indent=2, ensure_ascii=False))
    else:
        print(format_report(result))
    for violation in violations:
        print(f"fail: {violation}", file=sys.stderr)
    return 1 if violations else 0


def register(commands: argparse._SubParsersAction) -> None:
    validate = commands.add_parser(
        "validate", help="render and tokenize real rows: drops, labels, duplicates, lengths")
    validate.add_argument("--mixture", metavar="NAME",
                          help="a T0 or few-shot mixture, e.g. t0_train, t0_train_fewshot")
    validate.add_argument("--tasks", action="append", default=[], metavar="REGEX",
                          help="tasks whose names fully match (repeatable); with --mixture, "
                               "only that mixture's")
    add_data_options(validate, max_rows=True)
    validate.add_argument("--json", action="store_true", help="print JSON instead of a table")
    validate.add_argument("--split", help="task split to read (default: train; validation for "
                                          "score-eval tasks)")
    validate.add_argument("--lengths", type=token_lengths, default="1024,256", metavar="IN,TGT",
                          help="T0's token lengths; targets count their EOS (default 1024,256)")
    validate.add_argument("--vocab", metavar="FILE.model",
                          help="SentencePiece model (default: the offline sample vocabulary; "
                               "pass T5's for T0's real counts)")
    for name, what in (("drop", "rows dropped by the template"),
                       ("truncated", "kept examples cut by --lengths"),
                       ("off-choice", "targets outside the answer choices")):
        validate.add_argument(f"--max-{name}-rate", type=rate, metavar="RATE",
                              help=f"fail (exit 1) when a task's rate of {what} is higher")
    validate.set_defaults(run=run)
