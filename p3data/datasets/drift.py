"""What a split's files hold, compared with the catalog's 2021 schema and sizes.

Rows read from the Hub today are not always the rows T0 read: columns were renamed, class
labels reordered, configs exported side by side, big splits exported in part. Before any row
of a split is read, its parquet footers are compared with the catalog entry: columns and types
after the declared renames (in the catalog's type language), ClassLabel names after the
declared label map, and the number of rows, which must equal the catalog's split size. A
column's `datasets` metadata is believed only when the column holds what it declares (floats
under int metadata would be cut to integers by a cast); integers of another width than
declared are the same data as long as every value fits, which `fit_integers` checks as the rows
are read (pyarrow writes Python ints as int64 whatever the metadata says). Any difference the
catalog does not declare fails the split with one line; the differences it accepts
(`hub.drift`) are shown to users and recorded in manifests instead.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from p3data.datasets.catalog import DatasetEntry
from p3data.datasets.errors import LocatedFile, SourceError, one_line
from p3data.datasets.parquet import hub_features
from p3data.datasets.schema import arrow_type, stored_form

if TYPE_CHECKING:
    import pyarrow as pa

# `datasets` dtypes and Arrow type names that the catalog spells otherwise
_SPELLINGS = {"large_string": "string", "float": "float32", "double": "float64",
              "halffloat": "float16"}


class DriftError(SourceError):
    """A split's files differ from the catalog in a way the catalog does not declare."""


def refuse_partial(entry: DatasetEntry, split: str, paths: Sequence[str]) -> None:
    """The Hub's converter cuts big splits short into `partial-<split>/` folders: never rows."""
    for path in paths:
        if any(folder.startswith("partial-") for folder in path.split("/")[:-1]):
            raise DriftError(
                f"{entry.name}/{split}: {path} is a partial export (a partial-* folder holds "
                "the first rows of a split too big to convert); pin the complete files, or "
                "build a mirror from the dataset's source")


def check(entry: DatasetEntry, split: str, *, schemas: Sequence[pa.Schema], rows: int,
          files: str) -> None:
    """Raise a DriftError listing every undeclared difference between the files (their
    `schemas`, `rows` in all, matched by `files`) and the catalog entry."""
    problems = [problem for schema in schemas for problem in _schema_problems(entry, schema)]
    expected = entry.splits[split]
    if expected is not None and rows != expected:  # None: a size the catalog could not confirm
        problems.append(f"{rows:,} rows in {files} != catalog {expected:,}")
    if problems:
        raise DriftError(f"{entry.name}/{split}: " + "; ".join(dict.fromkeys(problems)))


def class_names(schema: pa.Schema, column: str) -> list[str] | None:
    """The ClassLabel names of a top-level column, from the file's `datasets` features."""
    kind = _from_hub((hub_features(schema) or {}).get(column, {}))
    return kind["class_label"] if _is_class_label(kind) else None


def _schema_problems(entry: DatasetEntry, schema: pa.Schema) -> Iterator[str]:
    hub = entry.hub
    declared = hub_features(schema) or {}
    found = {hub.columns.get(name, name): _from_arrow(schema.field(name).type)
             for name in schema.names}
    for name in schema.names:  # the metadata names classes, if the column holds what it says
        column = hub.columns.get(name, name)
        if name in declared and column in entry.features:
            said = _from_hub(declared[name])
            if not _conforms(found[column], _stored_as(said), any_width=True):
                yield (f"{column}: the files hold {_show(found[column])} where their metadata "
                       f"declares {_show(said)}")
            found[column] = said
    missing = [name for name in entry.features if name not in found]
    if missing:
        yield (f"no column {', '.join(map(repr, missing))} in the files (they have "
               f"{', '.join(schema.names)}); declare a column rename")
    for name, kind in entry.features.items():
        if name not in found:
            continue
        expected, actual = stored_form(kind), found[name]
        if _is_class_label(expected) and _is_class_label(actual):
            yield from _label_problems(name, actual["class_label"], expected["class_label"],
                                       hub.labels.get(name))
        elif not _conforms(actual, expected):
            yield f"{name}: {_show(actual)} != catalog {_show(expected)}"


def fit_integers(entry: DatasetEntry, table: pa.Table, rows: LocatedFile, *,
                 first_row: int) -> pa.Table:
    """`table` (rows `first_row`... of the file `rows`, columns in the Hub's names) with every
    integer held at another width than the catalog's cast to it; a value that would change
    (a 2**31 in an int32 column) is one line naming the column, the file and the value."""
    import pyarrow as pa

    for index, name in enumerate(table.column_names):
        column = entry.hub.columns.get(name, name)
        if column not in entry.features:
            continue
        target = _integers_as(table.schema.field(index).type, arrow_type(entry.features[column]))
        if target is None:
            continue
        try:
            fitted = table[name].cast(target, safe=True)
        except pa.ArrowInvalid as err:
            raise rows.error(_misfit(column, table[name], target, first_row)
                             or f"{column}: {one_line(err)}") from err
        table = table.set_column(index, name, fitted)
    return table


def _integers_as(actual: pa.DataType, target: pa.DataType) -> pa.DataType | None:
    """`actual` with its integers at `target`'s widths, or None when no integer differs (or
    the shapes differ, which `check` has refused)."""
    import pyarrow as pa

    if pa.types.is_integer(actual) and pa.types.is_integer(target):
        return None if actual == target else target
    if _is_arrow_list(actual) and _is_arrow_list(target):
        inner = _integers_as(actual.value_type, target.value_type)
        if inner is None:
            return None
        return pa.large_list(inner) if pa.types.is_large_list(actual) else pa.list_(inner)
    if pa.types.is_struct(actual) and pa.types.is_struct(target):
        wanted = {field.name: field.type for field in target}
        fields = [(field, _integers_as(field.type, wanted[field.name])
                   if field.name in wanted else None) for field in actual]
        if all(sub is None for _, sub in fields):
            return None
        return pa.struct([field.with_type(sub or field.type) for field, sub in fields])
    return None


def _is_arrow_list(kind: pa.DataType) -> bool:
    import pyarrow as pa

    return pa.types.is_list(kind) or pa.types.is_large_list(kind)


def _misfit(column: str, values: pa.ChunkedArray, target: pa.DataType,
            first_row: int) -> str | None:
    """What the first value `target` cannot hold is, and where (read as Python values: only
    ever on the way to an error)."""
    for row, value in enumerate(values.to_pylist(), start=first_row):
        if found := _first_misfit(value, target, column):
            path, number, kind = found
            return f"{path} holds {number:,} (row {row:,}), which its type {kind} cannot hold"
    return None


def _first_misfit(value: Any, kind: pa.DataType, path: str) -> tuple[str, int, str] | None:
    import pyarrow as pa

    if value is None:
        return None
    if pa.types.is_integer(kind):
        bits = kind.bit_width
        low, high = ((-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
                     if pa.types.is_signed_integer(kind) else (0, 2 ** bits - 1))
        return None if low <= value <= high else (path, value, str(kind))
    if _is_arrow_list(kind):
        return next(filter(None, (_first_misfit(item, kind.value_type, path)
                                  for item in value)), None)
    if pa.types.is_struct(kind):
        return next(filter(None, (_first_misfit(value.get(field.name), field.type,
                                                f"{path}.{field.name}") for field in kind)),
                    None)
    return None


def _label_problems(column: str, names: list[str], expected: list[str],
                    label_map: Mapping[str, str] | None) -> Iterator[str]:
    if label_map is None:
        if names != expected:
            yield (f"{column} names [{', '.join(names)}] != catalog [{', '.join(expected)}]; "
                   "declare a label map")
        return
    unmapped = [name for name in names if name not in label_map]
    if unmapped:
        yield f"{column} names [{', '.join(unmapped)}] are not in the declared label map"


# ---- types in one language: the catalog's, with `sequence` spelled as `datasets` stores it ----

def _is_class_label(kind: Any) -> bool:
    return isinstance(kind, dict) and list(kind) == ["class_label"]


def _from_hub(spec: Any) -> Any:
    """A `datasets` feature (as its JSON in parquet metadata) in the catalog's language;
    kinds the catalog cannot express stay their `datasets` names, which match nothing."""
    if isinstance(spec, list):  # `[feature]`: a list of it
        return {"list": _from_hub(spec[0])}
    if not isinstance(spec, dict):
        return repr(spec)
    if "_type" not in spec:
        return {name: _from_hub(sub) for name, sub in spec.items()}
    match spec["_type"]:
        case "Value":
            return _SPELLINGS.get(spec["dtype"], spec["dtype"])
        case "ClassLabel":
            return {"class_label": list(spec["names"])}
        case "Sequence" if isinstance(spec["feature"], dict) and "_type" not in spec["feature"]:
            return {name: {"list": _from_hub(sub)} for name, sub in spec["feature"].items()}
        case "Sequence" | "List" | "LargeList":
            return {"list": _from_hub(spec["feature"])}
    return spec["_type"]


def _stored_as(kind: Any) -> Any:
    """The Arrow type (in the catalog's language) that `datasets` stores a feature as: class
    ids as int64, anything else as itself."""
    if _is_class_label(kind):
        return "int64"
    if isinstance(kind, dict):
        return {name: _stored_as(sub) for name, sub in kind.items()}
    return kind


def _from_arrow(kind: pa.DataType) -> Any:
    """An Arrow type (what a file holds, whatever its metadata says) in the catalog's
    language."""
    import pyarrow as pa

    if (pa.types.is_list(kind) or pa.types.is_large_list(kind)
            or pa.types.is_fixed_size_list(kind)):
        return {"list": _from_arrow(kind.value_type)}
    if pa.types.is_struct(kind):
        return {field.name: _from_arrow(field.type) for field in kind}
    name = str(kind)
    return _SPELLINGS.get(name, name)


def _conforms(actual: Any, expected: Any, *, any_width: bool = False) -> bool:
    """The same type; a struct may have fields the catalog does not know; with `any_width`,
    an integer of any width (its values are checked as they are read: `fit_integers`)."""
    if any_width and _is_integer(actual) and _is_integer(expected):
        return True
    if isinstance(expected, str) or _is_class_label(expected):
        return actual == expected
    if not isinstance(actual, dict) or _is_class_label(actual):
        return False
    if list(expected) == ["list"]:
        return list(actual) == ["list"] and _conforms(actual["list"], expected["list"],
                                                      any_width=any_width)
    return list(actual) != ["list"] and all(
        name in actual and _conforms(actual[name], sub, any_width=any_width)
        for name, sub in expected.items())


def _is_integer(kind: Any) -> bool:
    return isinstance(kind, str) and kind.lstrip("u").startswith("int")


def _show(kind: Any) -> str:
    """A type as the catalog would write it, e.g. `{list: string}`."""
    if isinstance(kind, str):
        return kind
    if _is_class_label(kind):
        return f"class_label [{', '.join(kind['class_label'])}]"
    return "{" + ", ".join(f"{name}: {_show(sub)}" for name, sub in kind.items()) + "}"
