"""Virtual environments that tests build for themselves (a trainer's pinned stack, a clean
install of p3data): from PyPI, installed by uv through its cache, and removed with the test's
tmp folder. Each keeps pip, for what a test asks of it (`pip list`, `pip check`)."""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
UV = Path(sys.executable).parent / "uv"  # make install's installer (Makefile)
# What a build of the checkout neither reads nor should see: environments, caches, outputs.
NOT_SOURCE = shutil.ignore_patterns(".git", ".venv", "build", "dist", "*.egg-info", "__pycache__",
                                    ".pytest_cache", ".ruff_cache", ".hypothesis", "demo_output")


@dataclass(frozen=True)
class Venv:
    root: Path
    install_seconds: float = 0.0

    @property
    def python(self) -> Path:
        return self.root / "bin" / "python"

    def bin(self, name: str) -> Path:
        return self.root / "bin" / name

    def environment(self, env: dict[str, str] | None = None) -> dict[str, str]:
        """The caller's environment with this environment's Python first on PATH, without the
        checkout on sys.path and without the caller's P3DATA_* settings; then `env`."""
        clean = {k: v for k, v in os.environ.items()
                 if not k.startswith(("P3DATA_", "PYTHON", "VIRTUAL_ENV"))}
        clean["PATH"] = f"{self.root / 'bin'}{os.pathsep}{clean.get('PATH', '')}"
        return {**clean, **(env or {})}

    def run(self, *args: str | os.PathLike, cwd: Path | None = None, timeout: float = 1800,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
        """`args` in `environment(env)`, outside the checkout."""
        return subprocess.run([str(a) for a in args], cwd=cwd or self.root,
                              env=self.environment(env), capture_output=True, text=True,
                              timeout=timeout)

    def pip(self, *args: str | os.PathLike, timeout: float = 1800) -> None:
        """`pip install args`, done by uv (`UV`): the same packages, in seconds, from uv's
        cache once any environment of the run has downloaded them."""
        result = self.run(UV, "pip", "install", "--quiet", "--python", self.python, *args,
                          timeout=timeout, env=_find_links())
        assert result.returncode == 0, f"uv pip install {args} failed:\n{result.stderr[-4000:]}"


@functools.cache
def _find_links() -> dict[str, str]:
    """Where pip's configuration looks for wheels besides PyPI (this machine's CPU build of
    torch, which the pins name), for uv (`UV_FIND_LINKS`), unless the caller set it (the
    Makefile does): so that `pytest` run directly builds what `make test` builds."""
    if "UV_FIND_LINKS" in os.environ:
        return {}
    listed = subprocess.run([sys.executable, "-m", "pip", "config", "list"],
                            capture_output=True, text=True).stdout
    found = re.search(r"find-links='([^']*)'", listed)
    return {"UV_FIND_LINKS": found.group(1)} if found else {}


def make_venv(root: Path, *requirements: str | os.PathLike, python: str = sys.executable
              ) -> Venv:
    """A fresh environment holding `requirements` (pip's arguments: names, paths, -c files);
    its install time is measured, for the README's figures."""
    start = time.monotonic()
    subprocess.run([python, "-m", "venv", str(root)], check=True, capture_output=True)
    venv = Venv(root)
    if requirements:
        venv.pip(*requirements)
    return Venv(root, time.monotonic() - start)


def source_copy(folder: Path) -> Path:
    """The checkout's files, copied to `folder`: a build writes build/ and *.egg-info where it
    runs, and no test writes into the checkout (so tests that build run side by side)."""
    shutil.copytree(ROOT, folder, ignore=NOT_SOURCE)
    return folder


def build_p3data_wheel(folder: Path) -> Path:
    """p3data's wheel as `pip wheel` builds it from the checkout (from a copy of it)."""
    source = source_copy(folder / "source")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w",
                    str(folder / "dist"), str(source)], check=True, capture_output=True)
    return next((folder / "dist").glob("p3data-*.whl"))


def staged_wheel(folder: Path, wheel: Path) -> Path:
    """The wheel `p3data cache --runner=DataflowRunner` stages, made as a user's driver makes it:
    by a p3data installed from its own wheel (`wheel`: not the checkout, not editable), in a
    process started outside the checkout."""
    site, staged = folder / "installed", folder / "staged"
    staged.mkdir(parents=True)
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target",
                    str(site), wheel], check=True, capture_output=True)
    probe = ("import sys, p3data; from pathlib import Path; from p3data.staging import "
             "build_wheel; assert p3data.__file__.startswith(sys.argv[1]), p3data.__file__; "
             "print(build_wheel(Path(sys.argv[2])))")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("P3DATA_", "PYTHON"))}
    made = subprocess.run([sys.executable, "-c", probe, str(site), str(staged)], cwd=folder,
                          env={**env, "PYTHONPATH": str(site)}, capture_output=True, text=True)
    assert made.returncode == 0, made.stderr[-3000:]
    return Path(made.stdout.strip())
