"""Checking source rows against a catalog entry's `features` (the type language of catalog.yaml).

The cache builder checks every source row and counts the problems by category, so a checker is
compiled once per features spec, and its problems are stable categories that name the field
path and the kind of mismatch but never the row's values: fit to be counter keys.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from p3data.datasets.catalog import CatalogError

if TYPE_CHECKING:
    import pyarrow as pa

Check = Callable[[Any], Sequence[str]]  # a value -> its problem categories (empty: it conforms)

_OK: tuple[str, ...] = ()
_MISSING = object()
_CONSTRUCTORS = ("class_label", "sequence", "list")
_INT_RANGES = {f"int{bits}": (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) for bits in (8, 16, 32, 64)}
# Exact types, as JSON and Arrow give them: a bool is not an int, an int is a fine float.
_SCALARS = {"string": frozenset({str}), "bool": frozenset({bool}),
            "float32": frozenset({int, float}), "float64": frozenset({int, float}),
            **{kind: frozenset({int}) for kind in _INT_RANGES}}
_TYPE_NAMES = {str: "string", int: "int", float: "float", bool: "bool", list: "list",
               dict: "struct", type(None): "null"}


class RowChecker:
    """The problems of rows against one features spec; extra columns are not problems."""

    def __init__(self, features: Mapping[str, Any]):
        self._check = _struct("row", features, prefix="")

    def problems(self, row: Any) -> list[str]:
        """Problem categories of `row`, each once, e.g. `label: class id out of range`."""
        found = self._check(row)
        return list(dict.fromkeys(found)) if found else []


def _compile(path: str, kind: Any) -> Check:
    leaf = _leaf(path, kind)
    if leaf:
        return leaf.check
    if not isinstance(kind, Mapping) or not kind:
        raise CatalogError(f"features.{path}: expected a type name or a mapping, got {kind!r}")
    constructor = next(iter(kind)) if len(kind) == 1 else None
    if constructor in ("sequence", "list"):
        inner = kind[constructor]
        if constructor == "sequence" and _is_struct(inner):  # stored as a struct of lists
            return _struct(path, stored_form(kind), prefix=f"{path}.")
        return _list(path, inner)
    return _struct(path, kind, prefix=f"{path}.")


def _is_struct(kind: Any) -> bool:
    return isinstance(kind, Mapping) and not (len(kind) == 1 and next(iter(kind)) in _CONSTRUCTORS)


def stored_form(kind: Any) -> Any:
    """A catalog type as `datasets` stores it: `{sequence: <struct>}` is a struct of lists,
    any other `{sequence: X}` or `{list: X}` is `{list: X}`; scalars and class labels as they
    are. Row checks, drift checks and the mirror's parquet schema all use this one form."""
    if isinstance(kind, str) or (isinstance(kind, Mapping) and list(kind) == ["class_label"]):
        return kind
    if _is_struct(kind):
        return {name: stored_form(sub) for name, sub in kind.items()}
    inner = kind.get("sequence", kind.get("list"))
    if "sequence" in kind and _is_struct(inner):
        return {name: {"list": stored_form(sub)} for name, sub in inner.items()}
    return {"list": stored_form(inner)}


def _mismatch(path: str, expected: str, value: Any) -> str:
    actual = _TYPE_NAMES.get(type(value)) or type(value).__name__
    return f"{path}: {actual} where {expected} expected"


@dataclass(frozen=True)
class _Leaf:
    """A scalar or class-label field: accepted exact types and, for ints, inclusive bounds."""

    path: str
    expected: str
    accepted: frozenset[type]
    bounds: tuple[int, int] | None = None
    out_of_range: str = ""

    def check(self, value: Any) -> Sequence[str]:
        if type(value) not in self.accepted:
            return (_mismatch(self.path, self.expected, value),)
        if self.bounds and not self.bounds[0] <= value <= self.bounds[1]:
            return (f"{self.path}: {self.out_of_range}",)
        return _OK

    def all_ok(self, values: list) -> bool:
        """True when every value conforms, checked in bulk (long token lists are common)."""
        if not self.accepted.issuperset(map(type, values)):
            return False
        return not (self.bounds and values) or (
            self.bounds[0] <= min(values) and max(values) <= self.bounds[1])


def _leaf(path: str, kind: Any) -> _Leaf | None:
    if isinstance(kind, str):
        if kind not in _SCALARS:
            raise CatalogError(f"features.{path}: unknown type {kind!r}")
        bounds = _INT_RANGES.get(kind)
        return _Leaf(path, kind, _SCALARS[kind], bounds, f"int out of {kind} range")
    if isinstance(kind, Mapping) and list(kind) == ["class_label"]:
        bounds = (-1, len(kind["class_label"]) - 1)  # -1: no label (e.g. hidden test labels)
        return _Leaf(path, "class_label", frozenset({int}), bounds, "class id out of range")
    return None


def _list(path: str, inner: Any) -> Check:
    item_path = f"{path}[]"
    leaf = _leaf(item_path, inner)
    check_item = leaf.check if leaf else _compile(item_path, inner)

    def check(value: Any) -> Sequence[str]:
        if type(value) is not list:
            return (_mismatch(path, "list", value),)
        if leaf and leaf.all_ok(value):
            return _OK
        return [problem for item in value for problem in check_item(item)]

    return check


def _struct(path: str, fields: Mapping[str, Any], *, prefix: str) -> Check:
    compiled = [(name, _compile(prefix + name, kind), (f"{prefix}{name}: missing",))
                for name, kind in fields.items()]

    def check(value: Any) -> Sequence[str]:
        if type(value) is not dict:
            return (_mismatch(path, "struct", value),)
        problems: list[str] = []
        for name, check_field, missing in compiled:
            field = value.get(name, _MISSING)
            found = missing if field is _MISSING else check_field(field)
            if found:
                problems += found
        return problems

    return check


def catalog_arrow_schema(features: dict[str, Any]) -> pa.Schema:
    """The parquet schema of the catalog's features, as `datasets` stores them."""
    import pyarrow as pa

    return pa.schema([(name, arrow_type(kind)) for name, kind in features.items()])


def arrow_type(kind: Any) -> pa.DataType:
    """A catalog type in Arrow, in its stored form (`stored_form`): scalars as declared
    (int32 stays int32), class ids as int64."""
    import pyarrow as pa

    stored = stored_form(kind)
    if isinstance(stored, str):
        return pa.type_for_alias(stored)
    if list(stored) == ["class_label"]:
        return pa.int64()
    if list(stored) == ["list"]:
        return pa.list_(arrow_type(stored["list"]))
    return pa.struct([(name, arrow_type(sub)) for name, sub in stored.items()])
