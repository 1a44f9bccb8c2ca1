"""The reference p3data is checked against: promptsource 0.1.0's own `Template.apply` plus
T0's row rule (`t0/seqio_tasks/utils.py: apply_template`), re-stated here for the tests.

Two test-only adjustments, neither of which changes what a template renders:
- promptsource compiles each template on every call; compiled templates that do not draw
  random choices are memoised here so the reference runs in reasonable time;
- promptsource's `choice` filter draws from the global `random` module; here it draws from the
  same per-row seeded RNG p3data uses, so templates that use `choice` can be compared exactly.
"""

from __future__ import annotations

import functools
import random
import re
from dataclasses import dataclass
from typing import Any

from promptsource import templates as ps_templates
from promptsource.utils import removeHyphen

from p3data.templates.choice import choice_seed

_env = ps_templates.env
_compile = _env.from_string
_memoised = functools.lru_cache(maxsize=None)(_compile)


_DRAWS = re.compile(r"\|\s*choice\b|\bfilter\s+choice\b")  # the `choice` filter applied


def _from_string(source):
    # Jinja folds `[...] | choice` over constant lists at compile time, so promptsource draws
    # while compiling: templates that draw must be compiled per row, as promptsource does.
    # (Memoising one that draws would fix its first draw, which the comparison would catch.)
    return _compile(source) if _DRAWS.search(source) else _memoised(source)


_env.from_string = _from_string


class _Draws:
    rng = random.Random(0)


def _seeded_choice(items):
    return _Draws.rng.choice(items)


_env.filters["choice"] = _seeded_choice


@dataclass(frozen=True)
class Reference:
    kind: str  # "kept", "dropped" or "error"
    inputs: str = ""
    targets: str = ""
    answer_choices: list[str] | None = None
    parts: int = 0
    error: str = ""


def promptsource_template(dataset: str, subset: str | None, name: str):
    return ps_templates.DatasetTemplates(dataset, subset)[name]


def t0_apply(template, row: dict[str, Any], index: int, seed: int = 0) -> Reference:
    """What T0's `apply_template` map + filter made of one row."""
    _Draws.rng = random.Random(choice_seed(template.id, index, seed))
    try:
        example = removeHyphen(row)
        parts = template.apply(example)
        choices = template.get_answer_choices_list(example)
    except Exception as err:  # noqa: BLE001 - the reference crashed on this row
        return Reference("error", error=f"{type(err).__name__}: {err}")
    if len(parts) != 2:
        return Reference("dropped", parts=len(parts))
    inputs, targets = parts
    if not inputs:
        return Reference("dropped", parts=2)
    return Reference("kept", inputs, targets or "<NO LABEL>", choices or None)
