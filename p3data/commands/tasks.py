"""`p3data list` and `p3data show`: T0's tasks and mixtures and their few-shot variants, without
importing seqio."""

from __future__ import annotations

import argparse

from p3data import t0
from p3data.format.features import task_features


def list_tasks(args: argparse.Namespace) -> int:
    from p3data.fewshot import load_definitions

    definitions = load_definitions()
    names = (definitions.mixture_tasks(args.mixture) if args.mixture
             else [*definitions.t0.tasks, *definitions.variants])
    for name in sorted(names):
        print(name)
    return 0


def show_task(args: argparse.Namespace) -> int:
    from p3data.fewshot import VariantSpec, load_definitions, pool_source

    definitions = load_definitions()
    spec = definitions.task(args.task)
    variant = spec if isinstance(spec, VariantSpec) else None
    template, entry = spec.template, spec.entry
    features = task_features(score_eval=spec.score_eval,
                             with_choices=template.answer_choices is not None,
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
        f"{split} <- {source} ({entry.splits[source]:,} rows)"
        for split, source in spec.split_mapping.items()))
    if variant is not None:
        settings = variant.settings
        pools = sorted({pool_source(variant.base, split).split for split in spec.split_mapping})
        print(f"few-shot:  {variant.shots} exemplars of {variant.base.name} "
              f"(from {', '.join(pools)}), fitted to {settings.input_length:,} input tokens, "
              f"separators {settings.exemplar_separator!r} / {settings.example_separator!r}")
    print("features:  " + "\n           ".join(
        f"{f.name}: {f.dtype}{' [None]' if f.sequence else ''} ({f.meaning})"
        for f in features.values()))
    if variant is not None:
        mixtures = [m for m in definitions.variant_mixtures.values()
                    if variant.name in definitions.mixture_tasks(m.name)]
        for mixture in mixtures:
            share = f"{mixture.settings.share(variant.shots):.0%} of"
            rate = mixture.rate(variant)
            rule = (f"{rate:,.1f} ({share} T0's cap)" if rate is not None
                    else f"{share} {t0.MixtureSpec.RATE_RULE_BY_EXAMPLES}")
            print(f"rate:      {rule} in {mixture.name}")
        print(f"mixtures:  {', '.join(m.name for m in mixtures) or '-'}")
        return 0
    mixtures = [m.name for m in definitions.t0.mixtures.values() if spec.name in m.tasks]
    for rule in sorted({definitions.t0.mixtures[m].rate_rule for m in mixtures}):
        cap = spec.cap if rule == t0.MixtureSpec.RATE_RULE_BY_CAP else None
        print(f"rate:      {cap:,} ({rule})" if cap is not None else f"rate:      {rule}")
    print(f"mixtures:  {', '.join(mixtures) or '-'}")
    return 0


def register(commands: argparse._SubParsersAction) -> None:
    listing = commands.add_parser("list", help="task names, one per line")
    listing.add_argument("--mixture", help="only the tasks of this mixture, e.g. t0_train or "
                                           "t0_train_fewshot")
    listing.set_defaults(run=list_tasks)

    show = commands.add_parser("show", help="what a task is: dataset, template, splits, rate")
    show.add_argument("task")
    show.set_defaults(run=show_task)
