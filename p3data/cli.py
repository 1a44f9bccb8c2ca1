"""The `p3data` command line."""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Sequence
from itertools import islice

from p3data.errors import P3DataError
from p3data.rows import iter_jsonl
from p3data.templates import (
    DatasetRenderer,
    Dropped,
    TemplateCollection,
    parse_dataset_key,
)

RENDER_BATCH = 512


def _render(args: argparse.Namespace) -> int:
    dataset, subset = parse_dataset_key(args.dataset)
    templates = TemplateCollection.default(args.templates).get(dataset, subset)
    chosen = [templates[name] for name in args.template] if args.template else list(templates)
    renderer = DatasetRenderer(chosen, seed=args.seed)
    for err in renderer.broken.values():
        print(f"error: {err}", file=sys.stderr)
    counts: Counter[str] = Counter()
    rows = iter_jsonl(args.rows)
    start = 0
    while batch := list(islice(rows, RENDER_BATCH)):
        outcomes = renderer.render_batch(batch, start)
        for offset in range(len(batch)):
            for name, per_row in outcomes.items():
                outcome = per_row[offset]
                record = {"dataset": dataset, "subset": subset, "template": name,
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


def _definitions():
    from p3data import t0
    from p3data.catalog import Catalog

    return t0.define(Catalog.load(), TemplateCollection.default())


def _list(args: argparse.Namespace) -> int:
    definitions = _definitions()
    if args.mixture:
        if args.mixture not in definitions.mixtures:
            raise P3DataError(f"unknown mixture {args.mixture!r}; known: "
                              + ", ".join(definitions.mixtures))
        names = definitions.mixtures[args.mixture].tasks
    else:
        names = definitions.tasks
    for name in sorted(names):
        print(name)
    return 0


def _show(args: argparse.Namespace) -> int:
    import difflib

    definitions = _definitions()
    spec = definitions.tasks.get(args.task)
    if spec is None:
        close = difflib.get_close_matches(args.task, definitions.tasks, n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise P3DataError(f"no task named {args.task!r}{hint}")
    template, entry = spec.template, spec.entry
    features = ["inputs: int32 [None] (prompt token ids, no EOS)",
                "targets: int32 [None] (token ids + EOS)",
                "inputs_pretokenized: string", "targets_pretokenized: string"]
    if spec.score_eval:
        features += ["idx: int32 [2] (example, choice)", "is_correct: bool",
                     "weight: float32 (1.0)"]
    elif template.answer_choices is not None:
        features.append("answer_choices: string [None]")
    mixtures = [m.name for m in definitions.mixtures.values() if spec.name in m.tasks]
    print(f"task:      {spec.name}")
    print(f"dataset:   {entry.name}  (catalog: {entry.source})")
    print(f"template:  {template.name!r}  id {template.id}  ({template.origin}: {template.source})")
    kind = ("rank classification (one example per answer choice)" if spec.score_eval
            else "prompted text to text")
    print(f"kind:      {kind}")
    print(f"original task: {template.metadata.original_task}  metrics: "
          f"{', '.join(template.metadata.metrics or ()) or '-'}")
    print("splits:    " + ", ".join(
        f"{split} <- {source} ({entry.splits[source]:,} rows)"
        for split, source in spec.split_mapping.items()))
    print("features:  " + "\n           ".join(features))
    print(f"rate:      {spec.cap:,} (T0 training cap)")
    print(f"mixtures:  {', '.join(mixtures) or '-'}")
    return 0


def _vocab(args: argparse.Namespace) -> int:
    from p3data.catalog import Catalog
    from p3data.samples import rendered_texts
    from p3data.vocab import train_vocabulary

    path = train_vocabulary(rendered_texts(Catalog.load(), TemplateCollection.default()),
                            args.out, args.size)
    print(f"wrote {path}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="p3data", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    render = commands.add_parser(
        "render", help="apply a dataset's templates to rows (JSON Lines in, JSON Lines out)"
    )
    render.add_argument("dataset", help="DATASET or DATASET/SUBSET, e.g. super_glue/copa")
    render.add_argument("--template", action="append", default=[], metavar="NAME",
                        help="render only this template (repeatable); default: all")
    render.add_argument("--rows", required=True, metavar="FILE.jsonl", help="one row per line")
    render.add_argument("--seed", type=int, default=0, help="seed of the `choice` filter")
    render.add_argument("--dropped", action="store_true",
                        help="also print dropped (row, template) pairs with the reason")
    render.add_argument("--templates", action="append", default=[], metavar="DIR",
                        help="extra template folder layered on top (repeatable)")
    render.set_defaults(run=_render)

    listing = commands.add_parser("list", help="task names, one per line")
    listing.add_argument("--mixture", help="only the tasks of this mixture, e.g. t0_train")
    listing.set_defaults(run=_list)

    show = commands.add_parser("show", help="what a task is: dataset, template, splits, rate")
    show.add_argument("task")
    show.set_defaults(run=_show)

    vocab = commands.add_parser(
        "vocab", help="train an offline SentencePiece model on the rendered samples")
    vocab.add_argument("--out", required=True, help="where to write the .model file")
    vocab.add_argument("--size", type=int, default=8000, help="vocabulary size (before extra ids)")
    vocab.set_defaults(run=_vocab)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except (P3DataError, KeyError) as err:
        message = err.args[0] if isinstance(err, KeyError) and err.args else err
        print(f"p3data: error: {message}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
