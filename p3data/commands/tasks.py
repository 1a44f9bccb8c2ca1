"""`p3data list` and `p3data show`: T0's tasks and mixtures, without importing seqio."""

from __future__ import annotations

import argparse
import difflib

from p3data import t0
from p3data.errors import P3DataError
from p3data.format.features import task_features


def list_tasks(args: argparse.Namespace) -> int:
    definitions = t0.load_definitions()
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


def task_named(definitions: t0.T0Definitions, name: str) -> t0.TaskSpec:
    """The task called `name`, or an error suggesting the names it may be a typo of."""
    spec = definitions.tasks.get(name)
    if spec is not None:
        return spec
    if name in definitions.mixtures:
        raise P3DataError(f"{name!r} is a mixture, not a task; its tasks: "
                          f"p3data list --mixture {name}")
    close = difflib.get_close_matches(name, definitions.tasks, n=3)
    hint = f"; did you mean {', '.join(close)}?" if close else "; see p3data list"
    raise P3DataError(f"no task named {name!r}{hint}")


def show_task(args: argparse.Namespace) -> int:
    definitions = t0.load_definitions()
    spec = task_named(definitions, args.task)
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
