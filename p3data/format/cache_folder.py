"""A cache folder's reading side: which of its folders are task folders, which task each one
holds, whether it is complete, and which splits and shards it holds.

`layout` names the files a build writes; this finds them again, in p3data's caches, stock
seqio's and P3's, for every reader of a cache (the reader, `verify`, `peek`, the report, the
comparison with P3) and for the builder planning a rebuild.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import re
from collections import defaultdict
from collections.abc import Collection, Iterable

from p3data import fs
from p3data.errors import P3DataError
from p3data.format import layout
from p3data.format.shard_format import SHARD_FORMATS
from p3data.lock import LOCK

# The files of one split: info, stats, shards, record indexes (the group that matched is it).
_SPLIT_FILE = re.compile(r"info\.(.+)\.json|stats\.(.+)\.json|(.+)\.(?:{})-\d+-of-\d+"
                         r"|index\.(.+)-\d+-of-\d+\.npy".format(
                             "|".join(re.escape(f.infix) for f in SHARD_FORMATS.values())))


@dataclasses.dataclass(frozen=True)
class CacheFolder:
    """What a cache folder holds: task folders (path -> names of their files) and what a run
    leaves at the root while it runs (the work dir, the lock, temporaries)."""

    root: str
    folders: dict[str, list[str]]
    leftovers: list[str]


def scan(root: str) -> CacheFolder:
    """Find task folders by what they hold, at any depth (seqio's `:` levels, P3's `data/`)."""
    root = fs.canonical(fs.without_trailing_slash(root))
    by_folder: dict[str, list[str]] = defaultdict(list)
    leftovers: set[str] = set()
    for path in fs.walk_files(root):
        folder, _, name = path.rpartition("/")
        if path[len(root) + 1:].split("/", 1)[0] == layout.WORK_DIR:
            leftovers.add(fs.join(root, layout.WORK_DIR))
        elif name:  # object stores may list folder placeholders
            by_folder[folder].append(name)
    root_names = by_folder.pop(root, [])  # the root is a task folder only if given one
    root_is_task = any(_is_task_file(n) for n in root_names if not n.startswith(layout.TEMP_PREFIX))
    for name in root_names:
        if name == LOCK or (name.startswith(layout.TEMP_PREFIX) and not root_is_task):
            leftovers.add(fs.join(root, name))
        elif root_is_task:
            by_folder[root].append(name)
    folders = {folder: sorted(names) for folder, names in sorted(by_folder.items())
               if any(_is_task_file(name) for name in names)}
    return CacheFolder(root, folders, sorted(leftovers))


def _is_task_file(name: str) -> bool:
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in layout.TASK_FILES)


def task_folders(root: str) -> list[str]:
    """Every task folder under `root`, complete or not."""
    return list(scan(root).folders)


def task_names(root: str, folders: Iterable[str]) -> dict[str, str]:
    """Task name -> folder, `layout.task_dir` undone: seqio's `:` levels below the root, or
    P3's `data/<task>` when every folder is one (the root itself: its own name)."""
    relative = {folder: folder[len(root) + 1:] for folder in folders}
    if all(path.startswith("data/") and path.count("/") == 1 for path in relative.values()):
        relative = {folder: path[len("data/"):] for folder, path in relative.items()}
    return {(path.replace("/", ":") or fs.name_of(folder)): folder
            for folder, path in relative.items()}


def is_complete(names: Collection[str]) -> bool:
    """Whether a task folder holding the files `names` is complete: seqio reads it only then."""
    return layout.COMPLETED in names


def splits_with_info(names: Iterable[str]) -> list[str]:
    """The splits a task folder describes, an `info.<split>.json` each (what seqio reads)."""
    return sorted(name[len("info."):-len(".json")]
                  for name in fnmatch.filter(names, layout.info_name("*")))


def splits_present(names: Iterable[str]) -> set[str]:
    """The splits any of whose files (shards, indexes, info or stats) are among `names`."""
    return {next(filter(None, match.groups())) for name in names
            if (match := _SPLIT_FILE.fullmatch(name))}


def not_a_cache(root: str) -> P3DataError:
    """The error for a folder that holds no task folder: missing, a file, or someone else's."""
    if not fs.exists(root):
        return P3DataError(f"{root}: no such cache folder; give the folder p3data cache wrote")
    if not fs.is_dir(root):
        return P3DataError(f"{root}: is a file, not a cache folder; give the folder p3data "
                           "cache wrote")
    return P3DataError(f"{root}: holds no task folders (no {layout.COMPLETED}, "
                       f"{layout.MANIFEST} or shards, in seqio's or P3's layout); give the "
                       "folder p3data cache wrote")
