"""The dataset catalog: what T0 used, in what role, and where each dataset loads from today.

The catalog is data (`p3data/data/catalog.yaml`), readable by people. Users add or override
entries with their own YAML files (same format), given by argument or `P3DATA_CATALOG`.
Nothing here reads data or touches the network: split names and sizes come from the file.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from p3data.errors import P3DataError

_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when available: fast
CATALOG_FILE = Path(__file__).parent / "data" / "catalog.yaml"
ENV_CATALOG = "P3DATA_CATALOG"

TRAIN_ROLES = ("t0", "t0+", "t0++")  # the first T0 training mixture a dataset joins
EVAL_ROLES = ("held_out", "bias_fairness")


class CatalogError(P3DataError):
    """A catalog file or entry is malformed, or a dataset is not in the catalog."""


@dataclass(frozen=True)
class HubLocation:
    """A Hugging Face Hub repository that loads with current `datasets` (no scripts)."""

    repo: str | None = None
    config: str | None = None
    revision: str | None = None
    columns: dict[str, str] = field(default_factory=dict)  # hub column -> original name
    notes: str = ""


@dataclass(frozen=True)
class DatasetEntry:
    dataset: str
    subset: str | None
    splits: dict[str, int]
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
    def key(self) -> tuple[str, str | None]:
        return self.dataset, self.subset

    @property
    def name(self) -> str:
        return f"{self.dataset}/{self.subset}" if self.subset else self.dataset

    def split_mappings(self) -> dict[str | None, dict[str, str]]:
        """Task split -> source split, per round (`None` when the dataset has no rounds)."""
        if self.rounds:
            return {name: dict(mapping) for name, mapping in self.rounds.items()}
        return {None: {split: split for split in self.splits}}


_FIELDS = {"dataset", "subset", "train", "eval", "train_size", "splits", "features",
           "text_lengths", "hub", "manual_download", "rounds"}


def _entry(raw: Any, path: Path, number: int) -> DatasetEntry:
    where = f"{path}: entry {number}"
    if not isinstance(raw, dict):
        raise CatalogError(f"{where}: expected a mapping")
    unknown = set(raw) - _FIELDS
    if unknown:
        raise CatalogError(f"{where}: unknown fields {sorted(unknown)}")
    if not isinstance(raw.get("dataset"), str):
        raise CatalogError(f"{where}: 'dataset' must be a string")
    where = f"{where} ({raw['dataset']}{'/' + str(raw['subset']) if raw.get('subset') else ''})"
    splits = raw.get("splits")
    if not isinstance(splits, dict) or not all(
        isinstance(k, str) and isinstance(v, int) for k, v in splits.items()
    ):
        raise CatalogError(f"{where}: 'splits' must map split names to example counts")
    if raw.get("train") not in (None, *TRAIN_ROLES):
        raise CatalogError(f"{where}: 'train' must be one of {TRAIN_ROLES}")
    if raw.get("eval") not in (None, *EVAL_ROLES):
        raise CatalogError(f"{where}: 'eval' must be one of {EVAL_ROLES}")
    if not isinstance(raw.get("features"), dict):
        raise CatalogError(f"{where}: 'features' must be a mapping")
    rounds = raw.get("rounds")
    for name, mapping in (rounds or {}).items():
        missing = set(mapping.values()) - set(splits)
        if missing:
            raise CatalogError(f"{where}: round {name} maps to unknown splits {sorted(missing)}")
    hub = raw.get("hub") or {}
    return DatasetEntry(
        dataset=raw["dataset"],
        subset=str(raw["subset"]) if raw.get("subset") is not None else None,
        splits=dict(splits),
        features=raw["features"],
        train=raw.get("train"),
        eval=raw.get("eval"),
        train_size=raw.get("train_size"),
        text_lengths=dict(raw.get("text_lengths") or {}),
        hub=HubLocation(
            repo=hub.get("repo"), config=hub.get("config"), revision=hub.get("revision"),
            columns=dict(hub.get("columns") or {}), notes=hub.get("notes") or "",
        ),
        manual_download=raw.get("manual_download"),
        rounds=rounds,
        source=str(path),
    )


def read_catalog_file(path: Path) -> list[DatasetEntry]:
    try:
        raw = yaml.load(Path(path).read_text(encoding="utf-8"), Loader=_LOADER)  # noqa: S506
    except (OSError, yaml.YAMLError) as err:
        raise CatalogError(f"{path}: cannot read catalog: {err}") from None
    if not isinstance(raw, list):
        raise CatalogError(f"{path}: a catalog is a YAML list of dataset entries")
    return [_entry(item, path, i + 1) for i, item in enumerate(raw)]


class Catalog:
    """Dataset entries by (dataset, subset), in file order; later files override by key."""

    def __init__(self, entries: Iterable[DatasetEntry]):
        self._entries: dict[tuple[str, str | None], DatasetEntry] = {}
        for entry in entries:
            self._entries[entry.key] = entry

    @classmethod
    def load(cls, extra_files: Iterable[str | os.PathLike] = ()) -> Catalog:
        env_files = [p for p in os.environ.get(ENV_CATALOG, "").split(os.pathsep) if p]
        files = [CATALOG_FILE, *map(Path, env_files), *map(Path, extra_files)]
        return cls(entry for path in files for entry in read_catalog_file(path))

    def __iter__(self) -> Iterator[DatasetEntry]:
        return iter(self._entries.values())

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: tuple[str, str | None]) -> bool:
        return key in self._entries

    def get(self, dataset: str, subset: str | None = None) -> DatasetEntry:
        try:
            return self._entries[(dataset, subset)]
        except KeyError:
            name = f"{dataset}/{subset}" if subset else dataset
            raise CatalogError(f"dataset {name!r} is not in the catalog") from None
