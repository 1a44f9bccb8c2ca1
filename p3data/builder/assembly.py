"""Stage 2: parts -> a task split in seqio's layout: output shards with their record indexes,
info and stats JSON, and the split's summary (what `completion` then lists in the manifest).

Examples go to output shards round-robin in source order, so each shard is an even sample of
the split and the same inputs always give the same bytes. A split is assembled in parallel and
in linear time: each part's examples are dealt into one file, grouped by output shard, with a
work record of where each shard's records are and their lengths (`deal_part`, per part); then
each shard is its range of every part's file in part order, and its record index is made from
the recorded lengths (`write_shard`, per shard); then `finish_split` writes the JSON that needs
every shard's digest. A split of one part needs no dealt file: its part is dealt straight into
the output shards, whose names and digests go to `finish_split` through the graph.

A task split of several source splits (xP3's `train`) has their parts one after another, the
first source split's shards first (`TaskInfo.part_ranges`). A capped task split (xP3's) keeps,
of each source split past its cap, the examples of smallest sort key over that source split's
parts (`builder.selection`), in source order: the parts' records, dealt as above, less those
past the threshold their keys give (`triage_split`).

A rebuild first withdraws the old build (`completion.withdraw`, before any worker writes),
keeping the files of splits an earlier run of the same build assembled (`reusable_record`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass, replace
from itertools import compress

import numpy as np

from p3data import fs
from p3data.batching import batched
from p3data.builder import work_folder as work
from p3data.builder.jobs import CacheConfig, TaskInfo, task_folder
from p3data.builder.selection import SortKey, cap_parts
from p3data.builder.work_folder import DealtPart, SplitSummary
from p3data.fewshot import VariantSpec
from p3data.fewshot.stats import FewshotStats
from p3data.format import layout
from p3data.format.example import encode_entries, wrap_entries
from p3data.format.features import IDX, carries_choices, task_features
from p3data.format.index import FRAMING, scan_offsets
from p3data.format.manifest import SplitRecord
from p3data.format.shard_format import SHARD_FORMATS, ShardFormat, is_shard, shard_name
from p3data.format.tfrecord import frame, read_frames, read_records
from p3data.object_store import on_object_store
from p3data.taskset import source_splits
from p3data.templates.render import RENDER_ERROR

EXAMPLES_PER_SHARD = 10_000  # with --shards unset: about one output shard per 10k examples
MAX_AUTO_SHARDS = 64  # seqio's --min_shards default: enough for 64 reading hosts
DEAL_BATCH = 512  # records dealt at a time (larger blocks cost page faults, not fewer calls)
DEAL_MEMORY = 256 << 20  # about the most bytes of records a part's dealing holds at once
COPY_BLOCK = 1 << 20  # bytes read at a time when writing a shard
OPEN_SHARDS = 64  # output shards a worker writes at once (each an open file)


def info_features(info: TaskInfo) -> dict[str, dict]:
    """`info.<split>.json` features, as seqio's writer derives them from an example."""
    features = task_features(score_eval=info.spec.score_eval,
                             with_choices=carries_choices(info.spec.template, info.spec.row_rule),
                             fewshot=isinstance(info.spec, VariantSpec))
    return {name: feature.info for name, feature in features.items()}


def shard_count(config: CacheConfig, examples: int) -> int:
    if config.p3_layout:
        return 1
    if config.shards:
        return config.shards
    return min(MAX_AUTO_SHARDS, max(1, -(-examples // EXAMPLES_PER_SHARD)))


@dataclass(frozen=True)
class PartJob:
    """Deal one part's examples to the output shards: example `first + j` of the split (the
    part's j-th) goes to shard `(first + j) % shards`; `offset` kept examples precede it. A
    capped split past its cap keeps only examples whose sort key is at most `threshold`."""

    task: str
    split: str
    index: int
    shards: int
    first: int
    offset: int
    threshold: SortKey | None = None


@dataclass(frozen=True)
class ShardJob:
    """Write output shard `index` of `shards` from its records in every dealt part, in order."""

    task: str
    split: str
    index: int
    shards: int


@dataclass(frozen=True)
class SplitAssembly:
    """A task split whose parts are all done: its record but for the files, and its parts'
    jobs."""

    split: str
    record: SplitRecord
    parts: tuple[PartJob, ...]


def triage_split(config: CacheConfig, info: TaskInfo, split: str) -> SplitSummary | SplitAssembly:
    """Sort a task split whose parts are all done: reuse an earlier run's result, fail it (a part
    missing or failed, or too many rows failed), or sum its parts' records and give each part
    its place in the output shards, to be assembled (`SplitAssembly`)."""
    task = info.spec.name
    if (record := reusable_record(config, info, split)) is not None:
        return SplitSummary(split, info.fingerprint, record)
    metas = []
    for index in range(info.parts(split)):
        meta = work.read_json(config.workdir.part(task, split, index, ".json"), work.PartMeta)
        if meta is None or meta.fingerprint != info.fingerprint:
            return SplitSummary(split, failed=f"source shard {index} was not processed")
        metas.append(meta)
    if failed := next((m for m in metas if m.failed), None):
        return SplitSummary(split, failed=failed.failed, traceback=failed.traceback)
    thresholds: list[SortKey | None] = [None] * len(metas)
    if info.spec.split_cap is not None:
        keys = [config.workdir.part(task, split, index, ".keys") for index in range(len(metas))]
        thresholds = cap_parts(metas, info.part_ranges(split),
                               info.spec.split_cap.scaled(config.cap).cap, keys)
    dropped = _sum_dicts(m.dropped for m in metas)
    record = SplitRecord(
        rows_read=sum(m.rows_read for m in metas), rows_kept=sum(m.kept for m in metas),
        render_errors=dropped.pop(RENDER_ERROR, 0), dropped=dropped,
        errors=[e for m in metas for e in m.errors][:work.MAX_ERRORS_KEPT],
        schema=_sum_dicts(m.schema for m in metas), stats={}, num_shards=0, files={},
        fewshot=_fewshot_stats(info, metas), pool=info.pools.get(split),
        source_examples=_source_examples(info, split, metas))
    if reason := _verdict(config, info, split, record):
        return SplitSummary(split, failed=reason)
    stats = {"examples": sum(m.examples for m in metas)}
    if stats["examples"]:
        for key in ("inputs_tokens", "targets_tokens"):
            stats[key] = sum(getattr(m, key) for m in metas)
            stats[key.replace("tokens", "max_tokens")] = max(
                getattr(m, key.replace("tokens", "max_tokens")) for m in metas)
    count = shard_count(config, stats["examples"])
    parts, first, offset = [], 0, 0
    for index, (meta, threshold) in enumerate(zip(metas, thresholds, strict=True)):
        parts.append(PartJob(task, split, index, count, first, offset, threshold))
        first, offset = first + meta.examples, offset + meta.kept
    return SplitAssembly(split, replace(record, stats=stats, num_shards=count), tuple(parts))


def _source_examples(info: TaskInfo, split: str,
                     metas: list[work.PartMeta]) -> dict[str, int] | None:
    """A split of several source splits: the examples each gave (None: a split of one)."""
    sources = info.spec.split_mapping[split]
    if isinstance(sources, str):
        return None
    return {source: sum(metas[index].examples for index in parts)
            for source, parts in zip(sources, info.part_ranges(split), strict=True)}


def deal_part(config: CacheConfig, info: TaskInfo, job: PartJob) -> list[dict[str, str]]:
    """Write one part's examples, as output records, into one file grouped by output shard,
    then the record of where each shard's records are and their lengths; or, if it is its
    split's only part, into the output shards themselves. Returns, by output shard, the
    files written for it (the shard and its index, with their sha256s), if any."""
    work_dir, shards = config.workdir, SHARD_FORMATS[config.shard_format]
    path = work_dir.part(job.task, job.split, job.index, ".tfrecord")
    if info.parts(job.split) == 1:
        written = _deal_into_shards(path, task_folder(config, job.task), shards,
                                    score_eval=info.spec.score_eval, job=job,
                                    keep=_kept(config, job))
        names = [shard_name(job.split, shard, job.shards, shards)
                 for shard in range(job.shards)]
        return [{file: written[file] for file in (name, shards.index_name(name)) if file}
                for name in names]
    if _copied_whole(info, job):  # the part is the shard's records as they are
        offsets = scan_offsets(path, fs.size(path))
        dealt = DealtPart([0, int(offsets[-1])], [(np.diff(offsets) - FRAMING).tolist()],
                          whole=True)
    else:
        dealt = _deal(path, work_dir.dealt(job.task, job.split, job.index, ".tfrecord"),
                      score_eval=info.spec.score_eval, job=job, keep=_kept(config, job))
    work.write_json(work_dir.dealt(job.task, job.split, job.index, ".json"), dealt)
    return [{} for _ in range(job.shards)]


def _kept(config: CacheConfig, job: PartJob) -> list[bool] | None:
    """Whether each of the part's examples is kept (None: all are)."""
    if job.threshold is None:
        return None
    path = config.workdir.part(job.task, job.split, job.index, ".keys")
    return [key <= job.threshold for key, *_ in work.read_keys(path)]


def _deal(path: str, target: str, *, score_eval: bool, job: PartJob,
          keep: list[bool] | None) -> DealtPart:
    """Deal the part's records to their output shards in as many passes over the part as
    holding DEAL_MEMORY bytes of records at a time takes (one, for parts of that size)."""
    per_pass = max(1, job.shards * DEAL_MEMORY // max(fs.size(path), 1))
    starts, lengths = [0], []
    with fs.atomic_writer(target) as dealt:
        for low in range(0, job.shards, per_pass):
            kept: list[list[bytes]] = [[] for _ in range(low, min(low + per_pass, job.shards))]
            position = job.first  # of the next record in the split
            with fs.open_read(path) as part:
                records = _final_records(part, path, score_eval, job.offset, keep=keep)
                for block in batched(records, DEAL_BATCH):
                    for shard, records_kept in enumerate(kept, start=low):
                        records_kept += block[(shard - position) % job.shards::job.shards]
                    position += len(block)
            for records_kept in kept:
                dealt.write(b"".join(records_kept))
                starts.append(starts[-1] + sum(map(len, records_kept)))
                lengths.append([len(record) - FRAMING for record in records_kept])
    return DealtPart(starts, lengths)


def _deal_into_shards(path: str, folder: str, shards: ShardFormat, *, score_eval: bool,
                      job: PartJob, keep: list[bool] | None) -> dict[str, str]:
    """Deal a split's only part straight into its output shards, at most OPEN_SHARDS of them
    open at a time (a pass over the part per group), each written with its record index if
    its format has one (on an object store, uploaded together in the background until the
    step's bundle ends: the next stage reads them, after a GroupByKey); returns their names
    and sha256s."""
    names = [shard_name(job.split, shard, job.shards, shards) for shard in range(job.shards)]
    written: dict[str, str] = {}
    for low in range(0, job.shards, OPEN_SHARDS):
        group = range(low, min(low + OPEN_SHARDS, job.shards))
        paths = {shard: fs.join(folder, names[shard]) for shard in group}
        lengths: dict[int, list[int]] = {shard: [] for shard in group}
        with shards.writers(list(paths.values()), later=True) as writers:
            position = job.first  # of the next record in the split
            with fs.open_read(path) as part:
                for block in batched(_final_records(part, path, score_eval, job.offset, keep=keep),
                                     DEAL_BATCH):
                    for shard in group:
                        records = block[(shard - position) % job.shards::job.shards]
                        writers[paths[shard]].write(b"".join(records))
                        lengths[shard] += [len(record) - FRAMING for record in records]
                    position += len(block)
            written |= _write_indexes(folder, shards, {names[shard]: lengths[shard]
                                                       for shard in group})
        written |= {names[shard]: writers[paths[shard]].sha256 for shard in group}
    return written


def _write_indexes(folder: str, shards: ShardFormat,
                   lengths: dict[str, list[int]]) -> dict[str, str]:
    """Shards' record indexes (if their format has them), from their records' payload
    lengths: their names and sha256s (on an object store, uploaded in the background)."""
    if shards.index_name(next(iter(lengths))) is None:
        return {}
    indexes = {fs.join(folder, shards.index_name(shard)): shards.index_bytes(shard_lengths)
               for shard, shard_lengths in lengths.items()}
    fs.write_files(indexes, later=True)
    return {fs.name_of(path): hashlib.sha256(index).hexdigest()
            for path, index in indexes.items()}


def write_shard(config: CacheConfig, info: TaskInfo, job: ShardJob) -> dict[str, str]:
    """Write the shard from its range of every part's dealt file, in part order, then its
    record index (if its format has one) from the recorded lengths; returns their names and
    sha256s."""
    work_dir, folder = config.workdir, task_folder(config, job.task)
    shards = SHARD_FORMATS[config.shard_format]
    name = shard_name(job.split, job.index, job.shards, shards)
    path = fs.join(folder, name)
    lengths: list[int] = []
    dealt_parts = [work.read_json(work_dir.dealt(job.task, job.split, part, ".json"),
                                    DealtPart) for part in range(info.parts(job.split))]
    if missing := [part for part, dealt in enumerate(dealt_parts) if dealt is None]:
        raise RuntimeError(f"{job.task}/{job.split}: part {missing[0]} was not dealt")
    with shards.writers([path]) as writers:
        for part, dealt in enumerate(dealt_parts):
            source_path = (work_dir.part(job.task, job.split, part, ".tfrecord") if dealt.whole
                           else work_dir.dealt(job.task, job.split, part, ".tfrecord"))
            start, end = dealt.starts[job.index], dealt.starts[job.index + 1]
            with fs.open_read(source_path) as source:
                source.seek(start)
                while start < end and (block := source.read(min(COPY_BLOCK, end - start))):
                    writers[path].write(block)
                    start += len(block)
            if start != end:
                raise RuntimeError(f"{source_path}: ends at byte {start}, its record says {end}")
            lengths += dealt.lengths[job.index]
    return {name: writers[path].sha256, **_write_indexes(folder, shards, {name: lengths})}


def _copied_whole(info: TaskInfo, job: PartJob) -> bool:
    """A plain task's part holds its output records as they are: with one output shard, the
    shard is its parts one after another, with nothing to deal, unless the part holds examples
    past a cap (`job.threshold`)."""
    return job.shards == 1 and not info.spec.score_eval and job.threshold is None


def finish_split(config: CacheConfig, info: TaskInfo, assembly: SplitAssembly,
                 shards: dict[str, str]) -> SplitSummary:
    """Once every output shard and its index (if its format has one) are written (`shards`:
    their names and sha256s): info and stats JSON, then the split's summary, kept in the work
    folder so a rerun reuses it, and the marker that counts the split assembled (progress).
    On an object store they are uploaded together, in the background until the step's bundle
    ends (the task's last stage reads them, after a GroupByKey): a rerun reuses a summary
    only when every file it lists was there (`reusable_record`)."""
    task, split, record = info.spec.name, assembly.split, assembly.record
    written, formatted = sum(map(is_shard, shards)), SHARD_FORMATS[config.shard_format]
    indexed = formatted.index_name(shard_name(split, 0, 1, formatted)) is not None
    if written != record.num_shards or len(shards) != (1 + indexed) * written:
        raise RuntimeError(f"{task}/{split}: {written} of {record.num_shards} output shards "
                           f"were written, and {len(shards) - written} indexes")
    folder = task_folder(config, task)
    version = layout.P3_SEQIO_VERSION if config.p3_layout else layout.seqio_version()
    info_text = layout.info_json(info_features(info) if record.stats["examples"] else {},
                                 record.num_shards, version)
    files = dict(sorted(shards.items()))
    texts = {layout.info_name(split): info_text.encode(),
             layout.stats_name(split): layout.stats_json(record.stats).encode()}
    files.update((name, hashlib.sha256(text).hexdigest()) for name, text in texts.items())
    summary = SplitSummary(split, info.fingerprint, replace(record, files=files))
    fs.write_files({**{fs.join(folder, name): text for name, text in texts.items()},
                    config.workdir.split_summary(task, split): work.json_bytes(summary),
                    config.workdir.assembled(task, split): b"{}"}, later=True)
    _free(config.workdir.dealt_parts(task, split))
    return summary


def _free(work_files: str) -> None:
    """Delete a split's dealt parts once its shards are written (a copy of its data): now
    on a disk; on an object store with the task's work folder once the task is complete,
    in the background (`complete_task`)."""
    if not on_object_store(work_files):
        fs.delete_tree(work_files)


def _verdict(config: CacheConfig, info: TaskInfo, split: str, record: SplitRecord) -> str:
    """Why a fully processed split still is not a success ("" when it is one). No example
    is a success only when T0's row rule left out every row."""
    sources = source_splits(info.spec.split_mapping[split])
    rows, errors = record.rows_read, record.render_errors
    first = f": {record.errors[0]}" if record.errors else ""
    if not rows:
        listed = sum(info.spec.entry.splits.get(source) or 0 for source in sources)
        named = (f"source split {sources[0]!r} has" if len(sources) == 1 else
                 f"source splits {', '.join(map(repr, sources))} have")
        return (f"{named} no rows (the catalog lists {listed:,}); check the data files"
                if listed else f"{named} no rows")
    if errors == rows:
        return f"every one of the {rows:,} rows failed to render{first}"
    if errors and not record.rows_kept:  # the rows that failed may be all it would have kept
        return (f"no example: {rows - errors:,} rows left out by T0's row rule, and the other "
                f"{errors:,} failed to render{first}")
    if errors > config.max_error_rate * rows:
        return (f"{errors:,} of {rows:,} rows ({errors / rows:.1%}) failed to render, more "
                f"than the maximum error rate {config.max_error_rate:.1%}{first}")
    return ""


def _fewshot_stats(info: TaskInfo, metas: list[work.PartMeta]) -> dict | None:
    """A variant split's few-shot statistics, its parts' summed (None: a T0 task's)."""
    if not isinstance(info.spec, VariantSpec):
        return None
    return FewshotStats.summed(meta.fewshot for meta in metas).as_dict()


def _sum_dicts(dicts) -> dict[str, int]:
    total: dict[str, int] = {}
    for counts in dicts:
        for key, value in counts.items():
            total[key] = total.get(key, 0) + value
    return dict(sorted(total.items()))


def _final_records(part, path: str, score_eval: bool, offset: int, *,
                   keep: list[bool] | None = None) -> Iterator[bytes]:
    """A part's records as output records: copied as they are, or given their `idx`; only
    those `keep` says (a capped task's: plain, one record per example)."""
    if keep is not None:
        yield from compress(read_frames(part, path), keep)
        return
    if not score_eval:
        yield from read_frames(part, path)
        return
    for record in read_records(part, path):
        ordinal, choice, before, after = work.unpack_twin(record)
        idx = encode_entries({IDX: [ordinal + offset, choice]})
        yield frame(wrap_entries(before + idx + after))


def reusable_record(config: CacheConfig, info: TaskInfo, split: str) -> SplitRecord | None:
    """A split an earlier run of this build assembled, with its files still in place when
    the run was planned (withdrawing keeps them)."""
    if split not in info.summaries:
        return None
    summary = work.read_json(config.workdir.split_summary(info.spec.name, split), SplitSummary)
    if summary is None or summary.record is None or summary.fingerprint != info.fingerprint:
        return None
    return summary.record if set(summary.record.files) <= set(info.present) else None
