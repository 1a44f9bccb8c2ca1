"""Packages that `pip install p3data` leaves out, and the extra that brings each: the registry
and the reader install beside a trainer's pinned stack without them."""

from __future__ import annotations

import importlib.util

EXTRAS = {"apache_beam": "builder", "pyarrow": "builder", "huggingface_hub": "builder",
          "gcsfs": "builder", "tqdm": "builder", "matplotlib": "builder", "torch": "torch",
          "grain": "grain"}


def require(*modules: str) -> None:
    """Fail before any work when a command's extra is not installed (the command line turns
    the error into one line naming the extra)."""
    for module in modules:
        if importlib.util.find_spec(module) is None:
            raise ModuleNotFoundError(f"No module named {module!r}", name=module)


def missing_extra(err: BaseException, command: str) -> str | None:
    """One line for a missing package an extra installs; None for anything else."""
    if not isinstance(err, ModuleNotFoundError) or err.name not in EXTRAS:
        return None
    extra = EXTRAS[err.name]
    return (f"`p3data {command}` needs {err.name}, which p3data's {extra!r} extra installs: "
            f"pip install 'p3data[{extra}]'")
