"""Run `p3data cache` and pause it, alive and holding its output folder's lock, just after it
withdrew the tasks it rebuilds: the state another command finds while a rebuild of the same
folder runs, reached deterministically.

    python tests/helpers/pause_run.py READY -- <cache arguments>

The run counts its file operations as crash_run.py does (fsspec's local `open` for writing,
`mv`, `rm`); at the first one after it deleted files in task folders, it writes the file READY
and waits until its stdin closes, then goes on to its end (its exit code is the command's).
"""

from __future__ import annotations

import sys
from pathlib import Path

from crash_run import OPERATIONS
from fsspec.implementations.local import LocalFileSystem

from p3data.cli import main as cli
from p3data.format import layout
from p3data.lock import LOCK


def _in_task_folder(path: object) -> bool:
    paths = path if isinstance(path, list) else [path]
    return any(f"/{layout.WORK_DIR}" not in str(p) and not str(p).endswith(LOCK) for p in paths)


def pause_after_withdrawing(ready: Path) -> None:
    """Make the first file operation after deletes in task folders wait for stdin to close."""
    state = {"deleted": False, "paused": False}

    def intercept(method: str) -> None:
        original = getattr(LocalFileSystem, method)
        name = OPERATIONS[method]

        def operation(self, *args, **kwargs):
            mode = kwargs.get("mode", args[1] if len(args) > 1 else "rb")
            if name == "create" and not set(mode) & set("wxa"):
                return original(self, *args, **kwargs)  # reading is not an operation
            withdrawing = name == "delete" and _in_task_folder(args[0])
            if state["deleted"] and not withdrawing and not state["paused"]:
                state["paused"] = True
                ready.write_text("withdrawn")
                sys.stdin.read()
            state["deleted"] |= withdrawing
            return original(self, *args, **kwargs)

        setattr(LocalFileSystem, method, operation)

    for method in OPERATIONS:
        intercept(method)


if __name__ == "__main__":
    ready, arguments = Path(sys.argv[1]), sys.argv[sys.argv.index("--") + 1:]
    pause_after_withdrawing(ready)
    sys.argv = ["p3data", "cache", *arguments]  # what the run's lock says it runs
    sys.exit(cli(sys.argv[1:]))
