"""Run a p3data command and pause it, alive (and holding whatever lock it took), at a chosen
file operation: how a test reaches deterministically the state another command finds while
this one runs, e.g. a `p3data cache` rebuild that has just withdrawn the tasks it rebuilds.

    python tests/helpers/pause_run.py READY WHEN -- <p3data arguments>

The run counts its file operations as crash_run.py does (fsspec's local `open` for writing,
`mv`, `rm`). WHEN is `withdrawn` (at the first operation after it deleted files in task
folders: a cache rebuild's withdrawal) or a number N (just before its N-th operation). There it
writes the file READY and waits until its stdin closes, then goes on to its end (its exit code
is the command's).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from crash_run import OPERATIONS, wrap_local_operation

from p3data.cli import main as cli
from p3data.format import layout
from p3data.lock import LOCK


def _in_task_folder(path: object) -> bool:
    paths = path if isinstance(path, list) else [path]
    return any(f"/{layout.WORK_DIR}" not in str(p) and not str(p).endswith(LOCK) for p in paths)


def pause_at(ready: Path, when: str) -> None:
    """Make the file operation `when` says wait for stdin to close."""
    state = {"deleted": False, "count": 0, "paused": False}
    due: Callable[[bool], bool] = (
        (lambda withdrawing: state["deleted"] and not withdrawing) if when == "withdrawn"
        else (lambda withdrawing: state["count"] == int(when)))

    def around(name: str, args: tuple, call: Callable[[], object]) -> object:
        withdrawing = name == "delete" and _in_task_folder(args[0])
        if not state["paused"] and due(withdrawing):
            state["paused"] = True
            ready.write_text("paused")
            sys.stdin.read()
        state["deleted"] |= withdrawing
        state["count"] += 1
        return call()

    for method in OPERATIONS:
        wrap_local_operation(method, around)

if __name__ == "__main__":
    ready, when = Path(sys.argv[1]), sys.argv[2]
    pause_at(ready, when)
    sys.argv = ["p3data", *sys.argv[sys.argv.index("--") + 1:]]  # what a lock says it runs
    sys.exit(cli(sys.argv[1:]))
