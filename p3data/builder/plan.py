"""What a cache run has to do: which tasks, grouped into one job per dataset split, each split
cut into source shards (the units workers process), and what is already done.

Planning runs on the driver. It lists shards (so it touches the data's metadata, not its
rows) and fingerprints everything the output depends on, so reruns reuse only matching work.
It lists the output folder once, whole (`fs.files_by_folder`): what every task folder holds,
and which work records an earlier run left, so that nothing later asks the store file by file
whether a record exists (on an object store each such question is a request).
A task's folder is planned split by split: splits not asked for, and splits the same settings
built from the same rows, are kept as they are. Before any worker writes, `withdraw` removes
`COMPLETED`, then the manifest, then every file the build will not reuse, so a crash at any
point leaves a folder seqio does not read as complete; the old manifest stays while it records
kept splits, until the new one, listing them too, replaces it.
"""

from __future__ import annotations

import hashlib
import json
import traceback
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from p3data import fs, t0
from p3data.builder.defaults import DEFAULT_MAX_ERROR_RATE
from p3data.builder.fingerprint import canonical_json, exemplar_pool, task_fingerprint
from p3data.builder.pools import (
    Listed,
    PoolSpec,
    PoolUnit,
    VariantOutput,
    exemplar_rows,
    exemplar_split,
    pool_refusal,
    pool_units,
    variant_sources,
)
from p3data.dataset_key import DatasetKey
from p3data.datasets.catalog import DatasetEntry
from p3data.datasets.shards import ROWS_PER_SHARD, Shard
from p3data.datasets.stores import open_store
from p3data.errors import P3DataError
from p3data.fewshot import VariantSpec
from p3data.fewshot.pool import pool_source
from p3data.format import layout
from p3data.format.cache_folder import is_complete, splits_present
from p3data.format.manifest import (
    EXEMPLARS,
    Manifest,
    ManifestError,
    PoolRef,
    SplitRecord,
    read_manifest,
)
from p3data.format.work import SplitSummary, UnitMarker, WorkDir, read_record
from p3data.taskset import TaskDef
from p3data.templates import Template
from p3data.vocab import EXTRA_IDS

BUG_NOTE = "an unexpected error, a bug in p3data: please report it with the traceback"


@dataclass(frozen=True)
class TaskOutput:
    """One task's share of a dataset split: which template, and whether it is a twin."""

    task: str
    split: str  # the task's split name (ANLI's dev_r1 is the task split "validation")
    template: Template
    score_eval: bool
    fingerprint: str
    variant: VariantOutput | None = None  # a few-shot variant's: how its prompts are made

    @property
    def with_choices(self) -> bool:
        return self.template.answer_choices is not None


@dataclass(frozen=True)
class SplitJob:
    """One pass over a dataset split serves every selected task that reads it."""

    entry: DatasetEntry
    source_split: str
    outputs: tuple[TaskOutput, ...]


@dataclass(frozen=True)
class WorkUnit:
    job: SplitJob
    shard: Shard
    index: int
    count: int
    earlier_parts: bool = True  # an earlier run left part records of it (False: none to read)

    @property
    def name(self) -> str:
        entry = self.job.entry
        return "__".join([entry.dataset, entry.subset or "", self.job.source_split,
                          f"{self.index:05d}"])

    @property
    def rows(self) -> int:
        return self.shard.stop - self.shard.start

    @property
    def key(self) -> str:
        """What this unit's parts are made for; a marker with another key is from other work."""
        outputs = sorted((o.task, o.split, o.fingerprint) for o in self.job.outputs)
        payload = json.dumps([self.shard.start, self.shard.stop, outputs])
        return hashlib.sha256(payload.encode()).hexdigest()


@dataclass(frozen=True)
class CacheConfig:
    """A run's settings: everything its workers need besides the tasks and the units."""

    output_dir: str
    vocab_model: bytes
    data_dir: str | None = None
    hub_root: str | None = None  # a copy of the Hub's layout; None: $P3DATA_HUB_ROOT or the Hub
    extra_ids: int = EXTRA_IDS
    seed: int = 0
    shards: int | None = None  # output shards per split; None: about one per 10k examples
    p3_layout: bool = False
    rows_per_shard: int = ROWS_PER_SHARD  # source rows per unit of work (not in the output)
    # A task split fails when more of its rows than this fail to render (drops by T0's row
    # rule are not failures). Not in the fingerprint: it decides success, not the bytes.
    max_error_rate: float = DEFAULT_MAX_ERROR_RATE
    vocab_sha256: str = ""  # of `vocab_model`, set from it

    def __post_init__(self) -> None:
        object.__setattr__(self, "output_dir", fs.canonical(self.output_dir))
        if self.vocab_model:
            object.__setattr__(self, "vocab_sha256", hashlib.sha256(self.vocab_model).hexdigest())

    @property
    def workdir(self) -> WorkDir:
        return WorkDir(self.output_dir)


@dataclass(frozen=True)
class TaskInfo:
    """What the finalize stage needs to know of one task being built: the splits to build, and
    those its folder keeps as they are (not asked for, or built from the same rows before)."""

    spec: TaskDef
    fingerprint: str  # of the build its manifest will record, every split it lists
    splits: tuple[str, ...]  # task splits to build
    shard_counts: dict[str, int]  # task split -> source shards (= parts)
    sources: dict[str, dict]  # task split -> identity of its rows, for every split listed
    kept: dict[str, SplitRecord] = field(default_factory=dict)  # split -> its record as kept
    present: tuple[str, ...] = ()  # the files its folder held when planned
    summaries: tuple[str, ...] = ()  # splits an earlier run of it left a summary of
    pools: dict[str, PoolRef] = field(default_factory=dict)  # split to build -> its exemplars


@dataclass
class CachePlan:
    config: CacheConfig
    units: list[WorkUnit] = field(default_factory=list)
    pool_units: list[PoolUnit] = field(default_factory=list)  # the pools' parts, built first
    tasks: dict[str, TaskInfo] = field(default_factory=dict)  # tasks to build
    failed: dict[str, str] = field(default_factory=dict)  # task -> why it cannot be built
    done: list[str] = field(default_factory=list)  # tasks already complete with this setup
    skipped: list[str] = field(default_factory=list)  # tasks without any of the splits asked for
    resumed: set[str] = field(default_factory=set)  # units an earlier run finished
    tracebacks: list[str] = field(default_factory=list)  # of unexpected errors (bugs)
    drift: dict[str, tuple[str, ...]] = field(default_factory=dict)  # dataset/split -> accepted

    @property
    def rows(self) -> int:
        """Source rows still to process."""
        return sum(unit.rows for unit in self.units if unit.name not in self.resumed)

    @property
    def resumed_rows(self) -> int:
        return sum(unit.rows for unit in self.units if unit.name in self.resumed)

    @property
    def task_splits(self) -> int:
        return sum(len(info.splits) for info in self.tasks.values())

    @property
    def pools(self) -> dict[str, PoolSpec]:
        """The exemplar pools the pool units feed, by name."""
        return {pool.name: pool for unit in self.pool_units for pool in unit.pools}


def describe_bug(err: BaseException) -> tuple[str, str]:
    """(one line for the summary, the traceback to print after it) of an unexpected error."""
    text = "".join(traceback.format_exception(err))
    return f"{BUG_NOTE} ({type(err).__name__}: {err})", text


def _earlier_build(config: CacheConfig, spec: TaskDef, folder: str) -> Manifest | None:
    """The folder's manifest if it records a build with this run's settings, whatever rows it
    read (its fingerprint is this run's for its sources); None if not, or unreadable."""
    try:
        manifest = read_manifest(folder)
    except ManifestError:
        return None
    same = task_fingerprint(config, spec, manifest.sources) == manifest.fingerprint
    return manifest if same else None


def plan_task(config: CacheConfig, spec: TaskDef, sources: dict[str, dict],
              shard_counts: dict[str, int], *, listing: dict[str, list[str]] | None = None,
              exemplars: Mapping[str, dict] | None = None) -> TaskInfo | str | None:
    """What a run asked to build these splits of a task (`sources`: the identity of each one's
    rows) does with its folder: None when it holds this very build; else the splits to build
    and those to keep as they are: every split not asked for, and those asked for that the
    same settings built from the same rows. A split not asked for that cannot be kept (built
    with other settings, not recorded, or with exemplars from other rows than `exemplars`
    says its pool split has now) is never removed nor kept: the task fails, saying why.
    `listing`: the output folder's files by folder (`fs.files_by_folder`), if listed."""
    folder = task_folder(config, spec.name)
    names = fs.files_in(folder) if listing is None else listing.get(folder, [])
    earlier = _earlier_build(config, spec, folder) if layout.MANIFEST in names else None
    recorded = earlier.sources if earlier else {}
    keepable = {split: record for split, record in (earlier.splits if earlier else {}).items()
                if split in spec.split_mapping and set(record.files) <= set(names)}
    order = list(spec.split_mapping)
    others = sorted(splits_present(names) & set(order) - set(sources), key=order.index)
    if lost := [split for split in others if split not in keepable]:
        return (f"{folder} holds its {', '.join(lost)} split{'s' * (len(lost) > 1)}, built with "
                "other settings or not recorded in its manifest, which building only "
                f"{', '.join(sources)} would lose: run without --splits to rebuild every split")
    if stale := [split for split in others if split in (exemplars or {}) and canonical_json(
            recorded.get(split, {}).get(EXEMPLARS)) != canonical_json(exemplars[split])]:
        return (f"{folder} holds its {', '.join(stale)} split{'s' * (len(stale) > 1)}, whose "
                f"exemplars came from rows of {exemplars[stale[0]]['split']!r} that have changed "
                "since (kept, its prompts would show exemplars no longer in the pool): add "
                + " ".join(f"--splits {split}" for split in stale))
    kept = {split: keepable[split] for split in order if split in others or (
        split in sources and split in keepable
        and canonical_json(recorded.get(split)) == canonical_json(sources[split]))}
    every = {split: recorded.get(split, {}) if split in others else sources[split]
             for split in order if split in others or split in sources}
    fingerprint = task_fingerprint(config, spec, every)
    if is_complete(names) and earlier and earlier.fingerprint == fingerprint:
        return None
    build = tuple(split for split in sources if split not in kept)
    summaries = tuple(split for split in build if listing is None or _listed(
        config.workdir.split_summary(spec.name, split), listing))
    pools = {s: pool for s in build if (pool := exemplar_pool(config, spec, every[s]))}
    return TaskInfo(spec, fingerprint, build, {s: shard_counts[s] for s in build}, every, kept,
                    tuple(sorted(names)), summaries, pools)


def task_folder(config: CacheConfig, task: str) -> str:
    return layout.task_dir(config.output_dir, task, config.p3_layout)


def reusable_record(config: CacheConfig, info: TaskInfo, split: str) -> SplitRecord | None:
    """A split an earlier run of this build assembled, with its files still in place when
    the run was planned (withdrawing keeps them)."""
    if split not in info.summaries:
        return None
    summary = read_record(config.workdir.split_summary(info.spec.name, split), SplitSummary)
    if summary is None or summary.record is None or summary.fingerprint != info.fingerprint:
        return None
    return summary.record if set(summary.record.files) <= set(info.present) else None


def withdraw(config: CacheConfig, info: TaskInfo) -> None:
    """Before a task is (re)built: remove COMPLETED, then the manifest (kept while it records
    splits the build keeps, until the new one replaces it), then every file that neither a
    kept split nor a reusable split of this build lists (old shards, other shard counts,
    strays)."""
    folder = task_folder(config, info.spec.name)
    present = info.present
    if not present:
        return
    keep = {name for record in info.kept.values() for name in record.files}
    keep |= {name for split in info.splits
             for name in getattr(reusable_record(config, info, split), "files", {})}
    seals = (layout.COMPLETED,) if info.kept else (layout.COMPLETED, layout.MANIFEST)
    for name in seals:  # one at a time, in this order: COMPLETED is never left alone
        if name in present:
            fs.delete([fs.join(folder, name)])
    fs.delete([fs.join(folder, name) for name in present
               if name not in keep and name not in (layout.COMPLETED, layout.MANIFEST)])


def _check_splits(specs: Sequence[TaskDef], splits: Sequence[str]) -> None:
    known = sorted({split for spec in specs for split in spec.split_mapping})
    unknown = [split for split in splits if split not in known]
    if unknown:
        raise P3DataError(f"no selected task has split {unknown[0]!r}; their splits: "
                          + ", ".join(known))


def build_plan(config: CacheConfig, specs: Sequence[TaskDef],
               splits: Sequence[str] = ()) -> CachePlan:
    _check_splits(specs, splits)
    plan = CachePlan(config)
    wanted = {spec.name: [s for s in spec.split_mapping if not splits or s in splits]
              for spec in specs}
    plan.skipped = [spec.name for spec in specs if not wanted[spec.name]]
    specs = [spec for spec in specs if wanted[spec.name]]
    readers = t0.group_by_source_split(specs, splits)
    users = {key: [spec for spec, _ in pairs] for key, pairs in readers.items()}
    for spec in specs:  # a variant reads its exemplars' split too
        for split in wanted[spec.name] if isinstance(spec, VariantSpec) else ():
            if (pool_split := exemplar_split(spec, split)) is not None:
                users.setdefault((spec.entry.key, pool_split), []).append(spec)
    listing = fs.files_by_folder(config.output_dir)
    listed, unlisted = _list_splits(config, users, plan)
    for spec in specs:
        reads = {s: (spec.entry.key, spec.split_mapping[s]) for s in wanted[spec.name]}
        variant = isinstance(spec, VariantSpec)
        if why := next((unlisted[k] for k in reads.values() if k in unlisted), None) or (
                pool_refusal(spec, wanted[spec.name], listed, unlisted) if variant else None):
            plan.failed[spec.name] = why
            continue
        sources = {s: listed[k][1] for s, k in reads.items()}
        exemplars = exemplar_rows(spec, listed) if variant else {}
        info = plan_task(config, spec, variant_sources(sources, exemplars),
                         {s: len(listed[k][0]) for s, k in reads.items()}, listing=listing,
                         exemplars=exemplars)
        if info is None:
            plan.done.append(spec.name)
        elif isinstance(info, str):
            plan.failed[spec.name] = info
        else:
            plan.tasks[spec.name] = info
    pools = []
    for (key, source_split), pairs in readers.items():
        outputs = tuple(
            TaskOutput(spec.name, split, spec.template, spec.score_eval,
                       plan.tasks[spec.name].fingerprint,
                       _variant_output(spec, split, plan.tasks[spec.name], listed)
                       if isinstance(spec, VariantSpec) else None)
            for spec, split in pairs
            if spec.name in plan.tasks and split in plan.tasks[spec.name].splits)
        if outputs:
            job = SplitJob(pairs[0][0].entry, source_split, outputs)
            shards = listed[(key, source_split)][0]
            plan.units += [WorkUnit(job, shard, i, len(shards), _earlier_parts(
                config, job, i, listing)) for i, shard in enumerate(shards)]
            pools += [out.variant.pool for out in outputs if out.variant and out.variant.pool]
    plan.pool_units = pool_units(pools, {(k.name, split): shards
                                         for (k, split), (shards, _) in listed.items()})
    plan.resumed = {unit.name for unit in plan.units if _unit_done(config, unit, listing)}
    return plan


def _list_splits(config: CacheConfig, users: dict[tuple[DatasetKey, str], list[TaskDef]],
                 plan: CachePlan) -> tuple[Listed, dict[tuple[DatasetKey, str], str]]:
    """The shards and the identity of each dataset split some task reads, and why each split
    that cannot be listed could not (it fails the tasks that read it)."""
    listed: dict[tuple[DatasetKey, str], tuple[list[Shard], dict]] = {}
    unlisted: dict[tuple[DatasetKey, str], str] = {}
    for (key, source_split), readers in users.items():
        try:
            store = open_store(readers[0].entry, config.data_dir, config.rows_per_shard,
                               hub_root=config.hub_root)
            shards = store.list_shards(source_split)
            listed[(key, source_split)] = (shards, store.identity(source_split))
            if store.drift:
                plan.drift[f"{key}/{source_split}"] = store.drift
        except P3DataError as err:
            reason = str(err)
        except Exception as err:  # noqa: BLE001 - a bug fails this dataset split, not the run
            reason, text = describe_bug(err)
            plan.tracebacks.append(text)
        else:
            continue
        unlisted[key, source_split] = reason
    return listed, unlisted


def _variant_output(spec: VariantSpec, split: str, info: TaskInfo, listed: Listed
                    ) -> VariantOutput:
    pool = None
    if (ref := info.pools.get(split)) is not None:
        pool = PoolSpec(spec.entry, ref.split, spec.template, spec.settings, ref.fingerprint,
                        len(listed[spec.entry.key, ref.split][0]))
    return VariantOutput(spec.shots, spec.settings, spec.draw_task,
                         pool_source(spec.base, split), pool)


def _listed(path: str, listing: dict[str, list[str]]) -> bool:
    return fs.name_of(path) in listing.get(fs.parent_of(path), ())


def _earlier_parts(config: CacheConfig, job: SplitJob, index: int,
                   listing: dict[str, list[str]]) -> bool:
    return any(_listed(config.workdir.part(out.task, out.split, index, ".json"), listing)
               for out in job.outputs)


def _unit_done(config: CacheConfig, unit: WorkUnit, listing: dict[str, list[str]]) -> bool:
    """An earlier run finished this very unit (its marker carries the same key)."""
    path = config.workdir.unit_marker(unit.name)
    marker = read_record(path, UnitMarker) if _listed(path, listing) else None
    return marker is not None and marker.key == unit.key
