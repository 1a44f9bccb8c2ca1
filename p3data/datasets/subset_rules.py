"""Catalog entries that stand for many subsets: a `subsets:` rule, expanded when the file is read.

xP3 reads 1,980 flores pairs, 92 wmt22 pairs, 81 wiki_lingua configs and more, each with the
schema and Hub layout of its family: written out they would be thousands of entries that differ
in a name. A rule entry has `subsets:` instead of `subset:` and becomes one plain entry per
subset; in its feature names and Hub file globs and columns, `{subset}` is the subset's name
and, when the rule has a `separator`, `{source}` and `{target}` are the name's two halves
(`eng_Latn-swh_Latn`: `sentence_{source}` is `sentence_eng_Latn`).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

RULE = "subsets"
PLACEHOLDERS = ("{subset}", "{source}", "{target}")


def is_rule(item: dict[str, Any]) -> bool:
    return RULE in item


def subset_names(rule: dict[str, Any]) -> list[str]:
    """The subsets a rule stands for, in order: its `names`, or every ordered pair of distinct
    `pairs` joined by the separator."""
    if "pairs" in rule:
        return [f"{first}{rule['separator']}{second}"
                for first, second in itertools.permutations(rule["pairs"], 2)]
    return list(rule["names"])


def rule_problems(item: dict[str, Any]) -> Iterator[tuple[tuple[Any, ...], str]]:
    """(where in the entry, what is wrong) with a rule the schema cannot judge."""
    if not is_rule(item):
        return
    rule = item[RULE]
    if "subset" in item:
        yield (RULE,), "an entry has either a subset or a subsets rule, not both"
    if ("names" in rule) == ("pairs" in rule):
        yield (RULE,), "give either names or pairs"
        return
    if "pairs" in rule and "separator" not in rule:
        yield (RULE, "pairs"), "pairs need a separator to join them"
        return
    names = subset_names(rule)
    if repeated := sorted({name for name in names if names.count(name) > 1}):
        yield (RULE,), f"repeats the subsets {', '.join(repeated)}"
    separator = rule.get("separator")
    if separator is None:
        halves = sorted({half for half in PLACEHOLDERS[1:] if half in _texts(item)})
        if halves:
            yield (RULE,), f"{' and '.join(halves)} need a separator to split the names"
        return
    for name in names:
        if len(name.split(separator)) != 2:
            yield (RULE, "names", name), f"{name!r} is not two names joined by {separator!r}"


def _texts(item: dict[str, Any]) -> str:
    """Where placeholders are filled (feature names, Hub globs and columns), as one text."""
    hub = item.get("hub") or {}
    return repr((item.get("features"), item.get("text_lengths"), hub.get("files"),
                 hub.get("columns")))


def expand(item: dict[str, Any]) -> list[dict[str, Any]]:
    """The plain entries an entry stands for: itself, or one per subset of its rule (which
    `rule_problems` found sound)."""
    if not is_rule(item):
        return [item]
    rule = item[RULE]
    base = {key: value for key, value in item.items() if key != RULE}
    own_splits = rule["names"] if isinstance(rule.get("names"), dict) else {}
    return [_one_subset(base, name, own_splits.get(name) or base["splits"], rule.get("separator"))
            for name in subset_names(rule)]


def _one_subset(base: dict[str, Any], name: str, splits: dict[str, Any],
                separator: str | None) -> dict[str, Any]:
    values = {"{subset}": name}
    if separator is not None:
        values["{source}"], values["{target}"] = name.split(separator)
    entry = {**base, "subset": name, "splits": dict(splits),
             "features": _named(base["features"], values)}
    if base.get("text_lengths"):
        entry["text_lengths"] = _named(base["text_lengths"], values)
    if base.get("hub"):
        hub = {**base["hub"]}
        files = hub.get("files") or {}
        hub["files"] = {split: _filled(globs, values) for split, globs in files.items()
                        if split in splits}  # the rule's globs, for the splits this subset has
        if hub.get("columns"):
            hub["columns"] = {_filled(old, values): _filled(new, values)
                              for old, new in hub["columns"].items()}
        entry["hub"] = hub
    return entry


def _named(mapping: dict[str, Any], values: dict[str, str]) -> dict[str, Any]:
    """A feature mapping with placeholders filled in its field names, at every depth."""
    return {_filled(name, values): _named(kind, values) if isinstance(kind, dict) else kind
            for name, kind in mapping.items()}


def _filled(text: Any, values: dict[str, str]) -> Any:
    if isinstance(text, list):
        return [_filled(part, values) for part in text]
    if not isinstance(text, str):
        return text
    for placeholder, value in values.items():
        text = text.replace(placeholder, value)
    return text
