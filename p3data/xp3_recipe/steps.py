"""The dataset steps xP3's recipe applies to rows before templating, by dataset name.

The recipe (bigscience `data/xp3/prepare_xp3_train.py`) changes three datasets' rows before any
template sees them, and its templates read what the steps add. Each step is a plain function of
one row, the config it comes from, the row's index in its split and the build's seed; it returns
the row to render, or None for a row the recipe drops. `STEPS` finds a dataset's step.

Reproduced: wiki_lingua's ISO 639 language names (pycountry's, the same for every wiki_lingua
language as the `iso-639` package's the recipe used) and its cross-pair filter; xlcost's
`code_clean`. Fixed: apps' solution pick is a seeded draw, a pure function of the seed and the
row's index (the recipe's `random.choice` is unseeded), and a row whose `solutions` is an empty
JSON list is dropped (the recipe's draw fails on it, stopping the whole config).
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from typing import Any

import pycountry

from p3data.errors import RowError
from p3data.templates.choice import choice_seed

Row = dict[str, Any]
Step = Callable[..., Row | None]  # (row, *, config, index, seed) -> the row, or None: dropped

WIKI_LINGUA = "GEM/wiki_lingua"
APPS = "codeparrot/apps"
XLCOST = "codeparrot/xlcost-text-to-code"


def language_name(code: str, *, where: str, index: int, field: str) -> str:
    """The ISO 639 English name of a two-letter code ("zh" -> "Chinese")."""
    language = pycountry.languages.get(alpha_2=code) if isinstance(code, str) else None
    if language is None:
        raise RowError(where, index, f"{code!r} is no ISO 639-1 language code", field)
    return language.name


def wiki_lingua_languages(row: Row, *, config: str | None, index: int, seed: int = 0
                          ) -> Row | None:
    """`source_language_name` and `target_language_name` added; a cross-lingual config
    (`<l1>_<l2>`) keeps only the rows from l1 to l2 (the other direction is its own config)."""
    if config and "_" in config:
        source, target = config.split("_", 1)
        if (row["source_language"], row["target_language"]) != (source, target):
            return None
    where = f"{WIKI_LINGUA}/{config}"
    return {**row, **{f"{side}_language_name": language_name(
        row[f"{side}_language"], where=where, index=index, field=f"{side}_language")
        for side in ("source", "target")}}


APPS_DRAW = f"{APPS}:solution"  # names the draw in its seed, as a template id names its own


def apps_solution(row: Row, *, config: str | None, index: int, seed: int = 0) -> Row | None:
    """Rows with solutions only, `solution` one of them, drawn by seed and row index."""
    solutions = json.loads(row["solutions"]) if row["solutions"] else None
    if not solutions:
        return None
    draw = random.Random(choice_seed(APPS_DRAW, index, seed))
    return {**row, "solution": draw.choice(solutions)}


def clean_xlcost_code(code: str) -> str:
    """xlcost's tokenised code as source: a line per `NEW_LINE`, each starting with as many tabs
    as the `INDENT`s less the `DEDENT`s so far (this line's included), the markers removed,
    `STRNEWLINE` a newline and `TABSYMBOL` a tab, each line stripped before its tabs."""
    lines, depth = [], 0
    for line in code.split("NEW_LINE"):
        depth += line.count("INDENT") - line.count("DEDENT")
        text = line.replace("INDENT", "").replace("DEDENT", "")
        text = text.replace("STRNEWLINE", "\n").replace("TABSYMBOL", "\t")
        lines.append("\t" * depth + text.strip())
    return "\n".join(lines)


def xlcost_code_clean(row: Row, *, config: str | None, index: int, seed: int = 0) -> Row:
    """`code_clean`, which xlcost's templates read, added."""
    return {**row, "code_clean": clean_xlcost_code(row["code"])}


STEPS: dict[str, Step] = {
    WIKI_LINGUA: wiki_lingua_languages,
    APPS: apps_solution,
    XLCOST: xlcost_code_clean,
}
