"""`p3data render`: apply a dataset's templates to rows (.jsonl or .parquet in, JSON Lines out).

T0's templates by default; `--collection xp3|xp3mt` renders a config of xP3's recipe as its
tasks do (their templates, dataset step and row rule), named as the recipe spells it
(`xnli/sw`, `GEM/wiki_lingua/hi_en`).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from p3data.batching import row_batches
from p3data.dataset_key import DatasetKey
from p3data.datasets.rows import RowFile
from p3data.errors import NotFoundError
from p3data.t0 import TaskSpec
from p3data.taskset import load_definitions
from p3data.templates import TemplateCollection
from p3data.templates.render import DatasetRenderer, Dropped, Outcome


def t0_renderers(args: argparse.Namespace) -> tuple[DatasetKey, list[DatasetRenderer]]:
    key = DatasetKey.parse(args.dataset)
    templates = TemplateCollection.default(args.templates)[key]
    chosen = [templates[name] for name in args.template] if args.template else list(templates)
    return key, [DatasetRenderer(chosen, seed=args.seed)]


def collection_renderers(args: argparse.Namespace) -> tuple[DatasetKey, list[DatasetRenderer]]:
    """The renderers of the tasks of one config of a collection (`xp3`), one per row rule,
    each with the config's dataset step."""
    tasks = load_definitions((args.collection,)).part(args.collection).tasks.values()
    specs = [spec for spec in tasks if spec.entry.name == args.dataset]
    if not specs:
        raise NotFoundError.unknown(f"{args.collection} dataset", args.dataset,
                                    list(dict.fromkeys(spec.entry.name for spec in tasks)))
    templates = {spec.template.name: spec for spec in specs}
    if missing := [name for name in args.template if name not in templates]:
        raise NotFoundError.unknown(f"template of {args.dataset}", missing[0], templates)
    chosen = [templates[name] for name in args.template] if args.template else specs
    return spec_renderers(chosen, seed=args.seed)


def spec_renderers(specs: Sequence[TaskSpec], *, seed: int
                   ) -> tuple[DatasetKey, list[DatasetRenderer]]:
    """The dataset these tasks read (one config of a collection) and their renderers, one
    per row rule, each applying the dataset's step."""
    rules = list(dict.fromkeys(spec.row_rule for spec in specs))
    key = specs[0].entry.key
    return key, [DatasetRenderer([s.template for s in specs if s.row_rule == rule], seed=seed,
                                 rule=rule, step=specs[0].dataset_step, config=key.subset)
                 for rule in rules]


def render_rows(renderers: Sequence[DatasetRenderer], rows: Sequence[Mapping[str, Any]],
                start: int) -> list[dict[str, Outcome]]:
    """Per row (numbered from `start`): each template's outcome."""
    outcomes: list[dict[str, Outcome]] = [{} for _ in rows]
    for renderer in renderers:
        for name, per_row in renderer.render_each(rows, start):
            for offset, outcome in enumerate(per_row):
                outcomes[offset][name] = outcome
    return outcomes


def run(args: argparse.Namespace) -> int:
    key, renderers = collection_renderers(args) if args.collection else t0_renderers(args)
    broken = [err for renderer in renderers for err in renderer.broken.values()]
    for err in broken:
        print(f"error: {err}", file=sys.stderr)
    counts: Counter[str] = Counter()
    start = 0
    for batch in row_batches(RowFile(Path(args.rows)).rows()):
        for per_row in render_rows(renderers, batch, start):
            for name, outcome in per_row.items():
                record = {"dataset": key.dataset, "subset": key.subset, "template": name,
                          "row": outcome.index}
                if isinstance(outcome, Dropped):
                    counts[outcome.reason] += 1
                    if outcome.error is not None:
                        print(f"warning: {outcome.error}", file=sys.stderr)
                    if not args.dropped:
                        continue
                    record["dropped"] = outcome.reason
                    if outcome.error is not None:
                        record["error"] = str(outcome.error)
                else:
                    counts["kept"] += 1
                    record.update(inputs=outcome.inputs, targets=outcome.targets,
                                  answer_choices=outcome.answer_choices)
                print(json.dumps(record, ensure_ascii=False))
        start += len(batch)
    summary = ", ".join(f"{reason} {n}" for reason, n in sorted(counts.items()))
    templates = sum(len(renderer.templates) for renderer in renderers)
    print(f"{start} rows x {templates} templates: {summary or 'nothing'}", file=sys.stderr)
    return 1 if broken else 0


def register(commands: argparse._SubParsersAction) -> None:
    render = commands.add_parser(
        "render",
        help="apply a dataset's templates to rows (JSON Lines or parquet in, JSON Lines out)"
    )
    render.add_argument("dataset", help="DATASET or DATASET/SUBSET, e.g. super_glue/copa "
                        "(with --collection, as the recipe spells it: GEM/wiki_lingua/hi_en)")
    render.add_argument("--collection", choices=("xp3", "xp3mt"),
                        help="render as this collection's tasks do (their templates, dataset "
                             "step and row rule); default: T0's templates")
    render.add_argument("--template", action="append", default=[], metavar="NAME",
                        help="render only this template (repeatable); default: all")
    render.add_argument("--rows", required=True, metavar="FILE",
                        help="the rows: FILE.parquet, or JSON Lines (one object per line)")
    render.add_argument("--seed", type=int, default=0, help="seed of the `choice` filter")
    render.add_argument("--dropped", action="store_true",
                        help="also print dropped (row, template) pairs with the reason")
    render.add_argument("--templates", action="append", default=[], metavar="DIR",
                        help="extra template folder layered on top (repeatable)")
    render.set_defaults(run=run)
