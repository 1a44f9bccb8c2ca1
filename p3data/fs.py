"""Files on any filesystem fsspec knows: local paths, `file://`, `gs://` (gcsfs), `s3://`,
`memory://`, `hf://`...

Paths are strings, joined with `/`, and keep their protocol: a path read from a listing can
be handed back to any function here. A reader (or a rerun after a crash) never sees a
half-written file under its final name. On a filesystem with folders, files are written under
a temporary name and renamed into place; temporary names are hidden (`.p3data-tmp-<uuid>-
<name>`), so no seqio file pattern matches one, and a run sweeps those that dead runs left
behind. On an object store (gs://) an upload is already atomic (the object appears whole when
it completes, or not at all) while a rename is a copy and a delete, so files are uploaded
under their final name, in one request when they are small; there are no folders to make,
reads, listings and deletes are as few requests as the store allows, and the store's refusals
are one line naming the object (`p3data.object_store`, docs/object_storage.md).
"""

from __future__ import annotations

import contextlib
import posixpath
import re
import uuid
from collections.abc import Iterable, Iterator, Mapping
from typing import BinaryIO

import fsspec
from fsspec import AbstractFileSystem
from fsspec.implementations.local import LocalFileSystem

from p3data.errors import P3DataError
from p3data.object_store import (
    Upload,
    background,
    delete_objects,
    gcs_filesystem,
    is_object_store,
    on_object_store,
    read_object,
    refusals,
)

TEMP_PREFIX = ".p3data-tmp-"
# A temporary's whole name: the prefix, 32 hex digits of a uuid4, then the final name.
TEMP_NAME = re.compile(re.escape(TEMP_PREFIX) + r"[0-9a-f]{32}-(?P<final>.+)")


class FileSystemError(P3DataError):
    """A path whose filesystem is unknown or cannot be used (e.g. gs:// without gcsfs)."""


def resolve(path: str) -> tuple[AbstractFileSystem, str]:
    """The filesystem of `path`, and the path as that filesystem spells it."""
    try:
        if on_object_store(path):
            filesystem = gcs_filesystem()
            return filesystem, filesystem._strip_protocol(path)
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


def machine_local(path: str) -> bool:
    """Whether only this machine's processes can open `path`: a local path or file://, and
    memory:// (each process its own)."""
    return fsspec.core.split_protocol(path)[0] in (None, "file", "local", "memory")


def on_local_disk(path: str) -> str | None:
    """`path` as this machine's disk spells it, for code that opens files by name itself
    (numpy, ArrayRecord); None if it is elsewhere (gs://, memory://)."""
    filesystem, local = resolve(path)
    return local if isinstance(filesystem, LocalFileSystem) else None


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
    with _refusals(filesystem, path, "read"):
        return filesystem.exists(local)


def is_dir(path: str) -> bool:
    filesystem, local = resolve(path)
    with _refusals(filesystem, path, "read"):
        return filesystem.isdir(local)


def _refusals(filesystem: AbstractFileSystem, path: str, doing: str):
    """An object store's refusals as one line naming `path` (`object_store.refusals`);
    other filesystems' errors as they are."""
    return refusals(path, doing) if is_object_store(filesystem) else contextlib.nullcontext()


def makedirs(path: str) -> None:
    """Make a folder and its parents; nothing on an object store, which has none (nor would
    gcsfs's make a missing bucket: a run writing into one fails on its first object)."""
    filesystem, local = resolve(path)
    if not is_object_store(filesystem):
        filesystem.makedirs(local, exist_ok=True)


@contextlib.contextmanager
def atomic_writer(path: str) -> Iterator[BinaryIO]:
    """A file that appears under `path` whole once the block ends, or not at all if it
    raises: a hidden temporary sibling renamed onto `path`, or on an object store an upload
    under `path` itself, completed at the end (a process killed before leaves nothing)."""
    filesystem, local = resolve(path)
    if is_object_store(filesystem):
        upload = Upload(filesystem, local)
        try:
            yield upload
        except BaseException:
            upload.discard()
            raise
        with refusals(path, "write"):
            upload.complete()
        return
    with (_renamed_into_place(filesystem, local) as temporary,
          filesystem.open(temporary, "wb") as handle):
        yield handle


@contextlib.contextmanager
def local_atomic_path(local: str) -> Iterator[str]:
    """For a writer that opens its file itself: a temporary sibling of the local path `local`
    (created here, empty, as `atomic_writer` creates its own), renamed onto `local` once the
    block ends, removed if it raises."""
    filesystem, local = resolve(local)
    with _renamed_into_place(filesystem, local) as temporary:
        filesystem.open(temporary, "wb").close()
        yield temporary


@contextlib.contextmanager
def _renamed_into_place(filesystem: AbstractFileSystem, path: str) -> Iterator[str]:
    """A hidden temporary sibling of `path`, renamed onto it once the block ends, removed if
    it raises (what it holds is the block's to write and close)."""
    parent, name = posixpath.split(path)
    filesystem.makedirs(parent, exist_ok=True)
    temporary = posixpath.join(parent, temporary_name(name))
    try:
        yield temporary
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            filesystem.rm(temporary)
        raise
    filesystem.mv(temporary, path)


@contextlib.contextmanager
def atomic_writers(paths: Iterable[str], *,
                   later: bool = False) -> Iterator[dict[str, BinaryIO]]:
    """`atomic_writer` for several files, by path: each appears whole once the block ends,
    none of them if it raises; on an object store the small ones in one round of concurrent
    uploads (with `later`, sent in the background: `write_files`)."""
    paths = list(paths)
    if not paths or not all(on_object_store(path) for path in paths):
        with contextlib.ExitStack() as stack:
            yield {path: stack.enter_context(atomic_writer(path)) for path in paths}
        return
    filesystem = resolve(paths[0])[0]
    uploads = {path: Upload(filesystem, resolve(path)[1]) for path in paths}
    try:
        yield uploads
    except BaseException:
        for upload in uploads.values():
            upload.discard()
        raise
    small = {path: upload.small for path, upload in uploads.items() if upload.small is not None}
    for path, upload in uploads.items():
        if path not in small:
            with refusals(path, "write"):
                upload.complete()
    write_files(small, later=later)


def temporary_name(name: str) -> str:
    """A fresh temporary name for a file to be renamed to `name` once written."""
    return f"{TEMP_PREFIX}{uuid.uuid4().hex}-{name}"


def is_temporary(name: str) -> bool:
    """Whether a file name is one of p3data's temporaries (a user's `.p3data-tmp-notes` is not)."""
    return TEMP_NAME.fullmatch(name) is not None


def write_bytes(path: str, data: bytes) -> None:
    filesystem, local = resolve(path)
    if is_object_store(filesystem):
        with refusals(path, "write"):
            filesystem.pipe_file(local, data)  # one request, atomic
        return
    with atomic_writer(path) as handle:
        handle.write(data)


def write_files(files: Mapping[str, bytes], *, later: bool = False) -> None:
    """`write_bytes` for several files, in no set order (on an object store concurrently:
    one round trip); write files one call at a time where the order matters. With `later`,
    on an object store the uploads go on in the background until `wait_for_writes` (a
    step's end of bundle): for files nothing reads before then."""
    if files and later and all(on_object_store(path) for path in files):
        filesystem, uploads = resolve(next(iter(files)))[0], background()
        for path, data in files.items():
            uploads.upload(filesystem, path, resolve(path)[1], data)
        return
    if len(files) > 1 and all(on_object_store(path) for path in files):
        filesystem = resolve(next(iter(files)))[0]
        try:
            filesystem.pipe({resolve(path)[1]: data for path, data in files.items()})
            return
        except Exception:  # noqa: BLE001 - one at a time, the refused one names itself
            pass
    for path, data in files.items():
        write_bytes(path, data)


def wait_for_writes() -> None:
    """Until every file `write_files(later=True)` sent is written and every folder
    `delete_tree(later=True)` deleted; the first refused raises, in one line naming it.
    Nothing to wait for off an object store (written at once)."""
    background().wait()


def create_exclusive(path: str, data: bytes) -> None:
    """Create `path` holding `data` only if it does not exist (`FileExistsError` otherwise):
    an atomic create on local disk, memory:// and s3://, and on gs:// one upload request
    with the precondition `ifGenerationMatch=0`, which GCS answers with 412 if the object
    exists (gcsfs raises `FileExistsError`)."""
    filesystem, local = resolve(path)
    if is_object_store(filesystem):
        with refusals(path, "write"):
            filesystem.pipe_file(local, data, mode="create")
        return
    with filesystem.open(local, "xb") as handle:
        handle.write(data)


def read_bytes(path: str) -> bytes:
    filesystem, local = resolve(path)
    with _refusals(filesystem, path, "read"):
        return filesystem.cat_file(local)


def read_files(paths: list[str]) -> list[bytes]:
    """`read_bytes` of several files, in their order; on an object store concurrently (one
    round trip)."""
    if len(paths) > 1 and all(on_object_store(path) for path in paths):
        filesystem, names = resolve(paths[0])[0], [resolve(path)[1] for path in paths]
        with refusals(paths[0], "read"):
            read = filesystem.cat(names)
        return [read[name] for name in names]
    return [read_bytes(path) for path in paths]


def open_read(path: str) -> BinaryIO:
    """A file to read; on an object store one request reads a small object whole
    (`object_store.read_object`)."""
    filesystem, local = resolve(path)
    if not is_object_store(filesystem):
        return filesystem.open(local, "rb")
    with refusals(path, "read"):
        return read_object(filesystem, local)


def size(path: str) -> int:
    filesystem, local = resolve(path)
    with _refusals(filesystem, path, "read"):
        return filesystem.size(local)


def glob(pattern: str) -> list[str]:
    """Files matching a glob pattern (`*` matches hidden names too; `**` recurses), sorted."""
    filesystem, local = resolve(pattern)
    with _refusals(filesystem, pattern, "list"):
        found = filesystem.glob(local, detail=True)
    return sorted(_full(filesystem, p, pattern) for p, info in found.items()
                  if info["type"] == "file")


def files_in(folder: str) -> list[str]:
    """Names of the files directly inside `folder` (hidden ones included); none if it is not
    a folder."""
    filesystem, local = resolve(folder)
    try:
        with _refusals(filesystem, folder, "list"):
            entries = filesystem.ls(local, detail=True)
    except (FileNotFoundError, NotADirectoryError):
        return []
    return sorted(name_of(entry["name"]) for entry in entries if entry["type"] == "file")


def names_in(folder: str) -> list[str]:
    """Names of the files and folders directly inside `folder`; none if it is not a folder."""
    filesystem, local = resolve(folder)
    try:
        with _refusals(filesystem, folder, "list"):
            return sorted(name_of(entry) for entry in filesystem.ls(local, detail=False))
    except (FileNotFoundError, NotADirectoryError):
        return []


def walk_files(root: str) -> list[str]:
    """Every file under `root`, at any depth, as full paths, sorted."""
    filesystem, local = resolve(root)
    with _refusals(filesystem, root, "list"):
        return sorted(_full(filesystem, p, root) for p in filesystem.find(local))


def files_by_folder(root: str) -> dict[str, list[str]]:
    """The names of the files under `root`, at any depth, by the folder holding them (as
    `parent_of` spells it): one listing of the whole tree (pages of 1,000 objects on GCS)
    instead of one per folder."""
    folders: dict[str, list[str]] = {}
    for path in walk_files(root):
        folders.setdefault(parent_of(path), []).append(name_of(path))
    return folders


def delete(paths: list[str]) -> None:
    """Delete files (those already gone, or under a file, are fine); on an object store those
    of one call together, in no set order (`object_store.delete_objects`): delete files one
    call at a time where the order matters."""
    resolved = [resolve(path) for path in paths]
    if resolved and all(is_object_store(filesystem) for filesystem, _ in resolved):
        delete_objects(resolved[0][0], [local for _, local in resolved])
        return
    for filesystem, local in resolved:
        with contextlib.suppress(FileNotFoundError, NotADirectoryError):
            filesystem.rm(local)


def delete_tree(path: str, *, later: bool = False) -> None:
    """Delete a folder and everything under it, if it exists (on an object store: one
    listing, then the objects; with `later`, in the background until `wait_for_writes`,
    for a folder nothing reads any more)."""
    filesystem, local = resolve(path)
    if is_object_store(filesystem) and later:
        background().delete_tree(filesystem, path, local)
    elif is_object_store(filesystem):  # no folder objects to delete, nor to check first
        with contextlib.suppress(FileNotFoundError), refusals(path, "list"):
            objects = filesystem.find(local)
        delete_objects(filesystem, objects)
    elif filesystem.exists(local):
        filesystem.rm(local, recursive=True)


def sweep_temporaries(root: str) -> int:
    """Delete temporaries that dead runs left anywhere under `root`; returns how many. Call it
    only holding `root`'s lock (no live run is writing them then); only names of exactly
    p3data's shape go, never a file of someone else's that merely starts alike."""
    found = [path for path in glob(join(root, "**", TEMP_PREFIX + "*"))
             if is_temporary(name_of(path))]
    delete(found)
    return len(found)
