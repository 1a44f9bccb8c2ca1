"""`p3data render`: apply a dataset's templates to rows (.jsonl or .parquet in, JSON Lines out)."""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

from p3data.batching import row_batches
from p3data.dataset_key import DatasetKey
from p3data.datasets.rows import RowFile
from p3data.templates import TemplateCollection
from p3data.templates.render import DatasetRenderer, Dropped


def run(args: argparse.Namespace) -> int:
    key = DatasetKey.parse(args.dataset)
    templates = TemplateCollection.default(args.templates)[key]
    chosen = [templates[name] for name in args.template] if args.template else list(templates)
    renderer = DatasetRenderer(chosen, seed=args.seed)
    for err in renderer.broken.values():
        print(f"error: {err}", file=sys.stderr)
    counts: Counter[str] = Counter()
    start = 0
    for batch in row_batches(RowFile(Path(args.rows)).rows()):
        outcomes = renderer.render_batch(batch, start)
        for offset in range(len(batch)):
            for name, per_row in outcomes.items():
                outcome = per_row[offset]
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
    print(f"{start} rows x {len(renderer.templates)} templates: {summary or 'nothing'}",
          file=sys.stderr)
    return 1 if renderer.broken else 0


def register(commands: argparse._SubParsersAction) -> None:
    render = commands.add_parser(
        "render",
        help="apply a dataset's templates to rows (JSON Lines or parquet in, JSON Lines out)"
    )
    render.add_argument("dataset", help="DATASET or DATASET/SUBSET, e.g. super_glue/copa")
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
