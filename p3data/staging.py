"""p3data as a job's remote workers install it: a wheel made from the installed package itself.

Dataflow's workers start from Beam's container, without p3data, so a job stages p3data for
them (`--extra_package`). An installed p3data has no setup.py to build an sdist from, and pip
cannot rebuild a wheel from an installed distribution; but p3data is pure Python, so its wheel
is the installed package's files and its metadata, zipped. The files are read from the package
folders as Python imports them, so a regular and an editable install stage the same wheel as
`pip wheel` of the source would (setup.cfg maps two packages from elsewhere in a source tree).
Workers install a staged package without extras, so the wheel requires what the builder
extra requires, unconditionally, and what the extras a job asks for require (a shard format's:
ArrayRecord's workers write with array_record).
"""

from __future__ import annotations

import base64
import hashlib
import importlib.metadata
import importlib.util
import zipfile
from collections.abc import Sequence
from pathlib import Path

NAME = "p3data"
BUILDER_EXTRA = 'extra == "builder"'
# Packages setup.cfg's package_dir takes from outside p3data/ in a source tree.
MAPPED_PACKAGES = ("p3data.pipelines", "p3data.project_templates")
_FIXED_TIME = (1980, 1, 1, 0, 0, 0)  # the same files make the same wheel, byte for byte


def package_files() -> dict[str, Path]:
    """Every file of the installed package, by its path inside a wheel (bytecode left out)."""
    files: dict[str, Path] = {}
    for package in (NAME, *MAPPED_PACKAGES):
        spec = importlib.util.find_spec(package)
        assert spec is not None and spec.submodule_search_locations, package
        folder = Path(spec.submodule_search_locations[0])
        prefix = Path(*package.split("."))
        for path in sorted(folder.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
                files.setdefault((prefix / path.relative_to(folder)).as_posix(), path)
    return files


def worker_requirements(requires: list[str], extras: Sequence[str] = ()) -> list[str]:
    """The distribution's requirements as workers need them: its own, the builder's and
    those of `extras`."""
    wanted = {BUILDER_EXTRA, *(f'extra == "{extra}"' for extra in extras)}
    kept = []
    for requirement in requires:
        name, _, marker = (part.strip() for part in requirement.partition(";"))
        if not marker or marker in wanted:
            kept.append(name)
        elif "extra ==" not in marker:
            kept.append(requirement)
    return kept


def build_wheel(folder: Path, *, extras: Sequence[str] = ()) -> Path:
    """The installed p3data as a wheel in `folder`, requiring what `extras` require too;
    returns its path."""
    distribution = importlib.metadata.distribution(NAME)
    version = distribution.version
    info = f"{NAME}-{version}.dist-info"
    metadata = ["Metadata-Version: 2.1", f"Name: {NAME}", f"Version: {version}"]
    if python := distribution.metadata.get("Requires-Python"):
        metadata.append(f"Requires-Python: {python}")
    metadata += [f"Requires-Dist: {r}"
                 for r in worker_requirements(distribution.requires or [], extras)]
    contents = {name: path.read_bytes() for name, path in package_files().items()}
    contents[f"{info}/METADATA"] = ("\n".join(metadata) + "\n").encode()
    contents[f"{info}/WHEEL"] = (b"Wheel-Version: 1.0\nGenerator: p3data.staging\n"
                                 b"Root-Is-Purelib: true\nTag: py3-none-any\n")
    if entry_points := distribution.read_text("entry_points.txt"):
        contents[f"{info}/entry_points.txt"] = entry_points.encode()
    record = [f"{name},sha256={_digest(data)},{len(data)}" for name, data in contents.items()]
    contents[f"{info}/RECORD"] = ("\n".join([*record, f"{info}/RECORD,,"]) + "\n").encode()
    wheel = folder / f"{NAME}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in contents.items():
            entry = zipfile.ZipInfo(name, _FIXED_TIME)
            entry.external_attr = 0o644 << 16
            archive.writestr(entry, data, zipfile.ZIP_DEFLATED)
    return wheel


def _digest(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
