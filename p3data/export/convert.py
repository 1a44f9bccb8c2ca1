"""A cache's TFRecord shards converted to another shard format, without rebuilding (`p3data
export --format arrayrecord`): a p3data cache, seqio's or a downloaded P3's (`data/<task>/`).

Each task folder is written as the build in that format writes it: the same records in the same
order, shard for shard (read checked, CRCs included), under seqio's names for the format; the
same `info`/`stats` JSON; and for a p3data cache the manifest listing the new files, with the
fingerprint the build in that format has (`fingerprint.in_shard_format`), so the converted
cache is the one `p3data cache --shard-format arrayrecord` builds, and a run of it reuses it. A
cache without manifests (seqio's, P3's) is converted without one.

The output folder is one `p3data cache` could write into (empty, or a cache), never the cache
itself, held under its lock. Each task folder is sealed as a build seals it, `COMPLETED` last,
after withdrawing an earlier one: a crash leaves no folder that looks complete, and a rerun
skips the tasks already converted from the same source and redoes the rest. A task that fails
is one line; the others go on.
"""

from __future__ import annotations

import dataclasses
import hashlib
import posixpath
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from p3data import fs
from p3data.batching import batched
from p3data.builder.fingerprint import in_shard_format
from p3data.builder.folder import check_output_folder
from p3data.errors import P3DataError
from p3data.format import layout
from p3data.format.manifest import Manifest, read_manifest, write_manifest, write_p3_index
from p3data.format.shard_format import ShardFormat, format_of, shard_name
from p3data.format.tfrecord import frame
from p3data.format.tfrecord_shards import TFRECORD
from p3data.read import CacheReader
from p3data.read.shard_files import shard_records

BATCH = 512  # records framed and written at a time
KINDS = ("converted", "already converted", "failed")


@dataclass(frozen=True)
class Converted:
    """What became of one task: "converted", "already converted" or "failed" (`reason`)."""

    task: str
    status: str
    examples: int = 0
    reason: str = ""


def convert_tasks(cache: CacheReader, tasks: Sequence[str], out: str, *,
                  shard_format: ShardFormat, force: bool = False,
                  on_task: Callable[[Converted], None] = lambda converted: None
                  ) -> list[Converted]:
    """Convert `tasks` of `cache` into `out` with shards in `shard_format`, holding `out`'s
    lock (`force` takes a dead run's over)."""
    from p3data.lock import output_lock, refuse_live_writer

    _refuse_overlap(out, cache.root)
    if fs.exists(out):
        check_output_folder(fs.canonical(out))
    converted = []
    with output_lock(out, force=force):
        fs.sweep_temporaries(out)
        for task in tasks:
            try:
                outcome = _convert_task(cache, task, out, shard_format)
            except (P3DataError, OSError) as err:
                refuse_live_writer(cache.root)  # a cache run began rewriting it: say so
                outcome = Converted(task, "failed", reason=" ".join(str(err).split()))
            on_task(outcome)
            converted.append(outcome)
        _index(cache.root, out)
    return converted


def _index(root: str, out: str) -> None:
    """P3's layout's index of split sizes, if the cache has one: made from the converted
    tasks' manifests as a build makes it; a download of P3's, which has none, copied."""
    index = fs.join(root, layout.P3_INDEX)
    if not fs.exists(index):
        return
    if fs.glob(fs.join(out, "data", "*", layout.MANIFEST)):
        write_p3_index(out)
    else:
        fs.write_bytes(fs.join(out, layout.P3_INDEX), fs.read_bytes(index))


def summary(outcomes: Sequence[Converted]) -> str:
    """Per task: examples and what became of it; one line per failure."""
    from p3data.tables import text_table

    rows = [[o.task, o.examples if o.status != "failed" else None, o.status] for o in outcomes]
    kinds = Counter(o.status for o in outcomes)
    lines = [text_table(["task", "examples", "status"], rows)]
    lines += [f"FAILED {o.task}: {o.reason}" for o in outcomes if o.status == "failed"]
    lines.append(", ".join(f"{kinds[kind]} {kind}" for kind in KINDS))
    return "\n".join(lines)


def _refuse_overlap(out: str, root: str) -> None:
    target = posixpath.normpath(fs.canonical(out))
    if target == root or target.startswith(root + "/") or root.startswith(target + "/"):
        raise P3DataError(f"{out}: is, is inside or holds the cache {root}; convert it into "
                          "a folder of its own")


def _convert_task(cache: CacheReader, task: str, out: str,
                  shard_format: ShardFormat) -> Converted:
    source = cache.folder(task)
    folder = fs.join(out, source[len(cache.root) + 1:]) if source != cache.root else out
    manifest = cache.manifest(task)
    splits = {split: cache.split(task, split) for split in cache.splits(task)}
    if others := [path for split in splits.values() for path in split.shards
                  if format_of(path) is not TFRECORD]:
        raise P3DataError(f"{others[0]}: not a TFRecord shard; only TFRecord caches are "
                          "converted")
    texts = {name: fs.read_bytes(fs.join(source, name)) for split in splits
             for name in (layout.info_name(split), layout.stats_name(split))}
    fingerprint = in_shard_format(manifest.fingerprint, shard_format.name) if manifest else None
    examples = sum(len(split) for split in splits.values())
    if _done(folder, texts, fingerprint):
        return Converted(task, "already converted", examples)
    _withdraw(folder)
    files: dict[str, dict[str, str]] = {}  # split -> its shards' names and sha256s
    for name, split in splits.items():
        shards = [(path, shard_name(name, number, len(split.shards), shard_format))
                  for number, path in enumerate(split.shards)]
        files[name] = {}
        written = sum(_convert_shard(path, fs.join(folder, target), shard_format, files[name])
                      for path, target in shards)
        if written != len(split):
            raise P3DataError(f"{source}: split {name} holds {written} records, "
                              f"{layout.stats_name(name)} says {len(split)}; check the cache "
                              "with p3data verify")
    fs.write_files({fs.join(folder, name): text for name, text in texts.items()})
    if manifest is not None:
        write_manifest(folder, _converted_manifest(manifest, fingerprint, files, texts))
    fs.write_bytes(fs.join(folder, layout.COMPLETED), b"")
    return Converted(task, "converted", examples)


def _done(folder: str, texts: dict[str, bytes], fingerprint: str | None) -> bool:
    """Whether `folder` holds this task converted from this source: sealed, with the
    fingerprint it gets (a cache without manifests: the same info and stats)."""
    names = set(fs.files_in(folder))
    if layout.COMPLETED not in names:
        return False
    if fingerprint is not None:
        return layout.MANIFEST in names and read_manifest(folder).fingerprint == fingerprint
    return set(texts) <= names and fs.read_files([fs.join(folder, name) for name in texts]
                                                 ) == list(texts.values())


def _withdraw(folder: str) -> None:
    """Unseal, then empty, a task folder an earlier run left (COMPLETED first: a crash never
    leaves it beside files of another build)."""
    names = fs.files_in(folder)
    if layout.COMPLETED in names:
        fs.delete([fs.join(folder, layout.COMPLETED)])
    fs.delete([fs.join(folder, name) for name in names if name != layout.COMPLETED])


def _convert_shard(path: str, target: str, shard_format: ShardFormat,
                   files: dict[str, str]) -> int:
    """Write the shard at `path` as `target` in `shard_format`, its records as they are, in
    order; its name and sha256 go to `files`. Returns how many records it holds."""
    records = 0
    with shard_format.writers([target]) as writers:
        for batch in batched(shard_records([path]), BATCH):
            writers[target].write(b"".join(map(frame, batch)))
            records += len(batch)
    files[fs.name_of(target)] = writers[target].sha256
    return records


def _converted_manifest(manifest: Manifest, fingerprint: str,
                        shards: dict[str, dict[str, str]], texts: dict[str, bytes]) -> Manifest:
    """The manifest as the build in the new format writes it: its fingerprint, and per split
    the new shards and the same JSON (no record index)."""
    splits = {}
    for split, record in manifest.splits.items():
        files = {**shards[split], **{name: hashlib.sha256(texts[name]).hexdigest()
                                     for name in (layout.info_name(split),
                                                  layout.stats_name(split))}}
        splits[split] = dataclasses.replace(record, files=dict(sorted(files.items())))
    return dataclasses.replace(manifest, fingerprint=fingerprint, splits=splits)
