"""xP3's template sets as tests get them: the fork's archives in `shared/xp3/` beside the
repository or a folder above it (`P3DATA_XP3_ARCHIVES` names another folder), rewritten into
tampered copies, and served over HTTP on 127.0.0.1 the way GitHub serves a commit's tarball."""

from __future__ import annotations

import copy
import functools
import http.server
import io
import os
import subprocess
import tarfile
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from p3data.templates.install import TemplateSet

ENV_ARCHIVES = "P3DATA_XP3_ARCHIVES"


def shared_archive(spec: TemplateSet) -> Path:
    """The fork's tarball of `spec`'s commit, from the folder the tests are given, else the
    first `shared/xp3/` found going up from the repository (wherever CI clones it) or, for a
    clone of a checkout on this machine (`git clone . elsewhere`), from that checkout."""
    if given := os.environ.get(ENV_ARCHIVES):
        folders = [Path(given)]
    else:
        repositories = [Path(__file__).resolve().parents[2], *_local_origin()]
        folders = [up / "shared" / "xp3" for repository in repositories
                   for up in repository.parents]
    name = f"promptsource-{spec.commit}.tar.gz"
    if found := next((folder / name for folder in folders if (folder / name).is_file()), None):
        return found
    pytest.fail(f"{name} is in none of {', '.join(map(str, folders))}: these tests install "
                f"xP3's templates from the fork's archives; set {ENV_ARCHIVES} to the folder "
                "holding them")


def _local_origin() -> list[Path]:
    """The checkout this repository was cloned from, when that is a folder on this machine."""
    found = subprocess.run(["git", "-C", str(Path(__file__).parent), "config", "--get",
                            "remote.origin.url"], capture_output=True, text=True, check=False)
    origin = Path(found.stdout.strip())
    local = found.returncode == 0 and origin.is_absolute() and origin.is_dir()
    return [origin.resolve()] if local else []


Member = tuple[tarfile.TarInfo, bytes | None]


def read_members(archive: Path) -> list[Member]:
    with tarfile.open(archive) as tar:
        return [(info, tar.extractfile(info).read() if info.isfile() else None) for info in tar]


def write_archive(path: Path, members: list[Member],
                  change: Callable[[str, bytes], bytes | None] = lambda name, data: data) -> Path:
    """A tarball of `members`, each file's bytes passed through `change` (None drops it)."""
    with tarfile.open(path, "w:gz", compresslevel=1) as tar:
        for info, data in members:
            if data is None:
                tar.addfile(info)
            elif (changed := change(info.name, data)) is not None:
                resized = copy.copy(info)
                resized.size = len(changed)
                tar.addfile(resized, io.BytesIO(changed))
    return path


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


@contextmanager
def serving(folder: Path) -> Iterator[str]:
    """An HTTP server on 127.0.0.1 serving `folder`; yields its base URL."""
    handler = functools.partial(_Quiet, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
