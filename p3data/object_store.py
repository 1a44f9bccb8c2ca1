"""An object store (gs://) as `p3data.fs` uses it: gcsfs's JSON-API client, uploads that are
atomic by themselves, one request for a small object's whole read, and the store's refusals
(a missing bucket, no permission) as one line naming the object.

On GCS an upload is atomic: the object appears whole when the upload completes, or not at all
(a process killed before leaves nothing). A rename is a copy and a delete, exclusive create
exists only as the precondition `ifGenerationMatch=0`, and every existence check or listing is
a request: so nothing here renames, makes folders, or asks before it acts.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import contextlib
import io
import logging
import os
from collections.abc import Iterator
from typing import BinaryIO

import fsspec
from fsspec import AbstractFileSystem, asyn

from p3data.errors import P3DataError

# Object stores whose uploads are atomic and whose renames are copies (gcsfs's protocols).
OBJECT_STORES = ("gs", "gcs")
# An object up to this size is read, or uploaded, in one request; a larger one is streamed.
WHOLE_OBJECT = 16 << 20
BATCH_DELETES = 100  # GCS's most operations in one batch request
IN_FLIGHT = 32  # independent requests sent at once (deletes of objects, or of batches)
# At most this many bytes of uploads sent in the background are held until they complete.
IN_FLIGHT_BYTES = 4 * WHOLE_OBJECT


class StoreError(P3DataError):
    """The object store refused an operation: its bucket is missing, the caller may not read
    or write the object, or the store answered with an error."""


def on_object_store(path: str) -> bool:
    return fsspec.core.split_protocol(path)[0] in OBJECT_STORES


def is_object_store(filesystem: AbstractFileSystem) -> bool:
    protocols = filesystem.protocol
    return any(p in OBJECT_STORES for p in ((protocols,) if isinstance(protocols, str)
                                             else protocols))


def gcs_filesystem() -> AbstractFileSystem:
    """gcsfs's filesystem of GCS's JSON API (one instance a process, as fsspec caches them).

    Not gcsfs's default class, whose experimental zonal/hierarchical-bucket layer asks GCS's
    storage-control API for every bucket's type before opening or moving an object, and, when
    it cannot tell (no credentials, an emulator), asks again at every operation and logs a
    warning each time: p3data needs neither appendable objects nor folder renames. Listings
    are not cached: other processes (a job's workers) write the same folders.
    """
    pid = os.getpid()  # a forked worker makes its own (fsspec's event loop does not fork)
    if pid not in _FILESYSTEMS:
        from gcsfs.core import GCSFileSystem

        logging.getLogger("gcsfs").addFilter(_not_unsatisfiable_range)
        _FILESYSTEMS.clear()
        _FILESYSTEMS[pid] = GCSFileSystem(use_listings_cache=False)
    return _FILESYSTEMS[pid]


_FILESYSTEMS: dict[int, AbstractFileSystem] = {}  # by process id


def _not_unsatisfiable_range(record: logging.LogRecord) -> bool:
    """gcsfs logs every error response it raises; a 416 is `read_object`'s first ranged read
    of an empty object, which it takes for the empty object it is (not an error)."""
    error = record.exc_info[1] if record.exc_info else None
    return getattr(error, "code", None) != 416


def read_object(filesystem: AbstractFileSystem, path: str) -> BinaryIO:
    """An object to read: one ranged request reads it whole when it holds up to WHOLE_OBJECT
    bytes; a larger one is then read in blocks of that size."""
    try:
        head = filesystem.cat_file(path, start=0, end=WHOLE_OBJECT)
    except Exception as err:  # gcsfs's HttpError is no OSError
        if getattr(err, "code", None) != 416:  # a range of an empty object is unsatisfiable
            raise
        head = b""
    if len(head) < WHOLE_OBJECT:
        return io.BytesIO(head)
    return filesystem.open(path, "rb", block_size=WHOLE_OBJECT)


class Upload(io.RawIOBase):
    """An object written in one upload request when it stays small (up to WHOLE_OBJECT
    bytes), else streamed as a resumable upload; either way it exists only once complete."""

    def __init__(self, filesystem: AbstractFileSystem, path: str):
        super().__init__()
        self.filesystem, self.path = filesystem, path
        self.buffer: io.BytesIO | None = io.BytesIO()
        self.stream: BinaryIO | None = None

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:
        if self.stream is not None:
            return self.stream.write(data)
        written = self.buffer.write(data)
        if self.buffer.tell() > WHOLE_OBJECT:  # too large for one request: stream the rest
            self.stream = self.filesystem.open(self.path, "wb", block_size=WHOLE_OBJECT)
            self.stream.write(self.buffer.getbuffer())
            self.buffer = None
        return written

    @property
    def small(self) -> bytes | None:
        """The whole object, if it is to be uploaded in one request."""
        return self.buffer.getvalue() if self.stream is None else None

    def complete(self) -> None:
        if self.stream is not None:
            self.stream.close()
        else:
            self.filesystem.pipe_file(self.path, self.buffer.getvalue())
        self.buffer = self.stream = None

    def discard(self) -> None:
        """Cancel the upload: nothing appears under the path."""
        if self.stream is not None:
            self.stream.discard()
            self.stream.closed = True  # so that collecting it never completes it
        self.buffer = self.stream = None


class Background:
    """Requests in flight while their sender goes on (one a process: `background()`), so a
    worker's requests overlap with its work and with each other: uploads, and deletes of
    folders nothing reads any more; at most IN_FLIGHT at once and IN_FLIGHT_BYTES bytes of
    uploads, the oldest waited for first. Each object still appears whole or not at all;
    `wait` is the point by which they have all completed (a step's end of bundle), and
    raises the first refusal, in one line naming its object."""

    def __init__(self) -> None:
        self.sent: collections.deque[tuple[AbstractFileSystem, str, str, int,
                                           concurrent.futures.Future]] = collections.deque()
        self.held = 0  # bytes of the uploads in flight

    def upload(self, filesystem: AbstractFileSystem, path: str, local: str,
               data: bytes) -> None:
        """Send `data` to `local` (`path`, as the caller spells it, names it in an error)."""
        self._send(filesystem, path, "write", filesystem._pipe_file(local, data),
                   size=len(data))

    def delete_tree(self, filesystem: AbstractFileSystem, path: str, local: str) -> None:
        """Delete every object under `local` (a listing, then `delete_objects`)."""
        self._send(filesystem, path, "delete", _delete_tree(filesystem, local), size=0)

    def wait(self) -> None:
        """Until every request sent has completed; the first refused is raised (the others
        are still waited for, so none is left running)."""
        if refused := self._drain():
            raise refused

    def _send(self, filesystem: AbstractFileSystem, path: str, doing: str, request, *,
              size: int) -> None:
        while self.sent and (len(self.sent) >= IN_FLIGHT
                             or self.held + size > IN_FLIGHT_BYTES):
            try:
                self._complete_oldest()
            except StoreError:
                request.close()  # never sent
                self._drain()  # none left in flight for a later bundle to wait for
                raise
        future = asyncio.run_coroutine_threadsafe(request, filesystem.loop)
        self.sent.append((filesystem, path, doing, size, future))
        self.held += size

    def _drain(self) -> StoreError | None:
        """Wait for every request in flight; the first refusal."""
        refused = None
        while self.sent:
            try:
                self._complete_oldest()
            except StoreError as err:
                refused = refused or err
        return refused

    def _complete_oldest(self) -> None:
        filesystem, path, doing, size, future = self.sent.popleft()
        self.held -= size
        with refusals(path, doing):
            answer = future.result()
        if doing == "delete":
            raise_refused_delete(filesystem, answer)


async def _delete_tree(filesystem: AbstractFileSystem, local: str) -> dict[str, Exception]:
    try:
        objects = await filesystem._find(local)
    except FileNotFoundError:
        return {}
    return await _delete_objects(filesystem, objects)


def background() -> Background:
    """This process's uploads in flight (a forked worker has its own)."""
    pid = os.getpid()
    if pid not in _BACKGROUND:
        _BACKGROUND.clear()
        _BACKGROUND[pid] = Background()
    return _BACKGROUND[pid]


_BACKGROUND: dict[int, Background] = {}  # by process id


def delete_objects(filesystem: AbstractFileSystem, paths: list[str]) -> None:
    """Delete objects (those already gone too): in batch requests of BATCH_DELETES where the
    store takes them (GCS: a request per 100 objects), else a request each, IN_FLIGHT at a
    time. A store that refuses a batch (fake-gcs-server answers every part 400) is sent the
    batch's objects one by one, and no batch again by this process. The first object the
    store would not delete raises, in one line naming it."""
    raise_refused_delete(filesystem, asyn.sync(filesystem.loop, _delete_objects, filesystem,
                                               paths))


def raise_refused_delete(filesystem: AbstractFileSystem,
                         refused: dict[str, Exception]) -> None:
    """The first object the store would not delete (`refused`: its error, by object), in one
    line naming it; nothing if there is none."""
    if refused:
        local, error = next(iter(refused.items()))
        with refusals(filesystem.unstrip_protocol(local), "delete"):
            raise error


_BATCHLESS: set[str] = set()  # the endpoints of stores that refused a batch request


async def _delete_objects(filesystem: AbstractFileSystem,
                          paths: list[str]) -> dict[str, Exception]:
    singles = paths
    if len(paths) > 1 and filesystem._location not in _BATCHLESS:
        batches = [paths[i:i + BATCH_DELETES] for i in range(0, len(paths), BATCH_DELETES)]
        first = await _delete_batch(filesystem, batches[0])  # alone: is it refused?
        if first is None:
            _BATCHLESS.add(filesystem._location)
        else:
            rest = await asyn._run_coros_in_chunks(
                [_delete_batch(filesystem, batch) for batch in batches[1:]],
                batch_size=IN_FLIGHT)
            singles = first + [path for undeleted, batch in zip(rest, batches[1:], strict=True)
                               for path in (batch if undeleted is None else undeleted)]
    answers = await asyn._run_coros_in_chunks(
        [filesystem._rm_file(path) for path in singles], batch_size=IN_FLIGHT,
        return_exceptions=True)
    return {path: answer for path, answer in zip(singles, answers, strict=True)
            if isinstance(answer, Exception) and not isinstance(answer, FileNotFoundError)}


async def _delete_batch(filesystem: AbstractFileSystem, paths: list[str]) -> list[str] | None:
    """One batch request deleting `paths`: those it did not delete (to be sent one by one,
    whose answers say why), or None if the store refused the batch as a whole."""
    try:
        answers = await filesystem._rm_files(paths)
    except Exception:  # noqa: BLE001 - the batch request itself refused: one by one instead
        return None
    deleted = {answer for answer in answers if isinstance(answer, str)}
    if not deleted and not any("No such object" in str(answer) for answer in answers):
        return None
    return [path for path in paths if path not in deleted]


@contextlib.contextmanager
def refusals(path: str, doing: str) -> Iterator[None]:
    """The store's refusal of what the block does to `path` (`doing`: "read", "write",
    "list", "delete") as a `StoreError` of one line naming it. A missing object stays
    `FileNotFoundError` (its callers expect one), unless it is its bucket that is missing;
    `FileExistsError` (a precondition not met) stays too."""
    try:
        yield
    except FileExistsError:
        raise
    except FileNotFoundError:
        if doing == "read" or _bucket_exists(path):
            raise
        raise StoreError(f"{path}: cannot {doing} it: no bucket {_bucket(path)}") from None
    except Exception as err:
        if not _from_the_store(err):
            raise
        raise StoreError(f"{path}: cannot {doing} it: {_reason(err)}") from None


def _bucket(path: str) -> str:
    return "gs://" + path.split("://", 1)[-1].split("/", 1)[0]


def _bucket_exists(path: str) -> bool:
    filesystem = gcs_filesystem()
    with contextlib.suppress(Exception):
        return filesystem.exists(_bucket(path))
    return True  # cannot tell: the error is the object's


def _from_the_store(err: Exception) -> bool:
    """An error the store (or the way to it) answered, as gcsfs raises it."""
    module = type(err).__module__
    return (isinstance(err, OSError) or module.startswith(("gcsfs", "aiohttp", "google"))
            or str(err).startswith("Bad Request"))


def _reason(err: Exception) -> str:
    """What the store said, in one line (gcsfs puts the request's address first)."""
    lines = [line.strip() for line in str(err).splitlines() if line.strip()]
    if lines and lines[0].startswith("Forbidden"):
        return "permission denied" + (f" ({lines[1]})" if len(lines) > 1 else "")
    code = getattr(err, "code", None)
    message = getattr(err, "message", "") or (lines[0] if lines else type(err).__name__)
    return f"the store answered {code}: {message}" if code else message
