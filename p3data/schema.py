"""Checking rows against a catalog entry's `features` (the type language of catalog.yaml).

Used to keep the bundled samples schema-true and to point at malformed rows in a mirror:
each problem names the field path and what was expected.
"""

from __future__ import annotations

from typing import Any

_INTS = {"int8", "int16", "int32", "int64"}
_FLOATS = {"float32", "float64"}


def row_problems(features: dict[str, Any], row: Any) -> list[str]:
    """Every way `row` differs from the schema (empty: it conforms)."""
    if not isinstance(row, dict):
        return [f"row: expected an object, got {type(row).__name__}"]
    problems = [f"{name}: missing" for name in features if name not in row]
    problems += [f"{name}: not in the schema" for name in row if name not in features]
    for name, kind in features.items():
        if name in row:
            problems += _value_problems(name, kind, row[name])
    return problems


def _value_problems(path: str, kind: Any, value: Any) -> list[str]:
    if isinstance(kind, str):
        ok = {"string": isinstance(value, str), "bool": isinstance(value, bool)}.get(kind)
        if ok is None:
            numeric = isinstance(value, int) and not isinstance(value, bool)
            ok = numeric if kind in _INTS else (numeric or isinstance(value, float))
            if kind not in _INTS | _FLOATS:
                return [f"{path}: unknown type {kind!r} in the schema"]
        return [] if ok else [f"{path}: expected {kind}, got {value!r:.40}"]
    if "class_label" in kind:
        names = kind["class_label"]
        if isinstance(value, int) and not isinstance(value, bool) and -1 <= value < len(names):
            return []
        return [f"{path}: expected a class id in [-1, {len(names) - 1}], got {value!r:.40}"]
    if "sequence" in kind or "list" in kind:
        inner = kind.get("sequence", kind.get("list"))
        if isinstance(inner, dict) and "sequence" in kind and not _is_constructor(inner):
            # HF stores a sequence of structs as a struct of lists
            return _value_problems(path, {k: {"list": v} for k, v in inner.items()}, value)
        if not isinstance(value, list):
            return [f"{path}: expected a list, got {value!r:.40}"]
        return [p for i, item in enumerate(value)
                for p in _value_problems(f"{path}[{i}]", inner, item)]
    if not isinstance(value, dict):
        return [f"{path}: expected an object, got {value!r:.40}"]
    return [p for name, sub in kind.items()
            for p in (_value_problems(f"{path}.{name}", sub, value[name]) if name in value
                      else [f"{path}.{name}: missing"])] + [
        f"{path}.{name}: not in the schema" for name in value if name not in kind]


def _is_constructor(kind: dict) -> bool:
    return len(kind) == 1 and next(iter(kind)) in ("class_label", "sequence", "list")
