"""Record indexes for a cache built without them: stock `seqio_cache_tasks` output, P3's
folders, or a cache an older p3data wrote (whose manifests then list the new files too).

Resumable: a shard whose index is there and describes it is skipped (in a cache with manifests,
only one the manifest lists); each index is written atomically, and a task's manifest is
rewritten (atomically) once all its indexes are there. A run killed in between leaves indexes
the manifest does not list yet: `p3data verify` says so, and a rerun lists them.
"""

from __future__ import annotations

import hashlib
import sys
from dataclasses import dataclass, field, replace
from typing import TextIO

from p3data import fs
from p3data.format.index import (
    RecordIndexError,
    index_bytes,
    index_for,
    read_index,
    scan_offsets,
)
from p3data.format.manifest import write_manifest
from p3data.format.shard_format import format_of
from p3data.lock import output_lock, refuse_live_writer
from p3data.progress import ProgressLine
from p3data.read.reader import open_cache


@dataclass
class IndexResult:
    tasks: int = 0
    shards: int = 0
    written: int = 0  # indexes written (the others were there)
    records: int = 0  # in the shards indexed by this run
    manifests: list[str] = field(default_factory=list)  # tasks whose manifest now lists them

    def summary(self) -> str:
        updated = f"; {len(self.manifests)} manifests updated" if self.manifests else ""
        return (f"{self.tasks} tasks, {self.shards:,} shards: {self.written:,} indexes written "
                f"({self.records:,} records), {self.shards - self.written:,} already there"
                f"{updated}")


def index_cache(root: str, *, force: bool = False, progress_every: float = 10.0,
                out: TextIO = sys.stderr) -> IndexResult:
    """Write every missing record index of the cache at `root` (holding its lock, once it is
    known to be a cache: a wrong path creates nothing). A folder a live run is writing (a
    `p3data cache` rebuilding it) is refused naming that run, whatever it holds meanwhile."""
    refuse_live_writer(root)
    open_cache(root)
    with output_lock(root, force=force, command="p3data index " + root):
        fs.sweep_temporaries(root)
        cache = open_cache(root)
        result = IndexResult(tasks=len(cache.tasks))
        progress = ProgressLine("p3data index", unit="shards", every=progress_every,
                                stream=out)
        for task in cache.tasks:
            manifest = cache.manifest(task)
            indexes: dict[str, dict[str, str]] = {}  # split -> index name -> sha256
            for split in cache.splits(task):
                indexes[split] = {}
                listed = manifest.splits[split].files if manifest is not None else None
                for shard in cache.split(task, split).shards:
                    if format_of(shard).index_name(shard) is None:  # ArrayRecord: needs none
                        continue
                    name, data = _index(shard, result, listed)
                    indexes[split][name] = hashlib.sha256(data).hexdigest()
                    progress.update(status=f"{result.written:,} indexed · task {task}")
            if _list_in_manifest(cache.folder(task), manifest, indexes):
                result.manifests.append(task)
        return result


def _index(shard: str, result: IndexResult, listed: dict[str, str] | None
           ) -> tuple[str, bytes]:
    """The shard's index (written unless it is there already): its name and bytes. With a
    manifest (`listed`: its split's files), an index is kept only as the manifest lists it: one
    it does not list (or lists otherwise) is written anew, so a damaged index is mended."""
    path, size = index_for(shard), fs.size(shard)
    result.shards += 1
    if fs.exists(path):
        try:
            data = index_bytes(read_index(path, size))
        except RecordIndexError:
            data = None  # stale or damaged: written again
        if data is not None and (listed is None or listed.get(fs.name_of(path))
                                 == hashlib.sha256(data).hexdigest()):
            return fs.name_of(path), data
    offsets = scan_offsets(shard, size)
    data = index_bytes(offsets)
    fs.write_bytes(path, data)
    result.written += 1
    result.records += len(offsets) - 1
    return fs.name_of(path), data


def _list_in_manifest(folder: str, manifest, indexes: dict[str, dict[str, str]]) -> bool:
    """Add the indexes to the task's manifest, if it has one that does not list them yet."""
    if manifest is None or all(manifest.splits[split].files.get(name) == digest
                               for split, named in indexes.items()
                               for name, digest in named.items()):
        return False
    splits = {split: replace(record, files={**record.files, **indexes.get(split, {})})
              for split, record in manifest.splits.items()}
    write_manifest(folder, replace(manifest, splits=splits))
    return True
