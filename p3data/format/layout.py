"""Names and JSON of a seqio cache directory (and of P3's layout), exactly as seqio writes them.

seqio cache:  <root>/<task>/{<split>.tfrecord-SSSSS-of-NNNNN, info.<split>.json,
              stats.<split>.json, COMPLETED} (shards named by `shard_format`)
P3 layout:    <root>/data/<task>/... with one shard per split, plus <root>/data_split_sizes.csv
p3data adds   <task>/manifest.json and <task>/index.<split>-SSSSS-of-NNNNN.npy (each shard's
              record offsets, a name seqio's `<split>.tfrecord-*-of-*N` never matches) beside
              seqio's files; while building, <root>/.p3data-work/ and the lock <root>/.p3data-lock
              (`p3data.lock` names it). Files are written under temporary names
              `.p3data-tmp-<uuid>-<name>` (hidden: no seqio pattern matches them) and renamed.
"""

from __future__ import annotations

import functools
import json
import posixpath
from importlib import metadata
from typing import Any

from p3data import fs
from p3data.format.shard_format import SHARD_GLOBS

COMPLETED = "COMPLETED"
MANIFEST = "manifest.json"
WORK_DIR = ".p3data-work"
TEMP_PREFIX = fs.TEMP_PREFIX
P3_SEQIO_VERSION = "0.0.6"  # what P3's info files say
P3_INDEX = "data_split_sizes.csv"
P3_INDEX_HEADER = "Data(sub)set|Number of examples per splits"
# What a task folder may hold (name patterns): seqio's files (shards: `shard_format`'s names),
# p3data's, temporaries.
TASK_FILES = (COMPLETED, MANIFEST, *SHARD_GLOBS, "info.*.json", "stats.*.json", "index.*.npy",
              TEMP_PREFIX + "*")


@functools.cache
def seqio_version() -> str:
    """The installed seqio's version, read once: reading package metadata parses files, and
    every task split's info JSON names it."""
    try:
        return metadata.version("seqio")
    except metadata.PackageNotFoundError:
        return "0.0.20"


def task_dir(root: str, task: str, p3_layout: bool = False) -> str:
    """seqio's `get_task_dir_from_name`: a `:` in a task name becomes a folder level."""
    parts = task.split(":")
    return posixpath.join(root, "data", *parts) if p3_layout else posixpath.join(root, *parts)


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
