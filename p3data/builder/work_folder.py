"""The work folder a build keeps while it runs, `<output>/.p3data-work/`: its paths and its
typed records. The stages write these and the driver reads them (the plan the other way
round); nothing else does.

    plan-<sha256>.pickle            the run's plan, which the graph's steps read
                                    (`p3data.builder.shipping`; removed once the job ends)
    units/<unit>.json               UnitMarker: a source shard stage 1 has finished
    <task>/<split>/part-NNNNN.tfrecord   stage 1's records for a task split and source shard
    <task>/<split>/part-NNNNN.keys  a capped split's part: its examples' sort keys and
                                    sizes, JSON lines in part order (`builder.selection`)
    <task>/<split>/part-NNNNN.json  PartMeta: written after the records, so a meta with the
                                    right fingerprint means the part is complete
    <task>/<split>/dealt/dealt-NNNNN.tfrecord   stage 2's output records of part NNNNN,
                                    grouped by output shard (removed once the split is done)
    <task>/<split>/dealt/dealt-NNNNN.json       DealtPart: where each output shard's records
                                    are in it, and their lengths (written after the records;
                                    a split of one part is dealt into its shards directly)
    <task>/<split>.summary.json     SplitSummary: stage 2's result for a task split
    assembled/<task>/<split>.json   stage 2 has handled a task split (progress)
    status/<task>.json              TaskStatus: why the last stage could not complete a task
                                    (a task it completed has COMPLETED in its folder instead)
    pools/<dataset>/<split>/<template id>-<fingerprint>/   a few-shot exemplar pool: a part
                                    per source shard, then the merged pool, each with its
                                    PoolRecord written last (`p3data.builder.pools`)

A plain task's part holds its final TFRecords, copied as they are into the output shards. A
`_score_eval` twin's records are its examples without the `idx` feature, prefixed by the
example's number within the shard, the choice number and the map entries that sort before
`idx` (a few-shot variant's `exemplar_rows`): `idx[0]` counts kept examples over the whole
split, which is only known once every shard is done.

Work records are not kept across p3data versions: one that cannot be read is redone.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TypeVar

import msgspec

from p3data import fs
from p3data.format.layout import WORK_DIR
from p3data.format.manifest import SplitRecord
from p3data.varints import read_varint, varint

MAX_ERRORS_KEPT = 5  # row errors quoted per part and per split (all are counted)

Record = TypeVar("Record")


class WorkDir:
    """Every path of a build's work folder, spelled once."""

    def __init__(self, output_dir: str):
        self.root = fs.join(output_dir, WORK_DIR)

    def plan(self, digest: str) -> str:
        return fs.join(self.root, f"plan-{digest}.pickle")

    def unit_marker(self, name: str) -> str:
        return fs.join(self.root, "units", name + ".json")

    @property
    def unit_markers(self) -> str:  # at any depth: a unit of `GEM/xlsum` is in `units/GEM/`
        return fs.join(self.root, "units", "**")

    def part(self, task: str, split: str, index: int, suffix: str) -> str:
        return fs.join(self.root, task, split, f"part-{index:05d}{suffix}")

    def dealt_parts(self, task: str, split: str) -> str:
        return fs.join(self.root, task, split, "dealt")

    def dealt(self, task: str, split: str, part: int, suffix: str) -> str:
        return fs.join(self.dealt_parts(task, split), f"dealt-{part:05d}{suffix}")

    def split_summary(self, task: str, split: str) -> str:
        return fs.join(self.root, task, f"{split}.summary.json")

    @property
    def assembled_root(self) -> str:
        return fs.join(self.root, "assembled")

    def assembled(self, task: str, split: str) -> str:
        return fs.join(self.assembled_root, task, split + ".json")

    @property
    def assembled_markers(self) -> str:
        return fs.join(self.assembled_root, "**")

    def task_status(self, task: str) -> str:
        return fs.join(self.root, "status", task + ".json")

    @property
    def task_statuses(self) -> str:
        return fs.join(self.root, "status", "*.json")

    def task(self, task: str) -> str:
        """Everything stage 1 and 2 keep for one task (removed once it is complete; on an
        object store, in the background until the step's end of bundle)."""
        return fs.join(self.root, task)


@dataclass(frozen=True)
class UnitMarker:
    rows: int
    key: str  # what the unit's parts were made for (see `builder.jobs.WorkUnit.key`)


@dataclass
class PartMeta:
    """What stage 1 made of one source shard for one task split."""

    fingerprint: str
    rows: list[int]  # [start, stop) of the source shard: a rerun cut differently redoes it
    rows_read: int = 0
    kept: int = 0  # kept source examples (for twins: before expanding the choices)
    examples: int = 0  # records in the part
    inputs_tokens: int = 0
    inputs_max_tokens: int = 0
    targets_tokens: int = 0
    targets_max_tokens: int = 0
    dropped: dict[str, int] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)  # the first few row errors, verbatim
    schema: dict[str, int] = field(default_factory=dict)  # rows per schema mismatch category
    failed: str = ""  # why the shard could not be processed at all
    traceback: str = ""  # when that was an unexpected error (a bug)
    fewshot: dict = field(default_factory=dict)  # a variant's `FewshotStats.as_dict()`

    def add_example(self, n_in: int, n_out: int) -> None:
        """Count one record with `n_in` input and `n_out` target tokens (ids neither padding
        nor EOS, as seqio's statistics count them)."""
        self.examples += 1
        self.inputs_tokens += n_in
        self.targets_tokens += n_out
        self.inputs_max_tokens = max(self.inputs_max_tokens, n_in)
        self.targets_max_tokens = max(self.targets_max_tokens, n_out)


@dataclass(frozen=True)
class DealtPart:
    """Where a part's records for each output shard are, in the file it was dealt into (or,
    when it is copied whole, in the part itself): shard k's are bytes starts[k]:starts[k + 1],
    records of payload lengths lengths[k], so a shard's index needs no rescanning. (A split's
    only part is dealt straight into the output shards, and has none.)"""

    starts: list[int]
    lengths: list[list[int]]
    whole: bool = False  # copied whole: the part file holds them, as they are


@dataclass(frozen=True)
class SplitSummary:
    """Stage 2's result for one task split: its manifest record, or why it failed."""

    split: str
    fingerprint: str = ""
    record: SplitRecord | None = None  # None: the split failed
    failed: str = ""
    traceback: str = ""


@dataclass(frozen=True)
class PoolRecord:
    """A pool part (one source shard's exemplars) or a merged pool, written after its files."""

    fingerprint: str
    rows: list[int] = field(default_factory=list)  # a part's [start, stop) of the split
    exemplars: int = 0
    failed: str = ""
    traceback: str = ""


@dataclass(frozen=True)
class TaskStatus:
    failed: str = ""
    tracebacks: list[str] = field(default_factory=list)


def write_json(path: str, record: object) -> None:
    fs.write_bytes(path, json_bytes(record))


def write_json_files(records: dict[str, object]) -> None:
    """Several records by path, in no set order (on an object store, concurrently)."""
    fs.write_files({path: json_bytes(record) for path, record in records.items()})


def json_bytes(record: object) -> bytes:
    """A record as its file holds it (JSON)."""
    return json.dumps(msgspec.to_builtins(record), sort_keys=True).encode()


def read_json(path: str, kind: type[Record]) -> Record | None:
    """The record at `path`; None when there is none or it cannot be read (it is redone)."""
    try:
        return msgspec.convert(json.loads(fs.read_bytes(path)), kind)
    except (OSError, ValueError, msgspec.ValidationError):
        return None


def key_lines(keys: Iterable[tuple], sizes: Iterable[tuple[int, int]]) -> bytes:
    """A capped part's kept examples as its keys file holds them: one JSON line each, [sort
    key, inputs tokens, targets tokens]."""
    return b"".join(json.dumps([list(key), *size]).encode() + b"\n"
                    for key, size in zip(keys, sizes, strict=True))


def read_keys(path: str) -> list[tuple[tuple, int, int]]:
    """A capped part's kept examples, in part order: (sort key, inputs tokens, targets
    tokens)."""
    lines = fs.read_bytes(path).splitlines()
    return [(tuple(key), n_in, n_out) for key, n_in, n_out in map(json.loads, lines)]


def twin_record(ordinal: int, choice: int, entries: bytes, before_idx: bytes = b"") -> bytes:
    return varint(ordinal) + varint(choice) + varint(len(before_idx)) + before_idx + entries


def unpack_twin(record: bytes) -> tuple[int, int, bytes, bytes]:
    """(example number within the shard, choice number, the map entries before `idx`, those
    after it)."""
    ordinal, pos = read_varint(record, 0)
    choice, pos = read_varint(record, pos)
    size, pos = read_varint(record, pos)
    return ordinal, choice, record[pos:pos + size], record[pos + size:]
