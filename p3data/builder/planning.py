"""What a cache run has to do: which tasks, grouped into one job per dataset split and way of
rendering it (row rule, dataset step), each split cut into source shards (the units workers
process), and what is already done.

Planning runs on the driver. It lists shards (so it touches the data's metadata, not its
rows) and fingerprints everything the output depends on, so reruns reuse only matching work.
It lists the output folder once, whole (`fs.files_by_folder`): what every task folder holds,
and which work records an earlier run left, so that nothing later asks the store file by file
whether a record exists (on an object store each such question is a request).
A task's folder is planned split by split: splits not asked for, and splits the same settings
built from the same rows, are kept as they are (`completion.withdraw` then removes the rest).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from p3data import fs, t0
from p3data.builder.fingerprint import canonical_json, exemplar_pool, task_fingerprint
from p3data.builder.jobs import (
    CacheConfig,
    CachePlan,
    SplitJob,
    TaskInfo,
    TaskOutput,
    WorkUnit,
    task_folder,
)
from p3data.builder.pools import (
    Listed,
    PoolSpec,
    VariantOutput,
    exemplar_rows,
    exemplar_split,
    pool_refusal,
    pool_units,
    variant_sources,
)
from p3data.builder.selection import Selection, plan_selection
from p3data.builder.work_folder import UnitMarker, read_json
from p3data.dataset_key import DatasetKey
from p3data.datasets.shards import Shard
from p3data.datasets.stores import open_store
from p3data.errors import P3DataError, describe_bug
from p3data.fewshot import VariantSpec
from p3data.fewshot.pool import pool_source
from p3data.format import layout
from p3data.format.cache_folder import is_complete, splits_present
from p3data.format.features import carries_choices
from p3data.format.manifest import EXEMPLARS, Manifest, ManifestError, read_manifest
from p3data.taskset import SourceSplits, SplitCap, TaskDef, source_splits
from p3data.templates.render import RowRule, RowStep


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
              shard_counts: dict[str, tuple[int, ...]], *,
              listing: dict[str, list[str]] | None = None,
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
        reads = {s: [(spec.entry.key, source) for source in source_splits(spec.split_mapping[s])]
                 for s in wanted[spec.name]}
        variant = isinstance(spec, VariantSpec)
        if why := next((unlisted[k] for keys in reads.values() for k in keys if k in unlisted),
                       None) or (
                pool_refusal(spec, wanted[spec.name], listed, unlisted) if variant else None):
            plan.failed[spec.name] = why
            continue
        sources = {s: _rows_identity(spec.split_mapping[s], listed, keys)
                   for s, keys in reads.items()}
        exemplars = exemplar_rows(spec, listed) if variant else {}
        info = plan_task(config, spec, variant_sources(sources, exemplars),
                         {s: tuple(len(listed[k][0]) for k in keys) for s, keys in reads.items()},
                         listing=listing, exemplars=exemplars)
        if info is None:
            plan.done.append(spec.name)
        elif isinstance(info, str):
            plan.failed[spec.name] = info
        else:
            plan.tasks[spec.name] = info
    pools = []
    for (key, source_split), pairs in readers.items():
        for (rule, step, cap, apart), readers_alike in _by_rendering(pairs).items():
            shards = listed.get((key, source_split), ([], {}))[0]
            outputs = tuple(
                TaskOutput(spec.name, split, spec.template, spec.score_eval,
                           carries_choices(spec.template, rule), plan.tasks[spec.name].fingerprint,
                           _variant_output(spec, split, plan.tasks[spec.name], listed)
                           if isinstance(spec, VariantSpec) else None,
                           _selection(config, spec, source_split, shards),
                           *_part_place(plan.tasks[spec.name], split, source_split))
                for spec, split in readers_alike
                if spec.name in plan.tasks and split in plan.tasks[spec.name].splits)
            if not outputs:
                continue
            job = SplitJob(readers_alike[0][0].entry, source_split, outputs, rule, step, cap,
                           apart)
            plan.units += [WorkUnit(job, shard, i, len(shards), _earlier_parts(
                config, job, i, listing)) for i, shard in enumerate(shards)]
            pools += [out.variant.pool for out in outputs if out.variant and out.variant.pool]
    plan.pool_units = pool_units(pools, {(k.name, split): shards
                                         for (k, split), (shards, _) in listed.items()})
    plan.resumed = {unit.name for unit in plan.units if _unit_done(config, unit, listing)}
    return plan


def _rows_identity(sources: SourceSplits, listed: Listed,
                   keys: list[tuple[DatasetKey, str]]) -> dict:
    """The identity of the rows a task split reads: its source split's; for a split of
    several, each one's by its name, in order."""
    if isinstance(sources, str):
        return listed[keys[0]][1]
    return {source: listed[key][1] for source, key in zip(sources, keys, strict=True)}


def _part_place(info: TaskInfo, split: str, source_split: str) -> tuple[int, int]:
    """The part of `split` where the shards of its source split `source_split` begin, and
    which of its source splits that is."""
    index = source_splits(info.spec.split_mapping[split]).index(source_split)
    return info.part_ranges(split)[index].start, index


Rendering = tuple[RowRule, RowStep | None, SplitCap | None, int]


def _by_rendering(pairs: list[tuple[TaskDef, str]]
                  ) -> dict[Rendering, list[tuple[TaskDef, str]]]:
    """A dataset split's (task, task split) readers by how their rows become examples (row
    rule, dataset step, cap): a job renders its rows one way, and each template name once (a
    worker knows templates by name), so a template named as another one of its job goes to a
    job apart (xP3's and xP3mt's `read_passage` of `xquad/xquad.ar`: English and Arabic)."""
    groups: dict[Rendering, list[tuple[TaskDef, str]]] = {}
    named: dict[Rendering, dict[str, tuple]] = {}
    for spec, split in pairs:
        way, apart = (spec.row_rule, spec.dataset_step, spec.split_cap), 0
        template = spec.template
        same = (template.id, template.jinja, template.answer_choices)
        while named.setdefault((*way, apart), {}).setdefault(template.name, same) != same:
            apart += 1
        groups.setdefault((*way, apart), []).append((spec, split))
    return groups


def _selection(config: CacheConfig, spec: TaskDef, source_split: str,
               shards: list[Shard]) -> Selection | None:
    """How a capped task's split chooses its examples (None: a task without a cap keeps
    them all), from the split's row count."""
    if spec.split_cap is None:
        return None
    if spec.score_eval:
        raise P3DataError(f"{spec.name}: a _score_eval task cannot be capped (its examples "
                          "are one per answer choice)")
    return plan_selection(config.selection, spec.split_cap.scaled(config.cap), seed=config.seed,
                          entry=spec.entry, split=source_split, template_id=spec.template.id,
                          rows=shards[-1].stop if shards else 0)


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
    return any(_listed(config.workdir.part(out.task, out.split, out.first_part + index, ".json"),
                       listing) for out in job.outputs)


def _unit_done(config: CacheConfig, unit: WorkUnit, listing: dict[str, list[str]]) -> bool:
    """An earlier run finished this very unit (its marker carries the same key)."""
    path = config.workdir.unit_marker(unit.name)
    marker = read_json(path, UnitMarker) if _listed(path, listing) else None
    return marker is not None and marker.key == unit.key
