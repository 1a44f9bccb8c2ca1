"""File access for caches on any filesystem Beam knows (local disk, gs://, ...).

Files are written under a temporary name and renamed into place, so a reader (or a rerun
after a crash) never sees a half-written file under its final name. Temporary names are
hidden (`.p3data-tmp-<uuid>-<name>`): no seqio file pattern can match one, and a run sweeps
those that dead runs left behind.
"""

from __future__ import annotations

import contextlib
import logging
import uuid
from collections.abc import Iterator
from typing import BinaryIO


class _WithoutGcpNoise(logging.Filter):
    """Beam warns on import when Google Cloud's optional client libraries are missing, which
    is harmless for local and gs:// files; keep it off every p3data command's output."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("apitools not found")


logging.getLogger().addFilter(_WithoutGcpNoise())

from apache_beam.io.filesystem import CompressionTypes  # noqa: E402
from apache_beam.io.filesystems import FileSystems  # noqa: E402

RAW = CompressionTypes.UNCOMPRESSED
TEMP_PREFIX = ".p3data-tmp-"


def join(*parts: str) -> str:
    return FileSystems.join(*parts)


def exists(path: str) -> bool:
    return FileSystems.exists(path)


def makedirs(path: str) -> None:
    if not FileSystems.exists(path):
        with contextlib.suppress(OSError):  # made meanwhile by another worker
            FileSystems.mkdirs(path)


@contextlib.contextmanager
def atomic_writer(path: str) -> Iterator[BinaryIO]:
    """Write to a temporary sibling, then rename onto `path` once the writing succeeded."""
    parent, name = path.rsplit("/", 1)
    makedirs(parent)
    temporary = f"{parent}/{TEMP_PREFIX}{uuid.uuid4().hex}-{name}"
    handle = FileSystems.create(temporary, compression_type=RAW)
    try:
        yield handle
        handle.close()
    except BaseException:
        handle.close()
        FileSystems.delete([temporary])
        raise
    if FileSystems.exists(path):
        FileSystems.delete([path])
    FileSystems.rename([temporary], [path])


def write_bytes(path: str, data: bytes) -> None:
    with atomic_writer(path) as handle:
        handle.write(data)


def read_bytes(path: str) -> bytes:
    with FileSystems.open(path, compression_type=RAW) as handle:
        return handle.read()


def open_read(path: str) -> BinaryIO:
    return FileSystems.open(path, compression_type=RAW)


def listdir(pattern: str) -> list[str]:
    """Paths matching a glob pattern (`*` matches hidden names too; `**` recurses), sorted."""
    return sorted(m.path for result in FileSystems.match([pattern]) for m in result.metadata_list)


def files_in(folder: str) -> list[str]:
    """Names of the files directly inside `folder`, hidden ones included."""
    return [path.rsplit("/", 1)[1] for path in listdir(join(folder, "*"))]


def delete(paths: list[str]) -> None:
    if paths:
        FileSystems.delete(paths)


def sweep_temporaries(root: str) -> int:
    """Delete temporaries that dead runs left anywhere under `root`; returns how many."""
    found = listdir(join(root, "**", TEMP_PREFIX + "*"))
    delete(found)
    return len(found)


def delete_tree(path: str) -> None:
    if FileSystems.exists(path):
        FileSystems.delete([path])
