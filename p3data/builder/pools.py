"""What a few-shot variant's build needs besides its rows: the exemplar pool it draws from.

A pool is a template's usable renders of a pool split (the dataset's train split, or the
query's own split when there is none: `fewshot.pool_source`), rendered and tokenized once and
shared by every variant and split that draws from it. It lives in the work folder:

    pools/<dataset>[/<subset>]/<split>/<template id>-<fingerprint>/part-NNNNN/   one source
        shard's exemplars (`PoolPart`, by the pool stage), `part.json` written last
    pools/.../pool/                  the parts merged, sorted by (cost, row); `pool.json` last

Its fingerprint covers the pool split's rows, the template, the separators, the vocabulary and
the templates' seed, so a rerun reuses exactly the pools of the same inputs. A variant split's
`sources` entry names the pool's rows too (`EXEMPLARS`): new train rows rebuild the validation
split that draws from them when it is built, and a run that would keep it as it is refuses
(`planning.plan_task`). A pool split that is missing or empty fails the variants that draw from it
before any work (`pool_refusal`), as an empty split fails a T0 task.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from p3data import fs
from p3data.builder.work_folder import WorkDir
from p3data.dataset_key import DatasetKey
from p3data.datasets.catalog import DatasetEntry
from p3data.datasets.shards import Shard
from p3data.fewshot import FewshotSettings, VariantSpec
from p3data.fewshot.pool import PoolSource, pool_source
from p3data.fewshot.variants import variant_name
from p3data.format.manifest import EXEMPLARS
from p3data.templates import Template

Listed = Mapping[tuple[DatasetKey, str], tuple[list[Shard], dict]]  # a split's shards, identity


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


def exemplar_rows(spec: VariantSpec, listed: Listed) -> dict[str, dict]:
    """Each task split's exemplars' rows as its `sources` entry records them (`EXEMPLARS`),
    for every task split with exemplars whose pool split is `listed`."""
    rows = {}
    for split in spec.split_mapping:
        pool_split = exemplar_split(spec, split)
        if pool_split is not None and (spec.entry.key, pool_split) in listed:
            rows[split] = {"split": pool_split, **listed[spec.entry.key, pool_split][1]}
    return rows


def variant_sources(sources: dict[str, dict], exemplars: Mapping[str, dict]) -> dict[str, dict]:
    """A variant's `sources` (task split -> its rows' identity), each with its exemplars' rows
    (`exemplar_rows`)."""
    return {split: {**identity, EXEMPLARS: exemplars[split]} if split in exemplars else identity
            for split, identity in sources.items()}


def pool_refusal(spec: VariantSpec, splits: Sequence[str], listed: Listed,
                 unlisted: Mapping[tuple[DatasetKey, str], str]) -> str | None:
    """Why a variant cannot draw exemplars for these task splits (None: it can): their pool
    split, another split than the query's, is missing (`unlisted`: why it could not be listed)
    or has no rows. An empty query split fails as a T0 task's does, when it is assembled."""
    for split in splits:
        pool_split = exemplar_split(spec, split)
        if pool_split is None or pool_split == spec.split_mapping[split]:
            continue
        key, catalog = (spec.entry.key, pool_split), spec.entry.splits.get(pool_split)
        if key in unlisted:
            problem = f"cannot be read ({unlisted[key]})"
        elif not sum(shard.stop - shard.start for shard in listed[key][0]):
            problem = "has no rows" + (f" (the catalog lists {catalog:,}); check the data "
                                       "files" if catalog else "")
        else:
            continue
        zero_shot = variant_name(spec.base.name, 0, spec.settings.label)
        return (f"{split}: its exemplars' split {pool_split!r} {problem}; a {spec.shots}-shot "
                f"prompt needs exemplars: for prompts without them, build {zero_shot}")
    return None


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
