"""`p3data plan`: a training mixture's expected examples and tokens per task, as a dry run."""

from __future__ import annotations

import argparse
import json

from p3data.commands.options import positive_int
from p3data.errors import P3DataError


def run(args: argparse.Namespace) -> int:
    from p3data.quality.common import TokenCounter
    from p3data.quality.projection import as_json, format_plan, plan
    from p3data.taskset import load_definitions

    if (args.steps is None) != (args.batch_size is None):
        raise P3DataError("--steps and --batch-size go together")
    if args.steps is not None:
        examples, basis = args.steps * args.batch_size, (
            f"{args.steps:,} steps x {args.batch_size:,} examples per batch")
    else:
        examples, basis = args.examples, "as asked"
    result = plan(load_definitions(), args.mixture, TokenCounter(), examples=examples,
                  basis=basis)
    print(json.dumps(as_json(result), indent=2) if args.json else format_plan(result))
    return 0


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "plan", help="a training mixture's expected examples and tokens per task (no caching)")
    parser.add_argument("mixture", help="a training mixture, e.g. t0_train or t0_train_fewshot")
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--examples", type=positive_int, metavar="N",
                      help="examples drawn in training (default: the mixture's total rate)")
    size.add_argument("--steps", type=positive_int, metavar="S", help="training steps (with "
                      "--batch-size): examples = steps x batch size")
    parser.add_argument("--batch-size", type=positive_int, metavar="B", help="examples per step")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.set_defaults(run=run)
