"""The dataset catalog: what T0 used, in what role, and where each dataset loads from today.

The catalog is data (`p3data/data/catalog.yaml`), readable by people. Users add or override
entries with their own YAML files (same format), given by argument or `P3DATA_CATALOG`.
xP3's datasets are in a file of their own (`p3data/data/xp3_catalog.yaml`), which T0's tasks
never read. Nothing here reads data or touches the network: split names and sizes come from
the file.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from p3data.dataset_key import DatasetKey
from p3data.datasets.subset_rules import expand, rule_problems
from p3data.errors import P3DataError

if TYPE_CHECKING:
    import jsonschema

_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when available: fast
CATALOG_FILE = Path(__file__).parent.parent / "data" / "catalog.yaml"
XP3_CATALOG_FILE = CATALOG_FILE.with_name("xp3_catalog.yaml")  # xP3's datasets but T0's
ENV_CATALOG = "P3DATA_CATALOG"

TRAIN_ROLES = ("t0", "t0+", "t0++")  # the first T0 training mixture a dataset joins
EVAL_ROLES = ("held_out", "bias_fairness")


class CatalogError(P3DataError):
    """A catalog file or entry is malformed, or a dataset is not in the catalog."""


@dataclass(frozen=True)
class HubLocation:
    """Exactly which parquet files on the Hub hold each split, and how they differ from T0's
    2021 rows: read directly, so no loading script and no guessing of configs is involved."""

    repo: str | None = None  # owner/name; None: the Hub has no usable copy (`notes` say why)
    revision: str | None = None  # a commit SHA, else a branch or ref (main, refs/convert/parquet)
    files: dict[str, tuple[str, ...]] = field(default_factory=dict)  # split -> globs in the repo
    columns: dict[str, str] = field(default_factory=dict)  # hub column -> 2021 name
    labels: dict[str, dict[str, str]] = field(default_factory=dict)  # column -> {hub: 2021 name}
    drift: tuple[str, ...] = ()  # accepted differences from the 2021 rows, one line each
    notes: str = ""


@dataclass(frozen=True)
class DatasetEntry:
    dataset: str
    subset: str | None
    splits: dict[str, int | None]  # None: a size not confirmed (xP3's catalog; notes say why)
    features: dict[str, Any]
    train: str | None = None
    eval: str | None = None
    train_size: int | None = None
    text_lengths: dict[str, int] = field(default_factory=dict)
    hub: HubLocation = field(default_factory=HubLocation)
    manual_download: dict[str, Any] | None = None
    rounds: dict[str, dict[str, str]] | None = None  # ANLI: round -> {split: source split}
    source: str = ""  # the catalog file it came from

    @property
    def key(self) -> DatasetKey:
        return DatasetKey(self.dataset, self.subset)

    @property
    def name(self) -> str:
        return self.key.name

    @property
    def bundled(self) -> bool:
        """From p3data's own catalog (T0's datasets), not from a user's catalog file."""
        return self.source == str(CATALOG_FILE)

    def split_mappings(self) -> dict[str | None, dict[str, str]]:
        """Task split -> source split, per round (`None` when the dataset has no rounds)."""
        if self.rounds:
            return {name: dict(mapping) for name, mapping in self.rounds.items()}
        return {None: {split: split for split in self.splits}}


def read_catalog_file(path: str | os.PathLike, *, validate: bool = True) -> list[DatasetEntry]:
    """The file's entries, or a CatalogError listing every problem, one line each.

    `validate=False` is for the bundled catalog only, which the tests validate: checking it on
    every load would double the time of `import p3data.tasks`.
    """
    path = Path(path)
    raw = _read_yaml(path)
    problems = list(dict.fromkeys(_problem_lines(path, raw))) if validate else []
    if problems:
        if len(problems) > _MAX_PROBLEMS:
            rest = len(problems) - _MAX_PROBLEMS
            problems = [*problems[:_MAX_PROBLEMS], f"{path}: ... and {rest} more problems"]
        raise CatalogError("\n".join(problems))
    return [_entry(entry, path) for item in raw for entry in expand(item)]


def _read_yaml(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise CatalogError(f"{path}: cannot read catalog: {err.strerror or err}") from None
    except UnicodeDecodeError as err:
        raise CatalogError(f"{path}: not UTF-8 text: {err.reason} at byte {err.start}") from None
    try:
        return yaml.load(text, Loader=_LOADER)  # noqa: S506
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
        raise CatalogError(f"{where}: invalid YAML: {err.problem or err.context}") from None
    except yaml.YAMLError as err:
        raise CatalogError(f"{path}: invalid YAML: {err}") from None


def _entry(raw: dict[str, Any], path: Path) -> DatasetEntry:
    """A DatasetEntry from an entry that passed validation."""
    hub = raw.get("hub") or {}
    subset = raw.get("subset")
    return DatasetEntry(
        dataset=raw["dataset"],
        subset=None if subset is None else str(subset),
        splits=dict(raw["splits"]),
        features=raw["features"],
        train=raw.get("train"),
        eval=raw.get("eval"),
        train_size=raw.get("train_size"),
        text_lengths=dict(raw.get("text_lengths") or {}),
        hub=_hub_location(hub),
        manual_download=raw.get("manual_download"),
        rounds=raw.get("rounds"),
        source=str(path),
    )


def _hub_location(hub: dict[str, Any]) -> HubLocation:
    files = hub.get("files") or {}
    return HubLocation(
        repo=hub.get("repo"), revision=hub.get("revision"),
        files={split: (globs,) if isinstance(globs, str) else tuple(globs)
               for split, globs in files.items()},
        columns=dict(hub.get("columns") or {}),
        labels={column: dict(names) for column, names in (hub.get("labels") or {}).items()},
        drift=tuple(line.strip() for line in hub.get("drift") or ()),
        notes=hub.get("notes") or "",
    )


# ---- validation: the declared schema, then the cross-field rules it cannot express ----

SCHEMA_FILE = Path(__file__).parent.parent / "data" / "catalog.schema.json"
_MAX_PROBLEMS = 20
_TYPE_WORDS = {"object": "a mapping", "array": "a list", "string": "a string",
               "integer": "an integer", "number": "a number", "boolean": "true or false",
               "null": "null"}
_Location = tuple[Any, ...]  # entry index, then keys and list indices inside the entry


@functools.cache
def _validator() -> jsonschema.Draft202012Validator:
    import jsonschema  # here, not at module level: `import p3data.datasets.catalog` stays light

    return jsonschema.Draft202012Validator(json.loads(SCHEMA_FILE.read_text(encoding="utf-8")))


def _problem_lines(path: Path, raw: Any) -> Iterator[str]:
    for location, problem in sorted(_problems(raw), key=lambda found: found[0][:1]):
        if not location:
            yield f"{path}: {problem}"
            continue
        number, *inside = location
        yield f"{path}: entry {number + 1}{_entry_name(raw[number])}: {_field(inside)}{problem}"


def _field(inside: Iterable[Any]) -> str:
    """'hub.files.train: ', where in an entry (keys and list indices), or '' for all of it."""
    field = "".join(f"[{key}]" if isinstance(key, int) else f".{key}" for key in inside)
    return f"{field[1:]}: " if field else ""


def _entry_name(item: Any) -> str:
    """' (dataset/subset)' as far as the entry names them, for locating it in the file."""
    if not isinstance(item, dict) or not isinstance(item.get("dataset"), str):
        return ""
    subset = item.get("subset")
    named = type(subset) in (str, int) and subset != ""
    return f" ({DatasetKey(item['dataset'], str(subset) if named else None)})"


def _problems(raw: Any) -> Iterator[tuple[_Location, str]]:
    """(where, what is wrong) for each violation of the schema, then of the cross-field rules."""
    invalid = set()
    for error in _validator().iter_errors(raw):
        location = tuple(error.absolute_path)
        invalid.update(location[:1])
        yield location, _describe(error)
    if not isinstance(raw, list):
        return
    seen: dict[DatasetKey, int] = {}
    for number, item in enumerate(raw):
        if number in invalid:
            continue  # the cross-field rules assume well-typed fields
        if wrong := list(rule_problems(item)):
            yield from (((number, *where), problem) for where, problem in wrong)
        else:
            yield from _entry_problems(number, item, seen)


def _entry_problems(number: int, item: dict[str, Any],
                    seen: dict[DatasetKey, int]) -> Iterator[tuple[_Location, str]]:
    """The cross-field problems of an entry, or of each subset a rule entry stands for; `seen`
    records where each dataset/subset was first."""
    wrong_subsets: list[list[tuple[_Location, str]]] = []
    for entry in expand(item):
        key = DatasetKey(entry["dataset"],
                         None if entry.get("subset") is None else str(entry["subset"]))
        found = [((), f"the same dataset/subset as entry {seen[key] + 1}")] if key in seen else []
        seen.setdefault(key, number)
        found += _cross_field_problems(entry)
        if found and entry is item:
            yield from (((number, *where), problem) for where, problem in found)
        elif found:  # one of a rule's subsets
            wrong_subsets.append([((number,), f"subset {key.subset}: {_field(where)}{problem}")
                                  for where, problem in found])
    if wrong_subsets:  # a rule's mistake is usually every subset's: the first one shows it
        yield from wrong_subsets[0]
        if len(wrong_subsets) > 1:
            yield (number,), f"and {len(wrong_subsets) - 1:,} more of its subsets have problems"


def _cross_field_problems(item: dict[str, Any]) -> Iterator[tuple[_Location, str]]:
    hub = item.get("hub") or {}
    manual = item.get("manual_download") or {}
    split_refs = [(("rounds", name, split), source) for name, mapping in
                  (item.get("rounds") or {}).items() for split, source in mapping.items()]
    split_refs += [((section, "files", split), split) for section, spec in
                   (("manual_download", manual), ("hub", hub)) for split in spec.get("files") or {}]
    field_refs = [(("text_lengths", name), name) for name in item.get("text_lengths") or {}]
    field_refs += [((section, "columns", old), new) for section, spec in
                   (("hub", hub), ("manual_download", manual))
                   for old, new in (spec.get("columns") or {}).items()]
    field_refs += [(("hub", "labels", column), column) for column in hub.get("labels") or {}]
    for refs, known, kind in ((split_refs, item["splits"], "splits"),
                              (field_refs, item["features"], "features")):
        for where, name in refs:
            if name not in known:
                yield where, f"{name!r} is not one of the entry's {kind} ({', '.join(known)})"
    yield from _hub_problems(item, hub)


def _hub_problems(item: dict[str, Any], hub: dict[str, Any]) -> Iterator[tuple[_Location, str]]:
    """Files for every split of a Hub copy; label maps onto the column's own class names."""
    files = hub.get("files") or {}
    if not hub.get("repo") and files:
        yield ("hub", "files"), "files need a repo"
    elif hub.get("repo") and not item.get("manual_download"):
        missing = [split for split in item["splits"] if split not in files]
        if missing:
            yield ("hub", "files"), f"no files for split {', '.join(map(repr, missing))}"
    for column, names in (hub.get("labels") or {}).items():
        kind = item["features"].get(column)
        if kind is None:
            continue  # reported above
        if not (isinstance(kind, dict) and list(kind) == ["class_label"]):
            yield ("hub", "labels", column), f"{column!r} is not a class_label feature"
            continue
        for hub_name, name in names.items():
            if name not in kind["class_label"]:
                yield (("hub", "labels", column, hub_name),
                       f"{name!r} is not one of the class names of {column!r}")


def _describe(error: jsonschema.ValidationError) -> str:
    """One jsonschema error as a short sentence about the value (no schema jargon)."""
    value, expected, schema = error.instance, error.validator_value, error.schema
    if "propertyNames" in error.schema_path:  # the value is a key of the mapping
        return f"keys must be non-empty strings, got {_show(value)}"
    match error.validator:
        case "type":
            types = [expected] if isinstance(expected, str) else expected
            words = " or ".join(_TYPE_WORDS[t] for t in types if t != "null" or len(types) == 1)
            hint = f" ({schema['description']})" if "description" in schema else ""
            return f"expected {words}{hint}, got {_show(value)}"
        case "enum":
            choices = ", ".join(c if isinstance(c, str) else json.dumps(c) for c in expected)
            return f"expected one of {choices}; got {_show(value)}"
        case "pattern":
            return f"expected {schema['description']}, got {_show(value)}"
        case "minimum":
            return f"expected at least {expected}, got {_show(value)}"
        case "minLength" | "minItems" | "minProperties":
            return "must not be empty"
        case "uniqueItems":
            repeated = dict.fromkeys(v for v in value if value.count(v) > 1)
            return f"repeats {', '.join(map(_show, repeated))}"
        case "required":
            return f"missing {', '.join(repr(k) for k in expected if k not in value)}"
        case "additionalProperties":
            known = schema.get("properties", {})
            unknown = [repr(k) for k in value if k not in known]
            return (f"unknown field{'s' if len(unknown) > 1 else ''} {', '.join(unknown)}"
                    f" (known: {', '.join(known)})")
    return error.message


def _show(value: Any) -> str:
    text = "null" if value is None else repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


class Catalog:
    """Dataset entries by key, in file order; later files override by key."""

    def __init__(self, entries: Iterable[DatasetEntry]):
        self._entries: dict[DatasetKey, DatasetEntry] = {}
        for entry in entries:
            self._entries[entry.key] = entry

    @classmethod
    def load(cls, extra_files: Iterable[str | os.PathLike] = ()) -> Catalog:
        env_files = [p for p in os.environ.get(ENV_CATALOG, "").split(os.pathsep) if p]
        user_files = [*map(Path, env_files), *map(Path, extra_files)]
        return cls([*read_catalog_file(CATALOG_FILE, validate=False),
                    *(entry for path in user_files for entry in read_catalog_file(path))])

    def __iter__(self) -> Iterator[DatasetEntry]:
        return iter(self._entries.values())

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: DatasetKey) -> bool:
        return key in self._entries

    def __getitem__(self, key: DatasetKey) -> DatasetEntry:
        try:
            return self._entries[key]
        except KeyError:
            raise CatalogError(f"dataset {key.name!r} is not in the catalog") from None

    def get(self, dataset: str, subset: str | None = None) -> DatasetEntry:
        return self[DatasetKey(dataset, subset)]
