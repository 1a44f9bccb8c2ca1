"""Names and JSON of a seqio cache directory (and of P3's layout), exactly as seqio writes them.

seqio cache:  <root>/<task>/{<split>.tfrecord-SSSSS-of-NNNNN, info.<split>.json,
              stats.<split>.json, COMPLETED}
P3 layout:    <root>/data/<task>/... with one shard per split, plus <root>/data_split_sizes.csv
p3data adds   <task>/manifest.json beside seqio's files; while building, <root>/.p3data-work/
              and the lock <root>/.p3data-lock. Files are written under temporary names
              `.p3data-tmp-<uuid>-<name>` (hidden: no seqio pattern matches them) and renamed.
"""

from __future__ import annotations

import json
import posixpath
from importlib import metadata
from typing import Any

from p3data.cache import fs
from p3data.cache.fs import join
from p3data.errors import P3DataError

COMPLETED = "COMPLETED"
MANIFEST = "manifest.json"
WORK_DIR = ".p3data-work"
LOCK = ".p3data-lock"
TEMP_PREFIX = fs.TEMP_PREFIX
P3_SEQIO_VERSION = "0.0.6"  # what P3's info files say
P3_INDEX = "data_split_sizes.csv"
P3_INDEX_HEADER = "Data(sub)set|Number of examples per splits"


class WorkDir:
    """Where a build keeps its intermediate files, `<output>/.p3data-work/`: every path the
    stages and the driver share is spelled here once.

    units/<unit>.json             a finished source shard (rows, and what it was made for)
    <task>/<split>/part-NNNNN.*   stage 1's records and meta per task split and source shard
    <task>/<split>.summary.json   stage 2's result for a task split (reused by reruns)
    assembled/<task>/<split>.json stage 2 has handled a task split (progress)
    status/<task>.json            the last stage's verdict on a task
    """

    def __init__(self, output_dir: str):
        self.root = join(output_dir, WORK_DIR)

    def unit_marker(self, name: str) -> str:
        return join(self.root, "units", name + ".json")

    @property
    def unit_markers(self) -> str:
        return join(self.root, "units", "*.json")

    def part(self, task: str, split: str, index: int, suffix: str) -> str:
        return join(self.root, task, split, f"part-{index:05d}{suffix}")

    def split_summary(self, task: str, split: str) -> str:
        return join(self.root, task, f"{split}.summary.json")

    @property
    def assembled_root(self) -> str:
        return join(self.root, "assembled")

    def assembled(self, task: str, split: str) -> str:
        return join(self.assembled_root, task, split + ".json")

    @property
    def assembled_markers(self) -> str:
        return join(self.assembled_root, "**")

    def task_status(self, task: str) -> str:
        return join(self.root, "status", task + ".json")

    def task(self, task: str) -> str:
        """Everything stage 1 and 2 keep for one task (removed once it is complete)."""
        return join(self.root, task)


def seqio_version() -> str:
    try:
        return metadata.version("seqio")
    except metadata.PackageNotFoundError:
        return "0.0.20"


def task_dir(root: str, task: str, p3_layout: bool = False) -> str:
    """seqio's `get_task_dir_from_name`: a `:` in a task name becomes a folder level."""
    parts = task.split(":")
    return posixpath.join(root, "data", *parts) if p3_layout else posixpath.join(root, *parts)


def shard_name(split: str, index: int, count: int) -> str:
    return f"{split}.tfrecord-{index:05d}-of-{count:05d}"


def info_name(split: str) -> str:
    return f"info.{split}.json"


def stats_name(split: str) -> str:
    return f"stats.{split}.json"


def dumps(obj: Any) -> str:
    """seqio's `WriteJson`: sorted keys, 2-space indent, one trailing newline."""
    return json.dumps(obj, sort_keys=True, indent=2) + "\n"


def info_json(features: dict[str, dict[str, Any]], num_shards: int, version: str) -> str:
    """`info.<split>.json`; an empty split gets `{}` as seqio writes it."""
    if not features:
        return dumps({})
    return dumps({"features": features, "num_shards": num_shards, "seqio_version": version})


def stats_json(stats: dict[str, int]) -> str:
    return dumps(stats)


class ManifestError(P3DataError):
    """A task's manifest.json is missing or cannot be parsed."""


def read_manifest(folder: str) -> dict[str, Any]:
    """A task folder's manifest, or a `ManifestError` naming the file."""
    path = join(folder, MANIFEST)
    try:
        manifest = json.loads(fs.read_bytes(path))
    except FileNotFoundError:
        raise ManifestError(f"{path}: missing") from None
    except (OSError, UnicodeDecodeError, ValueError) as err:
        raise ManifestError(f"{path}: not a readable manifest ({err})") from None
    if not isinstance(manifest, dict) or not isinstance(manifest.get("splits"), dict):
        raise ManifestError(f"{path}: not a p3data manifest (no 'splits' mapping)")
    return manifest
