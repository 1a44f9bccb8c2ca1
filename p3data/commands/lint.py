"""`p3data lint`: check template files without rendering any data."""

from __future__ import annotations

import argparse
import sys


def run(args: argparse.Namespace) -> int:
    from p3data.quality.lint import lint

    result = lint(args.paths)
    for problem in result.problems:
        print(problem)
    print(f"{result.files} files, {result.templates} templates: {result.errors} errors, "
          f"{result.warnings} warnings", file=sys.stderr)
    return 1 if result.errors else 0


def register(commands: argparse._SubParsersAction) -> None:
    lint = commands.add_parser(
        "lint", help="check template files: YAML, Jinja, fields, answer_choices, metadata")
    lint.add_argument("paths", nargs="*", metavar="PATH",
                      help="template folders or templates.yaml files; default: promptsource's, "
                           "the project's templates/ and P3DATA_TEMPLATE_DIRS")
    lint.set_defaults(run=run)
