"""Checking a built cache against its manifests (and, optionally, another build's).

A task passes when COMPLETED and manifest.json exist, every file the manifest lists has the
recorded sha256, every shard's TFRecord framing and CRCs are sound, and the record counts
match the stats. `against` compares two builds file by file, e.g. a rebuild with the original.
"""

from __future__ import annotations

import hashlib
import json

from p3data.cache import fs, layout
from p3data.cache.tfrecord import CorruptRecordError, read_records


def task_folders(root: str) -> list[str]:
    """Every task folder (seqio or P3 layout) that has a manifest or a COMPLETED file."""
    found = set()
    for pattern in ("*", "data/*", "*/*"):
        for name in (layout.MANIFEST, layout.COMPLETED):
            found.update(p.rsplit("/", 1)[0] for p in fs.listdir(fs.join(root, pattern, name)))
    return sorted(f for f in found if layout.WORK_DIR not in f)


def verify_task(folder: str) -> list[str]:
    """Problems found in one task folder (empty: it is sound)."""
    problems = []
    if not fs.exists(fs.join(folder, layout.COMPLETED)):
        problems.append(f"{folder}: no COMPLETED: the task is not complete")
    manifest_path = fs.join(folder, layout.MANIFEST)
    if not fs.exists(manifest_path):
        return [*problems, f"{folder}: no {layout.MANIFEST}"]
    manifest = json.loads(fs.read_bytes(manifest_path))
    for split, record in manifest["splits"].items():
        records = 0
        for name, digest in record["files"].items():
            path = fs.join(folder, name)
            if not fs.exists(path):
                problems.append(f"{path}: missing")
                continue
            data = fs.read_bytes(path)
            if hashlib.sha256(data).hexdigest() != digest:
                problems.append(f"{path}: sha256 differs from the manifest")
            if ".tfrecord-" in name:
                try:
                    with fs.open_read(path) as handle:
                        records += sum(1 for _ in read_records(handle, path))
                except CorruptRecordError as err:
                    problems.append(str(err))
        if records != record["stats"]["examples"]:
            problems.append(f"{folder}: split {split} has {records} records, stats say "
                            f"{record['stats']['examples']}")
    return problems


def compare(root: str, other: str) -> list[str]:
    """Differences between two builds' manifests: tasks, fingerprints and file checksums."""
    def manifests(base: str) -> dict[str, dict]:
        result = {}
        for folder in task_folders(base):
            path = fs.join(folder, layout.MANIFEST)
            if fs.exists(path):
                manifest = json.loads(fs.read_bytes(path))
                result[manifest["task"]] = manifest
        return result

    ours, theirs = manifests(root), manifests(other)
    problems = [f"{task}: only in {root}" for task in sorted(set(ours) - set(theirs))]
    problems += [f"{task}: only in {other}" for task in sorted(set(theirs) - set(ours))]
    for task in sorted(set(ours) & set(theirs)):
        mine, yours = ours[task]["splits"], theirs[task]["splits"]
        for split in sorted(set(mine) | set(yours)):
            a = mine.get(split, {}).get("files", {})
            b = yours.get(split, {}).get("files", {})
            for name in sorted(set(a) | set(b)):
                if a.get(name) != b.get(name):
                    problems.append(f"{task}/{name}: differs")
    return problems
