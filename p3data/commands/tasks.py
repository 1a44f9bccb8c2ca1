"""`p3data list` and `p3data show`: T0's tasks and mixtures, without importing seqio."""

from __future__ import annotations

import argparse

from p3data import t0
from p3data.format.features import task_features


def list_tasks(args: argparse.Namespace) -> int:
    definitions = t0.load_definitions()
    names = definitions.mixture(args.mixture).tasks if args.mixture else definitions.tasks
    for name in sorted(names):
        print(name)
    return 0


def show_task(args: argparse.Namespace) -> int:
    definitions = t0.load_definitions()
    spec = definitions.task(args.task)
    template, entry = spec.template, spec.entry
    features = task_features(score_eval=spec.score_eval,
                             with_choices=template.answer_choices is not None)
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
    print("features:  " + "\n           ".join(
        f"{f.name}: {f.dtype}{' [None]' if f.sequence else ''} ({f.meaning})"
        for f in features.values()))
    for rule in sorted({definitions.mixtures[m].rate_rule for m in mixtures}):
        cap = spec.cap if rule == t0.MixtureSpec.RATE_RULE_BY_CAP else None
        print(f"rate:      {cap:,} ({rule})" if cap is not None else f"rate:      {rule}")
    print(f"mixtures:  {', '.join(mixtures) or '-'}")
    return 0


def register(commands: argparse._SubParsersAction) -> None:
    listing = commands.add_parser("list", help="task names, one per line")
    listing.add_argument("--mixture", help="only the tasks of this mixture, e.g. t0_train")
    listing.set_defaults(run=list_tasks)

    show = commands.add_parser("show", help="what a task is: dataset, template, splits, rate")
    show.add_argument("task")
    show.set_defaults(run=show_task)
