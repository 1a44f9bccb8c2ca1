"""`p3data list` and `p3data show`: the task set's tasks and mixtures (T0's, their few-shot
variants, any other collection's), without importing seqio."""

from __future__ import annotations

import argparse

from p3data import t0
from p3data.format.features import carries_choices, task_features
from p3data.tables import text_table
from p3data.taskset import MixtureDef, TaskDef, source_splits


def list_tasks(args: argparse.Namespace) -> int:
    from p3data.taskset import load_definitions

    definitions = load_definitions()
    if args.mixtures:
        rows = [[name, len(mixture.tasks), collection, mixture.rate_rule]
                for collection, part in definitions.parts.items()
                for name, mixture in part.mixtures.items()]
        print(text_table(["mixture", "tasks", "collection", "rates"], rows))
        return 0
    names = definitions.mixture(args.mixture).tasks if args.mixture else definitions.tasks
    for name in sorted(names):
        print(name)
    return 0


def show_task(args: argparse.Namespace) -> int:
    from p3data.fewshot import VariantSpec
    from p3data.fewshot.pool import pool_source
    from p3data.taskset import load_definitions

    definitions = load_definitions()
    spec = definitions.task(args.task)
    variant = spec if isinstance(spec, VariantSpec) else None
    template, entry = spec.template, spec.entry
    features = task_features(score_eval=spec.score_eval,
                             with_choices=carries_choices(template, spec.row_rule),
                             fewshot=variant is not None)
    print(f"task:      {spec.name}")
    print(f"dataset:   {entry.name}  (catalog: {entry.source})")
    print(f"template:  {template.name!r}  id {template.id}  ({template.origin}: {template.source})")
    kind = ("rank classification (one example per answer choice)" if spec.score_eval
            else "prompted text to text")
    print(f"kind:      {kind}")
    print(f"original task: {template.metadata.original_task}  metrics: "
          f"{', '.join(template.metadata.metrics or ()) or '-'}")
    print("splits:    " + ", ".join(
        f"{split} <- " + " + ".join(f"{source} ({entry.splits[source]:,} rows)"
                                    for source in source_splits(sources))
        for split, sources in spec.split_mapping.items()))
    if variant is not None:
        settings = variant.settings
        pools = sorted({pool_source(variant.base, split).split for split in spec.split_mapping})
        print(f"few-shot:  {variant.shots} exemplars of {variant.base.name} "
              f"(from {', '.join(pools)}), fitted to {settings.input_length:,} input tokens, "
              f"separators {settings.exemplar_separator!r} / {settings.example_separator!r}")
    print("features:  " + "\n           ".join(
        f"{f.name}: {f.dtype}{' [None]' if f.sequence else ''} ({f.meaning})"
        for f in features.values()))
    mixtures = [m for m in definitions.mixtures.values() if spec.name in m.tasks]
    for line in dict.fromkeys(_rate_line(mixture, spec) for mixture in mixtures):
        print(f"rate:      {line}")
    print(f"mixtures:  {', '.join(m.name for m in mixtures) or '-'}")
    return 0


def _rate_line(mixture: MixtureDef, spec: TaskDef) -> str:
    """A task's rate in a mixture: what it is (mixtures weighed by caps), else its rule; a
    task taking a share of its rule's rate is said per mixture."""
    share = mixture.share(spec)
    rate = mixture.rate(spec)
    if share == 1:
        return f"{rate:,} ({mixture.rate_rule})" if rate is not None else mixture.rate_rule
    part = f"{share:.0%} of"
    return (f"{rate:,.1f} ({part} T0's cap) in {mixture.name}" if rate is not None
            else f"{part} {t0.MixtureSpec.RATE_RULE_BY_EXAMPLES} in {mixture.name}")


def register(commands: argparse._SubParsersAction) -> None:
    listing = commands.add_parser("list", help="task names, one per line (or the mixtures)")
    which = listing.add_mutually_exclusive_group()
    which.add_argument("--mixture", help="only the tasks of this mixture, e.g. t0_train or "
                                         "t0_train_fewshot")
    which.add_argument("--mixtures", action="store_true",
                       help="the mixtures instead: name, tasks, collection, rate rule")
    listing.set_defaults(run=list_tasks)

    show = commands.add_parser("show", help="what a task is: dataset, template, splits, rate")
    show.add_argument("task")
    show.set_defaults(run=show_task)
