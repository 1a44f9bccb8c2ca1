"""What a few-shot variant's build needs besides its rows: the exemplar pool it draws from.

A pool is a template's usable renders of a pool split (the dataset's train split, or the
query's own split when there is none: `fewshot.pool_source`), rendered and tokenized once and
shared by every variant and split that draws from it. It lives in the work folder:

    pools/<dataset>[/<subset>]/<split>/<template id>-<fingerprint>/part-NNNNN/   one source
        shard's exemplars (`PoolPart`, by the pool stage), `part.json` written last
    pools/.../pool/                  the parts merged, sorted by (cost, row); `pool.json` last

Its fingerprint covers the pool split's rows, the template, the separators, the vocabulary and
the templates' seed, so a rerun reuses exactly the pools of the same inputs. A variant split's
`sources` entry names the pool's rows too (`with_exemplars`): new train rows rebuild the
validation split that draws from them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from p3data import fs
from p3data.dataset_key import DatasetKey
from p3data.datasets.catalog import DatasetEntry
from p3data.datasets.shards import Shard
from p3data.fewshot import FewshotSettings, PoolSource, VariantSpec, pool_source
from p3data.format.work import WorkDir
from p3data.templates import Template

EXEMPLARS = "exemplars"  # the key of a variant split's pool rows in its `sources` entry


@dataclass(frozen=True)
class PoolSpec:
    """One exemplar pool: a template's renders of a pool split, with the settings whose
    separators make its texts and costs. Pools of one name are the same pool."""

    entry: DatasetEntry
    split: str  # the pool's source split
    template: Template
    settings: FewshotSettings
    fingerprint: str  # of the rows, the template, the separators, the vocabulary, the seed
    shards: int  # source shards of the split: the pool's parts

    @property
    def name(self) -> str:
        return f"{self.entry.name}/{self.split}/{self.template.id}-{self.fingerprint[:16]}"

    def folder(self, work: WorkDir) -> str:
        return fs.join(work.root, "pools", self.name)

    def part(self, work: WorkDir, index: int) -> str:
        return fs.join(self.folder(work), f"part-{index:05d}")

    def merged(self, work: WorkDir) -> str:
        return fs.join(self.folder(work), "pool")


@dataclass(frozen=True)
class VariantOutput:
    """How a variant's task split is made: its shot count and settings, the task its draws
    are keyed by, where its exemplars come from, and the pool (None at zero shots)."""

    shots: int
    settings: FewshotSettings
    draw_task: str
    source: PoolSource
    pool: PoolSpec | None


@dataclass(frozen=True)
class PoolUnit:
    """One source shard of a pool split, read once for every pool it feeds."""

    entry: DatasetEntry
    split: str
    shard: Shard
    index: int
    pools: tuple[PoolSpec, ...]

    @property
    def name(self) -> str:
        return "__".join([self.entry.dataset, self.entry.subset or "", self.split,
                          f"{self.index:05d}"])


def exemplar_split(spec: VariantSpec, split: str) -> str | None:
    """The source split a variant's task split draws exemplars from (None: zero shots)."""
    return pool_source(spec.base, split).split if spec.shots else None


def variant_sources(spec: VariantSpec, sources: dict[str, dict],
                    identities: Mapping[tuple[DatasetKey, str], dict]) -> dict[str, dict]:
    """A variant's `sources` (task split -> its rows' identity), each with its exemplars'
    split and rows (`identities`: of each dataset split, listed)."""
    with_exemplars = {}
    for split, identity in sources.items():
        pool_split = exemplar_split(spec, split)
        with_exemplars[split] = identity if pool_split is None else {
            **identity, EXEMPLARS: {"split": pool_split,
                                    **identities[spec.entry.key, pool_split]}}
    return with_exemplars


def fewshot_record(spec: VariantSpec) -> dict:
    """What makes a variant's prompts, as its fingerprint and manifest record it."""
    settings = spec.settings
    return {"task": spec.base.name, "shots": spec.shots, "draw_task": spec.draw_task,
            "exemplar_separator": settings.exemplar_separator,
            "example_separator": settings.example_separator,
            "input_length": settings.input_length, "seed": settings.seed}


def pool_units(pools: list[PoolSpec], shards: dict[tuple[str, str], list[Shard]]) -> list[PoolUnit]:
    """One unit per source shard of each pool split (`shards`, by (dataset name, split)),
    feeding every pool of that split."""
    by_split: dict[tuple[str, str], list[PoolSpec]] = {}
    for pool in {pool.name: pool for pool in pools}.values():
        by_split.setdefault((pool.entry.name, pool.split), []).append(pool)
    units = []
    for (dataset, split), fed in sorted(by_split.items()):
        units += [PoolUnit(fed[0].entry, split, shard, i, tuple(fed))
                  for i, shard in enumerate(shards[dataset, split])]
    return units
