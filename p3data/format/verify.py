"""Checking a built cache: every task folder seqio could read, against its manifest.

seqio reads a task folder once it holds COMPLETED and globs its shards loosely (any
`<split>.tfrecord-*-of-*<N>` matches, temporaries included), so a complete task must hold
exactly the files its manifest lists, each with the recorded sha256, sound framing (its shard
format's: `shard_format`) and
the recorded count, and record indexes that hold their shards' record offsets; a few-shot
variant's splits must show exemplars of the pool split's rows the same build holds. A cache is OK
when nothing at all is wrong; INCOMPLETE when a run is writing it or crashed (task folders
without COMPLETED, the work dir, the lock) but every complete task is sound; FAILED when a
complete task is not. `against` compares two builds file by file.
"""

from __future__ import annotations

import dataclasses
import hashlib
from typing import BinaryIO

import numpy as np

from p3data import fs
from p3data.format import layout
from p3data.format.cache_folder import is_complete, not_a_cache, scan
from p3data.format.index import RecordIndexError, offsets_from_lengths, read_index
from p3data.format.manifest import (
    EXEMPLARS,
    Manifest,
    ManifestError,
    SplitRecord,
    read_manifest,
)
from p3data.format.shard_format import format_of, is_shard, read_shard, shard_name
from p3data.format.tfrecord import CorruptRecordError
from p3data.lock import LOCK, Holder, describe_lock

SEALS = (layout.MANIFEST, layout.COMPLETED)  # files a manifest never lists
RERUN = "a run is writing it, crashed or failed: rerun p3data cache to finish"
# `p3data index` adds files to complete task folders: each index, then the manifest listing
# them, so a run killed in between leaves indexes not listed yet (or a temporary of either).
RERUN_INDEX = "p3data index is writing it, crashed or failed: rerun p3data index to finish"


@dataclasses.dataclass
class TaskCheck:
    """One task folder, checked: `listed` is name -> sha256 as its manifest records them."""

    folder: str
    names: list[str]
    complete: bool
    task: str | None = None
    listed: dict[str, str] = dataclasses.field(default_factory=dict)
    problems: list[str] = dataclasses.field(default_factory=list)
    unfinished: list[str] = dataclasses.field(default_factory=list)  # an index run's leftovers


@dataclasses.dataclass
class Verdict:
    """What a check found: one line per unfinished part and per problem."""

    checked: int = 0  # complete tasks
    unfinished: list[str] = dataclasses.field(default_factory=list)
    problems: list[str] = dataclasses.field(default_factory=list)

    @property
    def state(self) -> str:
        return "FAILED" if self.problems else "INCOMPLETE" if self.unfinished else "OK"

    @property
    def exit_code(self) -> int:
        return 0 if self.state == "OK" else 1

    def summary(self) -> str:
        return (f"{self.state}: {self.checked} complete tasks checked, "
                f"{len(self.unfinished)} unfinished, {len(self.problems)} problems")


def check_task(folder: str, names: list[str]) -> TaskCheck:
    """Check a task folder holding the files `names`: a folder without COMPLETED is unfinished
    (seqio does not read it) and is not checked further."""
    check = TaskCheck(folder, names, complete=is_complete(names))
    if not check.complete:
        return check
    try:
        manifest = read_manifest(folder)
    except ManifestError as err:
        check.problems.append(str(err))
        return check
    check.task = manifest.task
    lengths: dict[str, list[int]] = {}  # sound shard -> its records' lengths
    for split, record in manifest.splits.items():
        check.listed.update(record.files)
        check.problems += _check_split(folder, split, record, names=names, lengths=lengths)
    check.problems += _exemplar_problems(folder, manifest)
    for name in names:
        if name not in SEALS and name not in check.listed:
            _unlisted(check, name, lengths)
    return check


def _unlisted(check: TaskCheck, name: str, lengths: dict[str, list[int]]) -> None:
    """A file of a complete task that its manifest does not list: what an interrupted
    `p3data index` leaves is unfinished (an index of a listed shard that holds its offsets, a
    temporary of an index or the manifest); anything else is a problem."""
    path = fs.join(check.folder, name)
    indexed = {format_of(shard).index_name(shard): shard_lengths
               for shard, shard_lengths in lengths.items()}
    final = temporary["final"] if (temporary := fs.TEMP_NAME.fullmatch(name)) else None
    if name in indexed:
        if _check_index(path, indexed[name]):
            check.problems.append(f"{path}: a record index not listed in {layout.MANIFEST} "
                                  "whose offsets are not its shard's: rerun p3data index to "
                                  "write it anew")
        else:
            check.unfinished.append(f"{path}: a record index not listed in {layout.MANIFEST} "
                                    f"yet: {RERUN_INDEX}")
    elif final == layout.MANIFEST or (final and final.startswith("index.")):
        check.unfinished.append(f"{path}: a temporary file of p3data index: {RERUN_INDEX}")
    else:
        check.problems.append(f"{path}: not listed in {layout.MANIFEST}, so not part of this "
                              "build, and seqio may read it as data: delete it or rebuild the "
                              "task")


def _check_split(folder: str, split: str, record: SplitRecord, *, names: list[str],
                 lengths: dict[str, list[int]]) -> list[str]:
    """Problems of one split's files; the lengths of the records of its sound shards are
    added to `lengths`."""
    problems = []
    files, examples, num_shards = record.files, record.examples, record.num_shards
    shard_format = format_of(next(iter(record.shards), ""))
    expected = [shard_name(split, index, num_shards, shard_format) for index in range(num_shards)]
    if record.shards != expected:
        problems.append(f"{fs.join(folder, layout.MANIFEST)}: split {split}: the shards listed "
                        f"are not its {num_shards} shards "
                        f"{split}.{shard_format.infix}-*-of-{num_shards:05d}")
    records = 0
    sound: dict[str, list[int]] = {}
    for name, digest in sorted(files.items()):
        path = fs.join(folder, name)
        if name not in names:
            problems.append(f"{path}: missing (listed in {layout.MANIFEST})")
            continue
        with fs.open_read(path) as handle:
            reader = _HashingReader(handle)
            if is_shard(name):
                shard_lengths: list[int] = []
                try:
                    for payload in read_shard(reader, path):
                        shard_lengths.append(len(payload))
                    sound[name] = shard_lengths
                except CorruptRecordError as err:
                    problems.append(str(err))
                records += len(shard_lengths)
            while reader.read(1 << 20):  # the rest of a file, or of a corrupt shard
                pass
        if reader.sha256.hexdigest() != digest:
            problems.append(f"{path}: sha256 differs from the manifest")
    for shard, shard_lengths in sound.items():
        if (index := format_of(shard).index_name(shard)) in files and index in names:
            problems += _check_index(fs.join(folder, index), shard_lengths)
    lengths.update(sound)
    if records != examples:
        problems.append(f"{folder}: split {split} has {records} records, stats say {examples}")
    return problems


def _exemplar_problems(folder: str, manifest: Manifest) -> list[str]:
    """A variant's splits that draw exemplars from one pool split must draw them from the rows
    of it that the split built from those rows holds (or, without one, from the same rows as
    each other): by the rows' identity in `sources`, and by the pool's fingerprint where both
    record one (a manifest written before `pool` was recorded has none). A split kept as it
    was while its pool split was rebuilt from new rows shows exemplars no longer in its pool."""
    drawn: dict[str, list[tuple[str, dict, str | None]]] = {}  # pool split -> its users
    for split, record in manifest.splits.items():
        if (exemplars := manifest.sources.get(split, {}).get(EXEMPLARS)) is not None:
            rows = {key: value for key, value in exemplars.items() if key != "split"}
            pool = record.pool.fingerprint if record.pool else None
            drawn.setdefault(exemplars["split"], []).append((split, rows, pool))
    problems, path = [], fs.join(folder, layout.MANIFEST)
    for source, users in drawn.items():
        holder = next((split for split in manifest.splits
                       if manifest.split_mapping.get(split) == source), None)
        if holder is None:  # no split holds the pool split's rows: its users must agree
            reference = users[0]
        else:
            rows = {k: v for k, v in manifest.sources.get(holder, {}).items() if k != EXEMPLARS}
            reference = next((user for user in users if user[0] == holder), (holder, rows, None))
        name, rows, pool = reference
        for split, their_rows, their_pool in users:
            if split == name or their_rows == rows and (their_pool == pool
                                                         or None in (pool, their_pool)):
                continue
            detail = f" (pools {their_pool[:12]} and {pool[:12]})" if pool and their_pool else ""
            problems.append(
                f"{path}: split {split}'s exemplars are not from the {source!r} rows split "
                f"{name} holds{detail}: its prompts show exemplars no longer in their pool; "
                "rebuild the task" if holder is not None else
                f"{path}: splits {name} and {split} show exemplars from different {source!r} "
                f"rows{detail}: one shows exemplars no longer in its pool; rebuild the task")
    return problems


def _check_index(path: str, lengths: list[int]) -> list[str]:
    """Problems of a record index whose shard holds records of these lengths."""
    offsets = offsets_from_lengths(lengths)
    try:
        indexed = read_index(path, int(offsets[-1]))
    except RecordIndexError as err:
        return [str(err)]
    if not np.array_equal(indexed, offsets):
        return [f"{path}: the record offsets differ from its shard's; rebuild it with p3data "
                "index"]
    return []


class _HashingReader:
    """Hashes what is read through it: one pass both hashes a shard and counts its records."""

    def __init__(self, handle: BinaryIO):
        self.handle = handle
        self.sha256 = hashlib.sha256()

    def read(self, size: int = -1) -> bytes:
        data = self.handle.read(size)
        self.sha256.update(data)
        return data


def verify_task(folder: str) -> list[str]:
    """Problems of one task folder (empty: it is complete and sound)."""
    check = check_task(folder, fs.files_in(folder))
    return check.problems if check.complete else [_unfinished(folder)]


def _unfinished(folder: str) -> str:
    return f"{folder}: unfinished (no {layout.COMPLETED}, seqio will not read it): {RERUN}"


def verify_cache(root: str, against: str | None = None) -> Verdict:
    """Check every task folder of `root` (and of `against`, then compare the two builds)."""
    verdict, ours = _verify(root)
    if against is not None:
        other, theirs = _verify(against)
        verdict.unfinished += other.unfinished
        verdict.problems += other.problems + compare(ours, theirs, root, against)
    return verdict


def _verify(root: str) -> tuple[Verdict, list[TaskCheck]]:
    cache = scan(root)
    if not cache.folders and not cache.leftovers:
        raise not_a_cache(root)
    checks = [check_task(folder, names) for folder, names in cache.folders.items()]
    verdict = Verdict(checked=sum(check.complete for check in checks))
    for check in checks:
        verdict.problems += check.problems
        verdict.unfinished += check.unfinished
        if not check.complete:
            verdict.unfinished.append(_unfinished(check.folder))
    verdict.unfinished += [_leftover(path) for path in cache.leftovers]
    return verdict, checks


def _leftover(path: str) -> str:
    name = path.rpartition("/")[2]
    if name == LOCK:
        try:
            data = fs.read_bytes(path)
        except FileNotFoundError:
            return f"{path}: released while this check ran: {RERUN}"
        return (f"{path}: {describe_lock(data)}: {_rerun(data)}, taking over the lock if that "
                "run is dead")
    if name == layout.WORK_DIR:
        return f"{path}: a run's work files: {RERUN}"
    return f"{path}: a temporary file: {RERUN}"


def _rerun(lock: bytes) -> str:
    """What to rerun to finish what the lock's holder was doing: p3data index, or cache."""
    try:
        command = Holder.from_json(lock).command
    except ValueError:
        return RERUN
    return RERUN_INDEX if command.startswith("p3data index") else RERUN


def compare(ours: list[TaskCheck], theirs: list[TaskCheck], root: str, other: str) -> list[str]:
    """Differences between two builds' complete tasks: tasks, files and checksums as the
    manifests list them (each side's folders were checked against its manifest, so a file
    either manifest leaves out is already a problem)."""
    def by_task(checks: list[TaskCheck]) -> dict[str, dict[str, str]]:
        return {check.task: check.listed for check in checks if check.complete and check.task}

    mine, yours = by_task(ours), by_task(theirs)
    problems = [f"{task}: complete only in {root}" for task in sorted(mine.keys() - yours)]
    problems += [f"{task}: complete only in {other}" for task in sorted(yours.keys() - mine)]
    for task in sorted(mine.keys() & yours.keys()):
        a, b = mine[task], yours[task]
        problems += [f"{task}/{name}: only in {root}" for name in sorted(a.keys() - b)]
        problems += [f"{task}/{name}: only in {other}" for name in sorted(b.keys() - a)]
        problems += [f"{task}/{name}: differs" for name in sorted(a.keys() & b.keys())
                     if a[name] != b[name]]
    return problems
