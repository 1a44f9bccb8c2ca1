"""Template sets that no package carries, installed once per user at a pinned commit.

xP3's templates live only on branches of a promptsource fork that was never merged
(Muennighoff/promptsource) and is on no package index; its own non-editable install keeps 423 of
`tr13`'s 2,597 template files and says nothing. So `p3data templates install NAME` takes the
fork's tarball of the pinned commit (from GitHub, or a local archive), reads only what the
loader needs (every `promptsource/templates/**/templates.yaml`, and the LICENSE), checks it (the
files' count and a digest of their paths and contents, never the archive's bytes: GitHub
compresses differently), extracts it into a folder beside the target and renames it into place.

A set lives in `<home>/templates/<name>-<commit>/` (`LICENSE`, `templates/<dataset>/[<subset>/]
templates.yaml`, the layout of T0's bundled copy), `<home>` being `$P3DATA_HOME`, else
`$XDG_CACHE_HOME/p3data`, else `~/.cache/p3data`: a pinned, checked download that one command
fetches again is a cache, and one copy serves every environment of the user.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import shutil
import tarfile
import tempfile
import zlib
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from p3data.errors import NotFoundError, P3DataError
from p3data.templates import parse_index
from p3data.templates.collection import TEMPLATE_FILENAME, TemplateSetMissing

ENV_HOME = "P3DATA_HOME"
ENV_ARCHIVE_URL = "P3DATA_TEMPLATE_ARCHIVE_URL"
LICENSE = "LICENSE"
TEMPLATES = "templates"  # the set's template folder, a `TemplateSource` root
_IN_ARCHIVE = PurePosixPath("promptsource", "templates")  # under the archive's top folder


@dataclass(frozen=True)
class TemplateSet:
    """One pinned template set: where it comes from and what a full copy holds."""

    name: str
    repository: str
    branch: str
    commit: str
    files: int  # `templates.yaml` files
    templates: int  # the templates in them (entries under `templates:`)
    digest: str  # `contents_digest` of a full copy

    @property
    def folder_name(self) -> str:
        return f"{self.name}-{self.commit}"

    @property
    def origin(self) -> str:
        return f"{self.repository}@{self.commit[:7]}, branch {self.branch}"

    def archive_url(self) -> str:
        base = os.environ.get(ENV_ARCHIVE_URL) or f"https://github.com/{self.repository}/archive"
        return f"{base.rstrip('/')}/{self.commit}.tar.gz"


TEMPLATE_SETS = {spec.name: spec for spec in (
    TemplateSet("xp3", "Muennighoff/promptsource", "tr13",
                "03e22cf271666a3c8234127cdede13d86ec601f1", files=2597, templates=11406,
                digest="28dc308288dc2b40f8536ff06ea97a8e2370e1addd96e8b6879c87aee54d8e83"),
    TemplateSet("xp3mt", "Muennighoff/promptsource", "xp3mt",
                "c1b46f874d5269b7af4679d3e25a3097a84a9ae1", files=2685, templates=12162,
                digest="9ee8e7a411edf9dd90bfd7d9fc4680c14dbab76852a5fc6572f79c3af06ab39c"),
)}


def template_set(name: str) -> TemplateSet:
    try:
        return TEMPLATE_SETS[name]
    except KeyError:
        raise NotFoundError.unknown("template set", name, list(TEMPLATE_SETS)) from None


def p3data_home() -> Path:
    """p3data's per-user folder (see the module's docstring)."""
    if home := os.environ.get(ENV_HOME):
        return Path(home).expanduser()
    return Path(os.environ.get("XDG_CACHE_HOME") or "~/.cache").expanduser() / "p3data"


def set_folder(spec: TemplateSet, home: Path | None = None) -> Path:
    return (home or p3data_home()) / TEMPLATES / spec.folder_name


def installed(name: str, home: Path | None = None) -> Path:
    """The installed set's template folder, or one line saying how to install it. Checks what
    is cheap (the LICENSE, the count of files); `install` and `check` compare contents."""
    spec = template_set(name)
    folder = set_folder(spec, home)
    if not folder.is_dir():
        raise TemplateSetMissing(
            f"{spec.name}'s templates ({spec.origin}) are not installed in {folder.parent}: "
            f"run `p3data templates install {spec.name}`")
    if (problem := _shape_problem(spec, _file_count(folder), (folder / LICENSE).is_file())):
        raise TemplateSetMissing(
            f"{folder} {problem}: a damaged install; run `p3data templates install {spec.name}` "
            f"again")
    return folder / TEMPLATES


def contents_digest(files: Mapping[str, bytes]) -> str:
    """sha256 of the sorted `<sha256 of content>  <path>` lines of a set's files (relative
    POSIX paths: `LICENSE`, `templates/.../templates.yaml`), as `sha256sum` prints them."""
    return hashlib.sha256("".join(
        f"{hashlib.sha256(files[path]).hexdigest()}  {path}\n" for path in sorted(files)
    ).encode()).hexdigest()


def check(spec: TemplateSet, folder: Path) -> str | None:
    """What is wrong with a copy of `spec` in `folder` (one phrase), or None."""
    return _problem(spec, {path: (folder / path).read_bytes() for path in _paths_in(folder)})


def _problem(spec: TemplateSet, files: Mapping[str, bytes]) -> str | None:
    if (problem := _shape_problem(spec, len(files) - (LICENSE in files), LICENSE in files)):
        return problem
    if (digest := contents_digest(files)) != spec.digest:
        return (f"holds {spec.files:,} {TEMPLATE_FILENAME} files and a {LICENSE} whose contents "
                f"differ from {spec.origin}'s (digest {digest[:12]}, expected "
                f"{spec.digest[:12]}): a file was changed, or it is another commit")
    return None


def _shape_problem(spec: TemplateSet, count: int, licensed: bool) -> str | None:
    """What is wrong with a copy of `count` template files, with its LICENSE or not."""
    if not licensed:
        return f"holds no {LICENSE} (promptsource's, at the top of the fork)"
    if count != spec.files:
        return (f"holds {count:,} of the {spec.files:,} {TEMPLATE_FILENAME} files of "
                f"{spec.name} ({spec.origin})")
    return None


def _file_count(folder: Path) -> int:
    """How many template files a set folder holds (what every load checks: `_paths_in` with
    no path made, at a third less CPU)."""
    return sum(TEMPLATE_FILENAME in files for _, _, files in os.walk(folder / TEMPLATES))


def _paths_in(folder: Path) -> list[str]:
    """A set folder's files, as `contents_digest` names them (found by `os.walk`, at half the
    CPU of `Path.rglob`: each collection's definitions look as they load)."""
    found = [Path(os.path.relpath(root, folder), TEMPLATE_FILENAME).as_posix()
             for root, _, files in os.walk(folder / TEMPLATES) if TEMPLATE_FILENAME in files]
    return found + [LICENSE] if (folder / LICENSE).is_file() else found


@dataclass(frozen=True)
class Installed:
    """What `install` did: where the set is, and whether it was there already."""

    spec: TemplateSet
    folder: Path
    already: bool


def install(name: str, *, archive: Path | None = None, home: Path | None = None) -> Installed:
    """Install a set from `archive` (a tarball of its commit as GitHub lays it out), else from
    its archive URL; a set already installed and sound is left as it is (given its parse index
    if it has none: an older install). The archive's files are checked before any is written,
    and written beside the set's folder with their parse index, then renamed."""
    spec = template_set(name)
    folder = set_folder(spec, home)
    if folder.is_dir() and check(spec, folder) is None:
        if not (folder / parse_index.INDEX_FILE).is_file():
            _write_index(folder)
        return Installed(spec, folder, already=True)
    folder.parent.mkdir(parents=True, exist_ok=True)
    with _scratch(folder) as scratch:
        named = archive if archive is not None else spec.archive_url()
        source = archive if archive is not None else _download(spec, scratch / "archive.tar.gz")
        staged = scratch / spec.folder_name
        with _reading(source, named) as tar:
            members, files = _wanted(tar, staged)
            if (problem := _problem(spec, files)) is not None:
                raise P3DataError(f"{named} {problem}; nothing installed")
            tar.extractall(staged, members=members, filter="data")
        _write_index(staged)
        _move_into_place(staged, folder, scratch)
    return Installed(spec, folder, already=False)


def _write_index(folder: Path) -> None:
    parse_index.write(folder, sorted((folder / TEMPLATES).rglob(TEMPLATE_FILENAME)))


@contextmanager
def _scratch(folder: Path) -> Iterator[Path]:
    """A hidden folder beside `folder` (same filesystem, so the final rename is atomic)."""
    scratch = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
    try:
        yield scratch
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _move_into_place(staged: Path, folder: Path, scratch: Path) -> None:
    """Rename the checked copy into place; a damaged copy there is moved aside first."""
    if folder.exists():
        folder.rename(scratch / "replaced")
    try:
        staged.rename(folder)
    except OSError:  # another install won the race: keep its copy if it is sound
        if not folder.is_dir():
            raise


def _download(spec: TemplateSet, target: Path) -> Path:
    import http.client  # only a download needs them (and `p3data`'s start does not)
    import urllib.error
    import urllib.request

    url = spec.archive_url()
    try:
        with urllib.request.urlopen(url, timeout=60) as response, target.open("wb") as out:
            shutil.copyfileobj(response, out)
    except (urllib.error.URLError, http.client.HTTPException, TimeoutError,
            ConnectionError) as err:
        reason = err if isinstance(err, urllib.error.HTTPError) else getattr(err, "reason", err)
        raise P3DataError(
            f"cannot download {spec.name}'s templates from {url} ({reason}); offline, pass "
            f"--archive FILE (that commit's tarball), or set {ENV_ARCHIVE_URL} to a mirror"
        ) from None
    return target


@contextmanager
def _reading(archive: Path, named: object) -> Iterator[tarfile.TarFile]:
    """The archive, open; what keeps it from being read is one line naming it."""
    if not archive.is_file():
        raise P3DataError(f"{named}: no such file")
    try:
        with tarfile.open(archive) as tar:
            yield tar
    except tarfile.FilterError as err:
        raise P3DataError(f"{named}: {err}; nothing installed") from None
    except tarfile.ReadError:
        raise P3DataError(f"{named}: not a tar archive (gzip, bzip2, xz or plain); "
                          f"nothing installed") from None
    except (tarfile.TarError, EOFError, zlib.error, gzip.BadGzipFile) as err:
        raise P3DataError(f"{named}: a damaged tar archive ({err}); nothing installed") from None


def _wanted(tar: tarfile.TarFile, target: Path) -> tuple[list[tarfile.TarInfo], dict[str, bytes]]:
    """The archive's `promptsource/templates/**/templates.yaml` files and LICENSE (below its
    top folder) as members renamed to `templates/...` and `LICENSE`, each one checked by the
    `data` filter to stay inside `target`, and their bytes by those names."""
    members, files = [], {}
    for member in tar:
        path = PurePosixPath(member.name)
        if not member.isfile() or len(path.parts) < 2:
            continue
        inside = PurePosixPath(*path.parts[1:])
        if inside == PurePosixPath(LICENSE):
            wanted = LICENSE
        elif inside.name == TEMPLATE_FILENAME and inside.is_relative_to(_IN_ARCHIVE):
            wanted = (TEMPLATES / inside.relative_to(_IN_ARCHIVE)).as_posix()
        else:
            continue
        members.append(tarfile.data_filter(member.replace(name=wanted, deep=False), str(target)))
        files[wanted] = tar.extractfile(member).read()
    return members, files
