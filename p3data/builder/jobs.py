"""The run's types, at the bottom of the builder: its settings (`CacheConfig`), what it builds
(`TaskInfo` per task, `SplitJob` per dataset split read the same way, `WorkUnit` per source
shard, `TaskOutput` per task split), and the whole plan (`CachePlan`). Every stage reads them;
they import no stage.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from itertools import accumulate

from p3data import fs
from p3data.builder.defaults import DEFAULT_MAX_ERROR_RATE, DEFAULT_SELECTION
from p3data.builder.pools import PoolSpec, PoolUnit, VariantOutput
from p3data.builder.selection import Selection
from p3data.builder.work_folder import WorkDir
from p3data.datasets.catalog import DatasetEntry
from p3data.datasets.shards import ROWS_PER_SHARD, Shard
from p3data.format import layout
from p3data.format.manifest import PoolRef, SplitRecord
from p3data.taskset import SplitCap, TaskDef
from p3data.templates import Template
from p3data.templates.render import T0_RULE, RowRule, RowStep
from p3data.vocab import EXTRA_IDS


def rendering_record(rule: RowRule, step: RowStep | None) -> dict[str, str | None] | None:
    """How a task's rows become examples, as its fingerprint records it: None for T0's way
    (T0's row rule, no dataset step), so that T0's fingerprints and work stay as they were."""
    if rule == T0_RULE and step is None:
        return None
    return {"row_rule": repr(rule),
            "dataset_step": None if step is None else f"{step.__module__}.{step.__qualname__}"}


@dataclass(frozen=True)
class TaskOutput:
    """One task's share of a dataset split: which template, and whether it is a twin."""

    task: str
    split: str  # the task's split name (ANLI's dev_r1 is the task split "validation")
    template: Template
    score_eval: bool
    with_choices: bool  # its examples carry the answer choices (`features.carries_choices`)
    fingerprint: str
    variant: VariantOutput | None = None  # a few-shot variant's: how its prompts are made
    selection: Selection | None = None  # a capped task's (xP3's): which examples it keeps
    # The task split's part of this dataset split's first shard: the shards of the source
    # splits it reads before this one come first (`TaskInfo.part_ranges`); and which of them
    # this one is.
    first_part: int = 0
    source_index: int = 0


@dataclass(frozen=True)
class SplitJob:
    """One pass over a dataset split serves every selected task that reads it with the same
    row rule, dataset step and cap (T0's tasks and xP3's over one split are two jobs), and
    templates of different names (`apart` counts the jobs a name given twice adds)."""

    entry: DatasetEntry
    source_split: str
    outputs: tuple[TaskOutput, ...]
    rule: RowRule = T0_RULE
    step: RowStep | None = None
    split_cap: SplitCap | None = None
    apart: int = 0

    @property
    def rendering(self) -> str:
        """Empty for T0's way; else a digest of `rendering_record`, the cap and `apart`, which
        tells apart the units of jobs over the same split."""
        record = rendering_record(self.rule, self.step)
        if self.split_cap is not None:
            record = {**(record or {}), "split_cap": [self.split_cap.cap, self.split_cap.pool]}
        if self.apart:
            record = {**(record or {}), "apart": self.apart}
        if record is None:
            return ""
        return hashlib.sha256(json.dumps(record, sort_keys=True).encode()).hexdigest()[:12]


@dataclass(frozen=True)
class WorkUnit:
    job: SplitJob
    shard: Shard
    index: int
    count: int
    earlier_parts: bool = True  # an earlier run left part records of it (False: none to read)

    @property
    def name(self) -> str:
        entry, rendering = self.job.entry, self.job.rendering
        return "__".join([entry.dataset, entry.subset or "", self.job.source_split,
                          *([rendering] if rendering else []), f"{self.index:05d}"])

    @property
    def rows(self) -> int:
        return self.shard.stop - self.shard.start

    def part(self, output: TaskOutput) -> int:
        """The number of this unit's part of `output`'s task split."""
        return output.first_part + self.index

    @property
    def key(self) -> str:
        """What this unit's parts are made for; a marker with another key is from other work.
        A part numbered past its source split's shard (a later source split's) says where;
        the others' keys stay as they were."""
        outputs = sorted((o.task, o.split, o.fingerprint) + ((o.first_part,) if o.first_part
                                                              else ()) for o in self.job.outputs)
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
    selection: str = DEFAULT_SELECTION  # how capped tasks (xP3's) choose examples (`selection`)
    cap: int | None = None  # capped tasks' examples per split (None: each task's own, xP3's)
    shard_format: str = "tfrecord"  # the shards' file format, a `shard_format.SHARD_FORMATS` key

    def __post_init__(self) -> None:
        object.__setattr__(self, "output_dir", fs.canonical(self.output_dir))
        if self.vocab_model:
            object.__setattr__(self, "vocab_sha256", hashlib.sha256(self.vocab_model).hexdigest())

    @property
    def workdir(self) -> WorkDir:
        return WorkDir(self.output_dir)


@dataclass(frozen=True)
class TaskInfo:
    """What assembly and completion need to know of one task being built: the splits to build,
    and those its folder keeps as they are (not asked for, or built from the same rows before)."""

    spec: TaskDef
    fingerprint: str  # of the build its manifest will record, every split it lists
    splits: tuple[str, ...]  # task splits to build
    # task split -> the shards of each source split it reads, in order (its parts: the
    # first source split's shards, then the next one's...)
    shard_counts: dict[str, tuple[int, ...]]
    sources: dict[str, dict]  # task split -> identity of its rows, for every split listed
    kept: dict[str, SplitRecord] = field(default_factory=dict)  # split -> its record as kept
    present: tuple[str, ...] = ()  # the files its folder held when planned
    summaries: tuple[str, ...] = ()  # splits an earlier run of it left a summary of
    pools: dict[str, PoolRef] = field(default_factory=dict)  # split to build -> its exemplars

    def parts(self, split: str) -> int:
        return sum(self.shard_counts[split])

    def part_ranges(self, split: str) -> list[range]:
        """The task split's parts of each source split it reads, in order."""
        counts = self.shard_counts[split]
        return [range(end - count, end)
                for end, count in zip(accumulate(counts), counts, strict=True)]


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


def task_folder(config: CacheConfig, task: str) -> str:
    return layout.task_dir(config.output_dir, task, config.p3_layout)
