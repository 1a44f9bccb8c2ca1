"""What a cache run has to do: which tasks, grouped into one job per dataset split, each split
cut into source shards (the units workers process), and what is already done.

Planning runs on the driver. It lists shards (so it touches the data's metadata, not its
rows) and fingerprints everything the output depends on, so reruns reuse only matching work.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from p3data import __version__, t0
from p3data.cache import fs, layout
from p3data.catalog import DatasetEntry
from p3data.errors import P3DataError
from p3data.stores import (
    ROWS_PER_SHARD,
    HubStore,
    ManualStore,
    MirrorStore,
    RowStore,
    Shard,
    open_store,
)
from p3data.templates import Template

FORMAT_VERSION = 1  # bump when the bytes p3data writes change


@dataclass(frozen=True)
class TaskOutput:
    """One task's share of a dataset split: which template, and whether it is a twin."""

    task: str
    split: str  # the task's split name (ANLI's dev_r1 is the task split "validation")
    template: Template
    score_eval: bool
    fingerprint: str

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


@dataclass(frozen=True)
class CacheConfig:
    """Everything workers need, small enough to ship with every unit."""

    output_dir: str
    vocab_model: bytes
    data_dir: str | None = None
    extra_ids: int = 100
    seed: int = 0
    shards: int | None = None  # output shards per split; None: about one per 10k examples
    p3_layout: bool = False
    rows_per_shard: int = ROWS_PER_SHARD  # source rows per unit of work (not in the output)

    @property
    def work_dir(self) -> str:
        return fs.join(self.output_dir, layout.WORK_DIR)


@dataclass(frozen=True)
class TaskInfo:
    """What the finalize stage needs to know of one task being built."""

    spec: t0.TaskSpec
    fingerprint: str
    splits: tuple[str, ...]  # task splits to build
    shard_counts: dict[str, int]  # task split -> source shards (= parts)
    sources: dict[str, dict]  # task split -> identity of the rows it reads


@dataclass
class CachePlan:
    config: CacheConfig
    units: list[WorkUnit] = field(default_factory=list)
    tasks: dict[str, TaskInfo] = field(default_factory=dict)  # tasks to build
    failed: dict[str, str] = field(default_factory=dict)  # task -> why it cannot be built
    done: list[str] = field(default_factory=list)  # tasks already complete with this setup

    @property
    def rows(self) -> int:
        return sum(unit.shard.stop - unit.shard.start for unit in self.units)


def _file_digest(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(1 << 22):
            digest.update(block)
    return digest.hexdigest()


def source_identity(store: RowStore, shards: Iterable[Shard]) -> dict:
    """What the rows came from: file hashes for local files, repo and revision for the Hub."""
    if isinstance(store, MirrorStore | ManualStore):
        files = sorted({shard.path for shard in shards if shard.path})
        return {"kind": type(store).__name__, "files": {
            Path(p).name: _file_digest(p) for p in files}}
    assert isinstance(store, HubStore)
    hub = store.entry.hub
    return {"kind": "hub", "repo": hub.repo, "config": hub.config, "revision": hub.revision}


def template_digest(template: Template) -> str:
    text = json.dumps([template.jinja, template.answer_choices])
    return hashlib.sha256(text.encode()).hexdigest()


def _fingerprint(config: CacheConfig, spec: t0.TaskSpec, sources: dict) -> str:
    payload = {
        "p3data": __version__, "format": FORMAT_VERSION, "task": spec.name,
        "template": [spec.template.id, template_digest(spec.template)],
        "score_eval": spec.score_eval, "splits": spec.split_mapping, "sources": sources,
        "vocab": hashlib.sha256(config.vocab_model).hexdigest(), "extra_ids": config.extra_ids,
        "seed": config.seed, "shards": config.shards, "p3_layout": config.p3_layout,
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


def is_complete(config: CacheConfig, task: str, fingerprint: str) -> bool:
    folder = layout.task_dir(config.output_dir, task, config.p3_layout)
    manifest = fs.join(folder, layout.MANIFEST)
    if not (fs.exists(fs.join(folder, layout.COMPLETED)) and fs.exists(manifest)):
        return False
    return json.loads(fs.read_bytes(manifest)).get("fingerprint") == fingerprint


def build_plan(config: CacheConfig, specs: Sequence[t0.TaskSpec],
               splits: Sequence[str] = ()) -> CachePlan:
    plan = CachePlan(config)
    wanted = {spec.name: [s for s in spec.split_mapping if not splits or s in splits]
              for spec in specs}
    # (dataset, source split) -> [(spec, task split)]: one pass serves them all
    readers: dict[tuple, list[tuple[t0.TaskSpec, str]]] = {}
    for spec in specs:
        for split in wanted[spec.name]:
            readers.setdefault((spec.entry.key, spec.split_mapping[split]), []).append(
                (spec, split))
    listed: dict[tuple, tuple[RowStore, list[Shard]]] = {}
    for (key, source_split), users in readers.items():
        try:
            store = open_store(users[0][0].entry, config.data_dir, config.rows_per_shard)
            listed[(key, source_split)] = (store, store.list_shards(source_split))
        except P3DataError as err:
            for spec, _ in users:
                plan.failed.setdefault(spec.name, str(err))
    identities = {k: source_identity(store, shards) for k, (store, shards) in listed.items()}
    for spec in specs:
        if spec.name in plan.failed:
            continue
        reads = {s: (spec.entry.key, spec.split_mapping[s]) for s in wanted[spec.name]}
        sources = {s: identities[k] for s, k in reads.items()}
        info = TaskInfo(spec, _fingerprint(config, spec, sources), tuple(wanted[spec.name]),
                        {s: len(listed[k][1]) for s, k in reads.items()}, sources)
        if is_complete(config, spec.name, info.fingerprint):
            plan.done.append(spec.name)
        else:
            plan.tasks[spec.name] = info
    for (key, source_split), users in readers.items():
        outputs = tuple(
            TaskOutput(spec.name, split, spec.template, spec.score_eval,
                       plan.tasks[spec.name].fingerprint)
            for spec, split in users if spec.name in plan.tasks)
        if outputs:
            job = SplitJob(users[0][0].entry, source_split, outputs)
            shards = listed[(key, source_split)][1]
            plan.units += [WorkUnit(job, shard, i, len(shards)) for i, shard in enumerate(shards)]
    return plan
