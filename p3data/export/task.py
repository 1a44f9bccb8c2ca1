"""Exporting one task: its splits written file by file into `<out>/<task>/`, what it says was
exported kept up to date, and what a previous run completed with the same settings from the
same cache kept as it is."""

from __future__ import annotations

import contextlib
import hashlib
import math
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from itertools import islice
from typing import TYPE_CHECKING, Any

import msgspec

from p3data import fs
from p3data.export.exported import (
    ExportedSplit,
    ExportedTask,
    ExportSettings,
    read_exported,
    write_exported,
)
from p3data.export.formats import RowWriter, export_format, is_export_file
from p3data.export.naming import export_file_name, split_order
from p3data.export.provenance import split_provenance
from p3data.export.schema import ExportError, export_arrow_schema, task_specs
from p3data.export.selection import score_eval_twin
from p3data.export.shapes import export_shape
from p3data.format.layout import info_name, stats_name

if TYPE_CHECKING:
    import pyarrow as pa

    from p3data.format.manifest import Manifest
    from p3data.read import CacheReader, TaskSplit

ROW_GROUP_BYTES = 64 << 20  # a row group also ends once its values hold about this much

ExamplesWritten = Callable[[int], None]


@dataclass(frozen=True)
class TaskExportOutcome:
    """One task's line of the summary."""

    task: str
    status: str  # "exported", "already exported" or "failed"
    exported: ExportedTask | None = None
    reason: str = ""


def export_task(cache: CacheReader, task: str, out: str, *, settings: ExportSettings,
                on_examples: ExamplesWritten = lambda n: None) -> TaskExportOutcome:
    """Export one task's splits into `out/<task>/`, keeping the splits that a previous run
    with the same settings, from the same cache files, completed."""
    shape = export_shape(settings.shape)
    if shape.sft and score_eval_twin(task):  # the command line leaves them out beforehand
        raise ExportError(f"{task}: a score-eval twin, one example per answer choice, is not "
                          "SFT data; export it in shape p3")
    folder = fs.join(out, task)
    splits = {split: cache.split(task, split)
              for split in sorted(cache.splits(task), key=split_order)}
    source = source_identity(cache, task, splits)
    present = _sizes(folder)
    previous = read_exported(folder)
    same = previous is not None and previous.settings == settings and previous.source == source
    done = {split: written for split, written in previous.splits.items()
            if split in splits and _intact(written.files, present)} if same else {}
    if same and previous.complete and done.keys() == splits.keys():
        return TaskExportOutcome(task, "already exported", previous)
    specs = task_specs(task, {split: ts.features for split, ts in splits.items()})
    schema = shape.arrow_schema() if shape.sft else export_arrow_schema(specs)
    exported = ExportedTask(task, settings, source, specs, done, complete=False)
    write_exported(folder, exported)  # first: what the folder holds is no longer complete
    kept = {name for split in done.values() for name in split.files}
    fs.delete([fs.join(folder, name) for name in present
               if is_export_file(name) and name not in kept])
    for split, ts in splits.items():
        if split not in done:
            written = export_split(ts, folder, split=split, task=task, settings=settings,
                                   schema=schema, manifest=cache.manifest(task),
                                   on_examples=on_examples)
            exported = msgspec.structs.replace(exported,
                                               splits={**exported.splits, split: written})
            write_exported(folder, exported)
    exported = msgspec.structs.replace(exported, splits={s: exported.splits[s] for s in splits},
                                       complete=True)
    write_exported(folder, exported)
    return TaskExportOutcome(task, "exported", exported)


def export_split(ts: TaskSplit, folder: str, *, split: str, task: str, schema: pa.Schema,
                 settings: ExportSettings, manifest: Manifest | None,
                 on_examples: ExamplesWritten) -> ExportedSplit:
    """Write one split's shards, rows in the settings' shape, under temporary names, then
    rename them all into place. An empty split has no file (P3 has none either): `datasets`
    fails on a split without rows."""
    expected = len(ts)
    count = math.ceil(expected / settings.examples_per_shard)
    names = [export_file_name(split, i, count, settings.extension) for i in range(count)]
    temporaries = {name: fs.join(folder, fs.temporary_name(name)) for name in names}
    fs.makedirs(folder)
    shape = export_shape(settings.shape)
    examples = iter(shape.rows(ts, manifest))
    num_bytes = written = 0
    try:
        for name in names:
            share = islice(examples, min(settings.examples_per_shard, expected - written))
            with _row_writer(temporaries[name], schema, settings.format) as writer:
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
    unknown = split_provenance(ts, manifest).unknown if shape.sft else ()
    return ExportedSplit(examples=written, num_bytes=num_bytes, files=sizes, unknown=unknown)


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


def _intact(files: Mapping[str, int], present: Mapping[str, int]) -> bool:
    return all(present.get(name) == size for name, size in files.items())


def _row_groups(examples: Iterable[Mapping[str, Any]], limit: int
                ) -> Iterator[list[Mapping[str, Any]]]:
    """Lists of at most `limit` examples, and of about ROW_GROUP_BYTES at most."""
    group: list[Mapping[str, Any]] = []
    size = 0
    for example in examples:
        group.append(example)
        size += _size(example)
        if len(group) >= limit or size >= ROW_GROUP_BYTES:
            yield group
            group, size = [], 0
    if group:
        yield group


def _size(value: Any) -> int:
    """About the bytes a row's value holds: texts, arrays, and the SFT shapes' turns and
    provenance, value by value."""
    if isinstance(value, str):
        return len(value)
    if isinstance(value, Mapping):
        return sum(map(_size, value.values()))
    if isinstance(value, list | tuple):
        return sum(map(_size, value))
    return getattr(value, "nbytes", 8)


@contextlib.contextmanager
def _row_writer(path: str, schema: pa.Schema, format_name: str) -> Iterator[RowWriter]:
    filesystem, local = fs.resolve(path)
    with filesystem.open(local, "wb") as handle:
        writer = export_format(format_name).writer(handle, schema)
        try:
            yield writer
        finally:  # also on failure: a parquet writer left open writes when it is collected
            writer.close()


def _rename(source: str, target: str) -> None:
    filesystem, local = fs.resolve(source)
    filesystem.mv(local, fs.resolve(target)[1])
