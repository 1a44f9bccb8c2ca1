"""T0's tasks and mixtures with their few-shot variants, as one set of definitions to choose
from: what `import p3data.tasks` registers, and what `p3data cache`, `validate`, `plan` and
`overlap` select tasks among (a `--tasks` pattern matches variant names too).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import p3data.t0 as t0
from p3data.errors import NotFoundError, P3DataError
from p3data.fewshot.settings import FewshotSettings
from p3data.fewshot.variants import (
    VariantMixture,
    VariantSpec,
    all_variants,
    default_variant_mixtures,
)

AnySpec = t0.TaskSpec | VariantSpec  # a task the builder can build


@dataclass(frozen=True)
class Definitions:
    """T0's definitions (`t0`), every T0 task's variants by name, and the variant mixtures."""

    t0: t0.T0Definitions
    variants: dict[str, VariantSpec]
    variant_mixtures: dict[str, VariantMixture]

    @property
    def mixture_names(self) -> list[str]:
        return [*self.t0.mixtures, *self.variant_mixtures]

    def task(self, name: str) -> AnySpec:
        """A T0 task or a variant by name, or the one error for an unknown name."""
        variant = self.variants.get(name)
        return variant if variant is not None else self.t0.task(name)

    def mixture_tasks(self, name: str) -> list[str]:
        """The task names of a T0 or variant mixture, in the mixture's order."""
        if name in self.variant_mixtures:
            return [v.name for v in self.variant_mixtures[name].variants(self.t0)]
        if name not in self.t0.mixtures:
            raise NotFoundError.unknown("mixture", name, self.mixture_names, setting="tasks")
        return list(self.t0.mixtures[name].tasks)

    def select(self, mixtures: Sequence[str] = (),
               patterns: Sequence[str] = ()) -> list[AnySpec]:
        """The tasks of the given mixtures, narrowed (or, without mixtures, chosen among all,
        variants included) by regexes that must match whole task names, as `t0.select`."""
        if not mixtures and not patterns:
            raise P3DataError("no tasks chosen: name mixtures or task patterns",
                              setting="tasks")
        names = (list(dict.fromkeys(n for name in mixtures for n in self.mixture_tasks(name)))
                 if mixtures else [*self.t0.tasks, *self.variants])
        if patterns:
            names = t0.matching(names, patterns)
        if not names:
            where = f" in {', '.join(mixtures)}" if mixtures else ""
            raise P3DataError(f"no task{where} fully matches {' or '.join(patterns)}")
        return [self.task(name) for name in sorted(names)]


def with_variants(definitions: t0.T0Definitions,
                  settings: FewshotSettings | None = None) -> Definitions:
    """T0's definitions with every task's variants and the default variant mixtures."""
    return Definitions(definitions, all_variants(definitions, settings),
                       default_variant_mixtures(definitions, settings))


def load_definitions() -> Definitions:
    """`t0.load_definitions()` with the default variants: reads package data only."""
    return with_variants(t0.load_definitions())
