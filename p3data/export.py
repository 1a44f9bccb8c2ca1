"""A cache as the folder P3 is on the Hub today: parquet (or JSON lines) for any trainer.

    <out>/README.md                                    the dataset card, written last
    <out>/<task>/<split>-NNNNN-of-MMMMM.parquet        or .jsonl
    <out>/<task>/.p3data-export.json                   what was exported, from what, how

Examples are read through `p3data.read` (no TensorFlow) and written shard by shard in row
groups of bounded size, so memory stays flat whatever the cache's size. Columns are typed from
the task's `info.<split>.json`, not inferred from values. A split without examples has no file
and is not in the card, as in P3: `datasets` cannot load a split without rows.
A split is written under hidden temporary names and renamed once whole; the task's record then
names it, so a rerun with the same settings from the same cache skips what is done and redoes
the rest. The card's `configs` (one per task, a file glob per split) and `dataset_info`
(features, split sizes) let `datasets.load_dataset(out, task)` load any split name, and
`load_dataset("parquet", data_dir=out/task)` works too (it names splits by keyword: train,
validation/val, test).
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import islice
from typing import TYPE_CHECKING, Any, BinaryIO

import msgspec

from p3data import fs
from p3data.errors import P3DataError
from p3data.export_folder import CARD, CARD_DTYPES, RECORD, card_text, refuse_unless_ours
from p3data.format.features import task_features
from p3data.format.layout import info_name, stats_name

if TYPE_CHECKING:
    import pyarrow as pa

    from p3data.read import CacheReader, TaskSplit

FORMATS = ("parquet", "jsonl")
EXPORT_VERSION = 1  # bump when the bytes written for the same settings change
DEFAULT_EXAMPLES_PER_SHARD = 500_000
ROW_GROUP_EXAMPLES = 10_000
ROW_GROUP_BYTES = 64 << 20  # a row group also ends once its values hold about this much

ExamplesWritten = Callable[[int], None]


class ExportError(P3DataError):
    """A task could not be exported (the message says which file, split or record)."""


class Settings(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """How files are cut and encoded: a rerun with other settings exports a task anew."""

    format: str
    examples_per_shard: int = DEFAULT_EXAMPLES_PER_SHARD
    row_group_examples: int = ROW_GROUP_EXAMPLES
    version: int = EXPORT_VERSION

    @property
    def extension(self) -> str:
        return f".{self.format}"


class FeatureSpec(msgspec.Struct, frozen=True):
    dtype: str  # TensorFlow's name, as in info.<split>.json
    sequence: bool


class SplitRecord(msgspec.Struct, frozen=True):
    examples: int
    num_bytes: int  # the split's size in Arrow, as `datasets` cards count it
    files: dict[str, int]  # name -> bytes


class TaskRecord(msgspec.Struct, frozen=True):
    """`<out>/<task>/.p3data-export.json`: the splits exported so far, how, and from what."""

    task: str
    settings: Settings
    source: dict[str, Any]  # the cache task folder's file sizes and manifest digest
    features: dict[str, FeatureSpec]
    splits: dict[str, SplitRecord]
    complete: bool

    @property
    def files(self) -> dict[str, int]:
        return {name: size for split in self.splits.values() for name, size in
                split.files.items()}


@dataclass(frozen=True)
class Outcome:
    """One task's line of the summary."""

    task: str
    status: str  # "exported", "already exported" or "failed"
    record: TaskRecord | None = None
    reason: str = ""


# Selection -------------------------------------------------------------------------------

def select_tasks(available: Sequence[str], mixtures: Sequence[str] = (),
                 patterns: Sequence[str] = ()) -> tuple[list[str], list[str]]:
    """The cache's tasks of the given mixtures (T0's definitions), narrowed (or, without
    mixtures, chosen) by regexes that must match whole task names, all tasks without either;
    and the mixtures' tasks that the cache lacks."""
    names, lacking = sorted(available), []
    if mixtures:
        from p3data import t0

        defined = t0.load_definitions().mixtures
        unknown = [m for m in mixtures if m not in defined]
        if unknown:
            raise P3DataError(f"unknown mixture {unknown[0]!r}; known: {', '.join(defined)}",
                              setting="tasks")
        wanted = {task for m in mixtures for task in defined[m].tasks}
        names, lacking = [n for n in names if n in wanted], sorted(wanted - set(names))
    if patterns:
        from p3data.t0 import matching

        names, lacking = matching(names, patterns), matching(lacking, patterns)
    if not names:
        where = f" of {', '.join(mixtures)}" if mixtures else ""
        matching = f" fully matching {' or '.join(patterns)}" if patterns else ""
        raise P3DataError(f"the cache holds no task{where}{matching}", setting="tasks")
    return names, lacking


# Schema ----------------------------------------------------------------------------------

def feature_specs(features: Mapping[str, Any]) -> dict[str, FeatureSpec]:
    """Features (anything with a TensorFlow `dtype` name and a `shape`, as info.<split>.json
    gives them) as specs, in name order: P3's column order on the Hub."""
    return {name: FeatureSpec(feature.dtype, bool(feature.shape))
            for name, feature in sorted(features.items())}


def task_specs(task: str, splits: Mapping[str, Mapping[str, Any]]) -> dict[str, FeatureSpec]:
    """The features every split of `task` shares. seqio writes an empty split's info as `{}`,
    so such a split takes its siblings'; a task with no example at all gets T0's plain (or
    score-eval) features."""
    found = {split: feature_specs(features) for split, features in splits.items() if features}
    distinct = {msgspec.json.encode(specs): split for split, specs in found.items()}
    if len(distinct) > 1:
        raise ExportError(f"{task}: its splits {' and '.join(distinct.values())} have different "
                          "features in their info.<split>.json; rebuild the task's cache")
    if found:
        return next(iter(found.values()))
    return feature_specs(task_features(score_eval=task.endswith("_score_eval"),
                                       with_choices=False))


def arrow_schema(specs: Mapping[str, FeatureSpec]) -> pa.Schema:
    import pyarrow as pa

    return pa.schema([(name, _arrow_type(spec)) for name, spec in specs.items()])


def _arrow_type(spec: FeatureSpec) -> pa.DataType:
    import pyarrow as pa

    scalar = {"int32": pa.int32(), "int64": pa.int64(), "float32": pa.float32(),
              "float64": pa.float64(), "bool": pa.bool_(), "string": pa.string()}.get(spec.dtype)
    if scalar is None:
        raise ExportError(f"dtype {spec.dtype!r} is not one a cache holds "
                          f"({', '.join(CARD_DTYPES)})")
    return pa.list_(scalar) if spec.sequence else scalar


def record_batch(examples: Sequence[Mapping[str, Any]], schema: pa.Schema) -> pa.RecordBatch:
    """Examples as the reader yields them, in columns of `schema`'s types: token lists go in
    as one concatenated buffer and offsets, not value by value."""
    import numpy as np
    import pyarrow as pa

    columns = []
    for field in schema:
        values = [example[field.name] for example in examples]
        if pa.types.is_list(field.type) and not pa.types.is_string(field.type.value_type):
            item = field.type.value_type.to_pandas_dtype()
            offsets = np.zeros(len(values) + 1, dtype=np.int32)
            np.cumsum([len(v) for v in values], out=offsets[1:])
            flat = np.concatenate(values).astype(item, copy=False) if values else np.empty(0, item)
            columns.append(pa.ListArray.from_arrays(pa.array(offsets), pa.array(flat),
                                                    type=field.type))
        else:
            columns.append(pa.array(values, type=field.type))
    return pa.RecordBatch.from_arrays(columns, schema=schema)


# Writers ---------------------------------------------------------------------------------

class ParquetShard:
    """One parquet file: a row group per batch."""

    def __init__(self, handle: BinaryIO, schema: pa.Schema):
        import pyarrow.parquet as pq

        self.schema = schema
        self.writer = pq.ParquetWriter(handle, schema)

    def write(self, examples: Sequence[Mapping[str, Any]]) -> int:
        """Write a row group; returns its size in Arrow."""
        batch = record_batch(examples, self.schema)
        self.writer.write_batch(batch)
        return batch.nbytes

    def close(self) -> None:
        self.writer.close()


class JsonlShard:
    """One JSON lines file: an object per example, token ids as arrays, keys in schema order."""

    def __init__(self, handle: BinaryIO, schema: pa.Schema):
        self.handle, self.schema = handle, schema
        self.encoder = msgspec.json.Encoder(enc_hook=_plain)

    def write(self, examples: Sequence[Mapping[str, Any]]) -> int:
        batch = record_batch(examples, self.schema)  # checks the types, and measures
        lines = [{name: example[name] for name in self.schema.names} for example in examples]
        self.handle.write(self.encoder.encode_lines(lines))
        return batch.nbytes

    def close(self) -> None:
        pass


def _plain(value: Any) -> Any:
    """numpy arrays and scalars as JSON's lists and numbers."""
    import numpy as np

    if isinstance(value, np.ndarray | np.generic):
        return value.tolist()
    raise TypeError(f"cannot write a {type(value).__name__} as JSON")


WRITERS = {"parquet": ParquetShard, "jsonl": JsonlShard}


# Names -----------------------------------------------------------------------------------

def shard_name(split: str, index: int, count: int, extension: str) -> str:
    return f"{split}-{index:05d}-of-{count:05d}{extension}"


def _is_shard(name: str) -> bool:
    return re.fullmatch(r"\w+(\.\w+)*-\d{5}-of-\d{5}\.(parquet|jsonl)", name) is not None


# Records ---------------------------------------------------------------------------------

def read_record(folder: str) -> TaskRecord | None:
    """A task folder's export record; None when it has none, or one this p3data cannot use."""
    try:
        return msgspec.json.decode(fs.read_bytes(fs.join(folder, RECORD)), type=TaskRecord)
    except FileNotFoundError:
        return None
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None  # unreadable or of another version: the task is exported anew


def _write_record(folder: str, record: TaskRecord) -> None:
    fs.write_bytes(fs.join(folder, RECORD),
                   msgspec.json.format(msgspec.json.encode(record), indent=2) + b"\n")


def source_identity(cache: CacheReader, task: str, splits: Mapping[str, TaskSplit]
                    ) -> dict[str, Any]:
    """What an export of `task` is made from, cheaply: the size of every file it reads (shards,
    info and stats), and the digest of p3data's manifest (itself the sha256 of every file)
    when the cache has one."""
    read = {fs.name_of(path) for ts in splits.values() for path in ts.shards}
    read |= {name for split in splits for name in (info_name(split), stats_name(split))}
    identity: dict[str, Any] = {"files": {name: size for name, size in
                                          _sizes(cache.folder(task)).items() if name in read}}
    if (manifest := cache.manifest(task)) is not None:
        identity["manifest_sha256"] = hashlib.sha256(manifest.to_json().encode()).hexdigest()
    return identity


def _sizes(folder: str) -> dict[str, int]:
    """The files directly in `folder` and their sizes, from one listing."""
    filesystem, local = fs.resolve(folder)
    try:
        entries = filesystem.ls(local, detail=True)
    except (FileNotFoundError, NotADirectoryError):
        return {}
    return {fs.name_of(entry["name"]): entry["size"] for entry in entries
            if entry["type"] == "file"}


def _split_order(split: str) -> tuple[int, str]:
    """train, validation, test, then the others by name, as `datasets` lists splits."""
    usual = ("train", "validation", "test")
    return (usual.index(split), "") if split in usual else (len(usual), split)


def _intact(files: Mapping[str, int], present: Mapping[str, int]) -> bool:
    return all(present.get(name) == size for name, size in files.items())


# Export ----------------------------------------------------------------------------------

def export_task(cache: CacheReader, task: str, out: str, *, settings: Settings,
                on_examples: ExamplesWritten = lambda n: None) -> Outcome:
    """Export one task's splits into `out/<task>/`, keeping the splits that a previous run
    with the same settings, from the same cache files, completed."""
    folder = fs.join(out, task)
    splits = {split: cache.split(task, split)
              for split in sorted(cache.splits(task), key=_split_order)}
    source = source_identity(cache, task, splits)
    present = _sizes(folder)
    previous = read_record(folder)
    same = previous is not None and previous.settings == settings and previous.source == source
    done = {split: record for split, record in previous.splits.items()
            if split in splits and _intact(record.files, present)} if same else {}
    if same and previous.complete and done.keys() == splits.keys():
        return Outcome(task, "already exported", previous)
    specs = task_specs(task, {split: ts.features for split, ts in splits.items()})
    record = TaskRecord(task, settings, source, specs, done, complete=False)
    _write_record(folder, record)  # first: what the folder holds is no longer complete
    kept = {name for split in done.values() for name in split.files}
    fs.delete([fs.join(folder, name) for name in present if _is_shard(name) and name not in kept])
    for split, ts in splits.items():
        if split not in done:
            written = export_split(ts, folder, split=split, task=task, settings=settings,
                                   schema=arrow_schema(specs), on_examples=on_examples)
            record = msgspec.structs.replace(record, splits={**record.splits, split: written})
            _write_record(folder, record)
    record = msgspec.structs.replace(record, splits={s: record.splits[s] for s in splits},
                                     complete=True)
    _write_record(folder, record)
    return Outcome(task, "exported", record)


def export_split(ts: TaskSplit, folder: str, *, split: str, task: str, schema: pa.Schema,
                 settings: Settings, on_examples: ExamplesWritten) -> SplitRecord:
    """Write one split's shards under temporary names, then rename them all into place. An
    empty split has no file (P3 has none either): `datasets` fails on a split without rows."""
    expected = len(ts)
    count = math.ceil(expected / settings.examples_per_shard)
    names = [shard_name(split, i, count, settings.extension) for i in range(count)]
    temporaries = {name: fs.join(folder, fs.temporary_name(name)) for name in names}
    fs.makedirs(folder)
    examples = iter(ts.examples())
    num_bytes = written = 0
    try:
        for name in names:
            share = islice(examples, min(settings.examples_per_shard, expected - written))
            with _shard_writer(temporaries[name], schema, settings.format) as writer:
                for batch in _row_groups(share, settings.row_group_examples):
                    num_bytes += writer.write(batch)
                    written += len(batch)
                    on_examples(len(batch))
        if written < expected or next(examples, None) is not None:
            held = f"{written:,}" if written < expected else "more"
            raise ExportError(f"{task} {split}: the cache holds {held} examples, its "
                              f"stats.{split}.json says {expected:,}; rebuild the task")
        sizes = {name: fs.size(path) for name, path in temporaries.items()}
        for name, path in temporaries.items():
            _rename(path, fs.join(folder, name))
    except BaseException:
        fs.delete(list(temporaries.values()))
        raise
    return SplitRecord(examples=written, num_bytes=num_bytes, files=sizes)


def _row_groups(examples: Iterable[Mapping[str, Any]], limit: int
                ) -> Iterator[list[Mapping[str, Any]]]:
    """Lists of at most `limit` examples, and of about ROW_GROUP_BYTES at most."""
    group: list[Mapping[str, Any]] = []
    size = 0
    for example in examples:
        group.append(example)
        size += sum(len(v) if isinstance(v, str) else getattr(v, "nbytes", 8)
                    for v in example.values())
        if len(group) >= limit or size >= ROW_GROUP_BYTES:
            yield group
            group, size = [], 0
    if group:
        yield group


@contextlib.contextmanager
def _shard_writer(path: str, schema: pa.Schema, kind: str) -> Iterator[ParquetShard | JsonlShard]:
    filesystem, local = fs.resolve(path)
    with filesystem.open(local, "wb") as handle:
        writer = WRITERS[kind](handle, schema)
        try:
            yield writer
        finally:  # also on failure: a parquet writer left open writes when it is collected
            writer.close()


def _rename(source: str, target: str) -> None:
    filesystem, local = fs.resolve(source)
    filesystem.mv(local, fs.resolve(target)[1])


# The whole folder ------------------------------------------------------------------------

def export(cache: CacheReader, tasks: Sequence[str], out: str, *, settings: Settings,
           force: bool = False,
           on_task: Callable[[Outcome], None] = lambda outcome: None,
           on_examples: ExamplesWritten = lambda n: None) -> list[Outcome]:
    """Export `tasks` of `cache` into `out` holding its lock (`force` takes a dead run's over),
    then write the card from every task complete in `out`. `out` is refused unless it is
    empty or an export p3data made. A task that fails (a corrupt record, a cache that does
    not add up) is an outcome; the others go on."""
    from p3data.lock import output_lock

    refuse_unless_ours(out, cache=cache.root)
    with output_lock(out, force=force):
        fs.sweep_temporaries(out)
        _refuse_mixed_formats(out, tasks, settings)
        outcomes = []
        try:
            for task in tasks:
                try:
                    outcome = export_task(cache, task, out, settings=settings,
                                          on_examples=on_examples)
                except (P3DataError, OSError) as err:
                    outcome = Outcome(task, "failed", reason=_one_line(err))
                on_task(outcome)
                outcomes.append(outcome)
        finally:  # interrupted too: the card lists no task that is being rewritten
            fs.write_bytes(fs.join(out, CARD), card_text(complete_records(out)).encode())
    return outcomes


def complete_records(out: str) -> list[TaskRecord]:
    """The records of the tasks whose every split `out` holds, by task name."""
    records = (read_record(fs.parent_of(path)) for path in fs.glob(fs.join(out, "*", RECORD)))
    return sorted((r for r in records if r is not None and r.complete), key=lambda r: r.task)


def _refuse_mixed_formats(out: str, tasks: Sequence[str], settings: Settings) -> None:
    """One card loads one format: a folder holding tasks in another format (other than those
    this run exports anew) is not one to add to."""
    other = [r.task for r in complete_records(out)
             if r.settings.format != settings.format and r.task not in set(tasks)]
    if other:
        raise P3DataError(f"{out} holds tasks exported as another format (e.g. {other[0]}); "
                          f"export {settings.format} to another folder")


def _one_line(err: BaseException) -> str:
    text = str(err) if isinstance(err, P3DataError) else f"{type(err).__name__}: {err}"
    return " ".join(text.split())
