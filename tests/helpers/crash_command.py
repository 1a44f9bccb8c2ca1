"""Run any p3data command and die like `kill -9` just before its K-th file operation: the
crash points of a writer other than `p3data cache` (whose own driver, crash_run.py, also
reruns), reached deterministically, with crash_run's interception of file operations.

    python tests/helpers/crash_command.py OUTPUTS POINTS BASE -- <command arguments>

For each point K of POINTS (comma-separated; -1 never crashes), a forked child runs the
command on OUTPUTS/K, a copy of BASE (`{out}` in the arguments stands for it), and dies just
before its K-th file operation; it writes the operations it ran to OUTPUTS/K.trace, its
output to OUTPUTS/K.log and its exit code to OUTPUTS/K.code.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from command_server import warm_up
from crash_run import run_and_die


def _child(out: Path, crash_at: int, arguments: list[str]) -> None:
    run_and_die([argument.replace("{out}", str(out)) for argument in arguments],
                stem=str(out), crash_at=crash_at)


def main() -> int:
    warm_up()  # what each forked child would pay, as crash_run does
    split = sys.argv.index("--")
    outputs, points, base = sys.argv[1:split]
    for point in points.split(","):
        out = Path(outputs) / point
        shutil.copytree(base, out)
        pid = os.fork()
        if pid == 0:
            _child(out, int(point), sys.argv[split + 1:])
        _, status = os.waitpid(pid, 0)
        Path(f"{out}.code").write_text(str(os.waitstatus_to_exitcode(status)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
