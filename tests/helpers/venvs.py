"""Virtual environments that tests build for themselves (a trainer's pinned stack, a clean
install of p3data): from PyPI, through pip's cache, and removed with the test's tmp folder."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Venv:
    root: Path
    install_seconds: float = 0.0

    @property
    def python(self) -> Path:
        return self.root / "bin" / "python"

    def bin(self, name: str) -> Path:
        return self.root / "bin" / name

    def run(self, *args: str | os.PathLike, cwd: Path | None = None, timeout: float = 1800,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
        """`args` with this environment's Python first on PATH, outside the checkout, without
        the checkout on sys.path and without the caller's P3DATA_* settings."""
        clean = {k: v for k, v in os.environ.items()
                 if not k.startswith(("P3DATA_", "PYTHON", "VIRTUAL_ENV"))}
        clean["PATH"] = f"{self.root / 'bin'}{os.pathsep}{clean.get('PATH', '')}"
        return subprocess.run([str(a) for a in args], cwd=cwd or self.root,
                              env={**clean, **(env or {})}, capture_output=True, text=True,
                              timeout=timeout)

    def pip(self, *args: str | os.PathLike, timeout: float = 1800) -> None:
        result = self.run(self.python, "-m", "pip", "install", "--quiet", *args, timeout=timeout)
        assert result.returncode == 0, f"pip install {args} failed:\n{result.stderr[-4000:]}"


def make_venv(root: Path, *requirements: str | os.PathLike, python: str = sys.executable
              ) -> Venv:
    """A fresh environment holding `requirements` (pip arguments: names, paths, -c files);
    its install time is measured, for the README's figures."""
    start = time.monotonic()
    subprocess.run([python, "-m", "venv", str(root)], check=True, capture_output=True)
    venv = Venv(root)
    if requirements:
        venv.pip(*requirements)
    return Venv(root, time.monotonic() - start)
