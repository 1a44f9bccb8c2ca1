"""p3data's build: everything is declared in setup.cfg, except that a wheel carries promptsource
0.1.0's templates.

promptsource 0.1.0 (the template set T0 was trained with) is on PyPI only as an sdist whose
metadata says Python < 3.8, so no resolver installs it as a dependency. A build therefore takes
its `templates/**/templates.yaml` (and its LICENSE), unchanged, from that sdist (checked by its
sha256) into `p3data/data/promptsource/`. The sdist comes from, in order:
`$P3DATA_PROMPTSOURCE_SDIST`, the copy a p3data sdist carries beside this file, or PyPI through
pip (so pip's index, proxy and certificate settings apply). An editable install extracts into
the source tree (git ignores it). `--setup_file=./setup.py` (Dataflow) builds an sdist that
carries the archive, so workers need no second download.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.command.sdist import sdist

HERE = Path(__file__).resolve().parent
PROMPTSOURCE = "promptsource==0.1.0"
ARCHIVE = "promptsource-0.1.0.tar.gz"
ARCHIVE_SHA256 = "726289b468dbd3148d11e37a9959587f4dc560a5b9e95e7ace540e6727646178"
ENV_ARCHIVE = "P3DATA_PROMPTSOURCE_SDIST"
TEMPLATES = Path("p3data", "data", "promptsource")


def _verified(path: Path) -> Path:
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != ARCHIVE_SHA256:
        raise SystemExit(f"{path}: sha256 {digest} is not promptsource 0.1.0's sdist "
                         f"({ARCHIVE_SHA256})")
    return path


def promptsource_archive() -> Path:
    """promptsource 0.1.0's sdist, verified; downloaded once into the source tree."""
    if os.environ.get(ENV_ARCHIVE):
        return _verified(Path(os.environ[ENV_ARCHIVE]))
    kept = HERE / ARCHIVE
    if not kept.is_file():
        with tempfile.TemporaryDirectory() as tmp:
            result = subprocess.run(
                [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                 "--no-binary", ":all:", "--ignore-requires-python", "--dest", tmp, PROMPTSOURCE],
                capture_output=True, text=True)
            if result.returncode != 0:
                raise SystemExit(
                    f"cannot download {PROMPTSOURCE}'s sdist (T0's templates) with pip:\n"
                    f"{result.stderr.strip()}\nDownload {ARCHIVE} from PyPI yourself and set "
                    f"{ENV_ARCHIVE} to its path.")
            shutil.copyfile(_verified(Path(tmp, ARCHIVE)), kept)
    return _verified(kept)


def extract_templates(archive: Path, target: Path) -> None:
    """The sdist's template files and LICENSE, at the same paths under `target`."""
    prefix = "promptsource-0.1.0/"
    shutil.rmtree(target, ignore_errors=True)
    count = 0
    with tarfile.open(archive) as tar:
        for member in tar.getmembers():
            name = member.name.removeprefix(prefix)
            wanted = name == "LICENSE" or (
                name.startswith("promptsource/templates/") and name.endswith("/templates.yaml"))
            if member.isfile() and wanted:
                path = target / name.removeprefix("promptsource/")
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(tar.extractfile(member).read())
                count += 1
    if count < 200:
        raise SystemExit(f"{archive}: only {count} template files; is it promptsource 0.1.0?")


class BuildPyWithTemplates(build_py):
    def run(self) -> None:
        super().run()
        root = HERE if self.editable_mode else Path(self.build_lib)
        extract_templates(promptsource_archive(), root / TEMPLATES)


class SdistWithTemplates(sdist):
    def make_release_tree(self, base_dir: str, files: list[str]) -> None:
        super().make_release_tree(base_dir, files)
        shutil.copyfile(promptsource_archive(), Path(base_dir, ARCHIVE))


setup(cmdclass={"build_py": BuildPyWithTemplates, "sdist": SdistWithTemplates})
