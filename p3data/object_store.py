"""An object store (gs://) as `p3data.fs` uses it: gcsfs's JSON-API client, uploads that are
atomic by themselves, one request for a small object's whole read, and the store's refusals
(a missing bucket, no permission) as one line naming the object.

On GCS an upload is atomic: the object appears whole when the upload completes, or not at all
(a process killed before leaves nothing). A rename is a copy and a delete, exclusive create
exists only as the precondition `ifGenerationMatch=0`, and every existence check or listing is
a request: so nothing here renames, makes folders, or asks before it acts.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
from collections.abc import Iterator
from typing import BinaryIO

import fsspec
from fsspec import AbstractFileSystem

from p3data.errors import P3DataError

# Object stores whose uploads are atomic and whose renames are copies (gcsfs's protocols).
OBJECT_STORES = ("gs", "gcs")
# An object up to this size is read, or uploaded, in one request; a larger one is streamed.
WHOLE_OBJECT = 16 << 20


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
