"""Files on any filesystem fsspec knows: local paths, `file://`, `gs://` (gcsfs), `s3://`,
`memory://`, `hf://`...

Paths are strings, joined with `/`, and keep their protocol: a path read from a listing can
be handed back to any function here. Files are written under a temporary name and renamed
into place, so a reader (or a rerun after a crash) never sees a half-written file under its
final name; temporary names are hidden (`.p3data-tmp-<uuid>-<name>`), so no seqio file
pattern matches one, and a run sweeps those that dead runs left behind.
"""

from __future__ import annotations

import contextlib
import posixpath
import re
import uuid
from collections.abc import Iterator
from typing import BinaryIO

import fsspec
from fsspec import AbstractFileSystem

from p3data.errors import P3DataError

TEMP_PREFIX = ".p3data-tmp-"
# A temporary's whole name: the prefix, 32 hex digits of a uuid4, then the final name.
TEMP_NAME = re.compile(re.escape(TEMP_PREFIX) + r"[0-9a-f]{32}-(?P<final>.+)")


class FileSystemError(P3DataError):
    """A path whose filesystem is unknown or cannot be used (e.g. gs:// without gcsfs)."""


def resolve(path: str) -> tuple[AbstractFileSystem, str]:
    """The filesystem of `path`, and the path as that filesystem spells it."""
    try:
        return fsspec.core.url_to_fs(path)
    except (ImportError, ValueError) as err:
        raise FileSystemError(f"{path}: cannot use this filesystem ({err})") from None


def _full(filesystem: AbstractFileSystem, path: str, like: str) -> str:
    """A path the filesystem listed, with the protocol `like` was given with."""
    return path if "://" not in like else filesystem.unstrip_protocol(path)


def canonical(path: str) -> str:
    """`path` as listings spell it (local paths made absolute), so paths compare as strings."""
    filesystem, local = resolve(path)
    return _full(filesystem, local, path)


def join(*parts: str) -> str:
    return posixpath.join(*parts)


def without_trailing_slash(path: str) -> str:
    """`path` without trailing slashes, as listings spell folders (`/` itself stays `/`)."""
    return path.rstrip("/") or path


def name_of(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[-1]


def parent_of(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[0]


def exists(path: str) -> bool:
    filesystem, local = resolve(path)
    return filesystem.exists(local)


def is_dir(path: str) -> bool:
    filesystem, local = resolve(path)
    return filesystem.isdir(local)


def makedirs(path: str) -> None:
    filesystem, local = resolve(path)
    filesystem.makedirs(local, exist_ok=True)


@contextlib.contextmanager
def atomic_writer(path: str) -> Iterator[BinaryIO]:
    """Write to a hidden temporary sibling, then rename onto `path` once writing succeeded."""
    filesystem, local = resolve(path)
    parent, name = posixpath.split(local)
    filesystem.makedirs(parent, exist_ok=True)
    temporary = posixpath.join(parent, temporary_name(name))
    handle = filesystem.open(temporary, "wb")
    try:
        yield handle
        handle.close()
    except BaseException:
        handle.close()
        with contextlib.suppress(FileNotFoundError):
            filesystem.rm(temporary)
        raise
    filesystem.mv(temporary, local)


def temporary_name(name: str) -> str:
    """A fresh temporary name for a file to be renamed to `name` once written."""
    return f"{TEMP_PREFIX}{uuid.uuid4().hex}-{name}"


def is_temporary(name: str) -> bool:
    """Whether a file name is one of p3data's temporaries (a user's `.p3data-tmp-notes` is not)."""
    return TEMP_NAME.fullmatch(name) is not None


def write_bytes(path: str, data: bytes) -> None:
    with atomic_writer(path) as handle:
        handle.write(data)


def create_exclusive(path: str, data: bytes) -> None:
    """Create `path` holding `data` only if it does not exist (`FileExistsError` otherwise):
    an atomic create on local disk, gs:// (a generation precondition), s3:// and memory://."""
    filesystem, local = resolve(path)
    with filesystem.open(local, "xb") as handle:
        handle.write(data)


def read_bytes(path: str) -> bytes:
    filesystem, local = resolve(path)
    return filesystem.cat_file(local)


def open_read(path: str) -> BinaryIO:
    filesystem, local = resolve(path)
    return filesystem.open(local, "rb")


def size(path: str) -> int:
    filesystem, local = resolve(path)
    return filesystem.size(local)


def glob(pattern: str) -> list[str]:
    """Files matching a glob pattern (`*` matches hidden names too; `**` recurses), sorted."""
    filesystem, local = resolve(pattern)
    found = filesystem.glob(local, detail=True)
    return sorted(_full(filesystem, p, pattern) for p, info in found.items()
                  if info["type"] == "file")


def files_in(folder: str) -> list[str]:
    """Names of the files directly inside `folder` (hidden ones included); none if it is not
    a folder."""
    filesystem, local = resolve(folder)
    try:
        entries = filesystem.ls(local, detail=True)
    except (FileNotFoundError, NotADirectoryError):
        return []
    return sorted(name_of(entry["name"]) for entry in entries if entry["type"] == "file")


def names_in(folder: str) -> list[str]:
    """Names of the files and folders directly inside `folder`; none if it is not a folder."""
    filesystem, local = resolve(folder)
    try:
        return sorted(name_of(entry) for entry in filesystem.ls(local, detail=False))
    except (FileNotFoundError, NotADirectoryError):
        return []


def walk_files(root: str) -> list[str]:
    """Every file under `root`, at any depth, as full paths, sorted."""
    filesystem, local = resolve(root)
    return sorted(_full(filesystem, p, root) for p in filesystem.find(local))


def delete(paths: list[str]) -> None:
    """Delete files (those already gone, or under a file, are fine)."""
    for path in paths:
        filesystem, local = resolve(path)
        with contextlib.suppress(FileNotFoundError, NotADirectoryError):
            filesystem.rm(local)


def delete_tree(path: str) -> None:
    filesystem, local = resolve(path)
    if filesystem.exists(local):
        filesystem.rm(local, recursive=True)


def sweep_temporaries(root: str) -> int:
    """Delete temporaries that dead runs left anywhere under `root`; returns how many. Call it
    only holding `root`'s lock (no live run is writing them then); only names of exactly
    p3data's shape go, never a file of someone else's that merely starts alike."""
    found = [path for path in glob(join(root, "**", TEMP_PREFIX + "*"))
             if is_temporary(name_of(path))]
    delete(found)
    return len(found)
