"""Run `p3data cache` and die like `kill -9` just before its K-th file operation, so every
crash point of a build can be reached deterministically.

    python tests/crash_run.py crash|full OUTPUTS POINTS [BASE] [--target URL] -- <arguments>
    python tests/crash_run.py rerun OUTPUTS POINTS [--target URL] -- <cache arguments>

`crash`: for each point K of POINTS (comma-separated; -1 never crashes), a forked child
builds into OUTPUTS/K (a copy of BASE when given) and dies just before its K-th file
operation. `full`: as `crash`, but from the K-th operation on the disk is full: every file
it starts writing fails with ENOSPC (renames and deletes still work), and the child runs on
to its end; a file it writes in the output folder with Python's own `open` (numpy's and
pathlib's writes: the exemplar pools' files), which is not one of the operations counted,
opens and then fails at its first write, naming no file, as on a real full disk. `rerun`: a
child finishes each OUTPUTS/K with `--force` (the dead run's lock is left behind, as after a
real kill -9). This process imports p3data and Beam and parses the templates once
(`command_server.warm_up`), and forks a child per point, so a crash costs a fraction of a
second. With `--target URL` (a gs:// folder) the builds go to URL/K instead, on the object
store, and OUTPUTS keeps only the logs.

File operations are fsspec's local `open` for writing, `mv` and `rm`, which is how p3data
starts, commits and removes every file of a cache on disk; on gs://, gcsfs's object uploads
(one request, or the start of a resumable one) and deletes. A child writes those it ran to
OUTPUTS/K.<mode>.trace as `[operation, path]`, its output to OUTPUTS/K.<mode>.log and its exit
code to OUTPUTS/K.<mode>.code. The DirectRunner's default mode runs the workers inside the
child, so their operations count too. Tests call `crash_run` to run this, and `crash_points`
to choose the points from an uninterrupted run's trace. On gs:// p3data uploads some objects
together (concurrently): one dying just before the K-th leaves those in flight before it
uploaded or not, as a real crash would.
"""

from __future__ import annotations

import builtins
import errno
import io
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from fsspec.implementations.local import LocalFileSystem

from p3data import fs
from p3data.cli import main as cli
from p3data.object_store import on_object_store

OPERATIONS = {"_open": "create", "mv": "rename", "rm": "delete"}
_IN_OPERATION: list[str] = []  # the counted operation running, if any
# gcsfs: an object uploaded in one request, a resumable upload started, an object deleted
STORE_OPERATIONS = {"_pipe_file": "create", "_initiate_upload": "create", "_rm_file": "delete"}


def crash_run(mode: str, outputs: Path, points: list[int], cache_args: list[str], *,
              base: Path | str | None = None, target: str | None = None) -> list[int]:
    """Crash (or rerun) a build per point, each into `outputs/<point>` (or `target/<point>`);
    their exit codes."""
    command = [sys.executable, __file__, mode, str(outputs), ",".join(map(str, points)),
               *([str(base)] if base else []), *(["--target", target] if target else []),
               "--", *cache_args]
    subprocess.run(command, check=True, timeout=1800)
    return [int((outputs / f"{point}.{mode}.code").read_text()) for point in points]


def kind(operation: str, path: str | list) -> str:
    """What a file operation is about: the stage and the kind of file."""
    path = path[0] if isinstance(path, list) and path else path
    name = re.sub(r"\.p3data-tmp-[0-9a-f]+-", "", str(path).rsplit("/", 1)[-1])
    where = "work" if "/.p3data-work" in str(path) else "task"
    if where == "work" and operation == "delete" and not re.search(r"\.(json|tfrecord)$", name):
        return "delete work " + ("root" if name == ".p3data-work" else "task folder")
    for pattern, kind in ((r"^part-\d+\.tfrecord$", "part records"),
                          (r"^dealt-\d+\.", "dealt part"), (r"^index\.", "index"),
                          (r"^part-\d+\.json$", "part meta"), (r"summary\.json$", "summary"),
                          (r"\.(tfrecord|array_record)-", "shard"), (r"^info\.", "info"),
                          (r"^stats\.", "stats")):
        if re.search(pattern, name):
            return f"{operation} {kind}"
    if "/units/" in str(path) or "/assembled/" in str(path) or "/status/" in str(path):
        return f"{operation} {str(path).split('/.p3data-work/')[1].split('/')[0]} marker"
    return f"{operation} {where} {name}"


def crash_points(trace: Path, *, last: bool = True) -> list[int]:
    """The first operation of every kind (work files: only commits, since a crash before
    starting one leaves the same as a crash before committing it), and with `last` the last
    one of every kind on task folders (what seqio reads)."""
    operations = [json.loads(line) for line in trace.read_text().splitlines()]
    firsts: dict[str, int] = {}
    lasts: dict[str, int] = {}
    for number, (operation, path) in enumerate(operations):
        in_work = "/.p3data-work" in str(path)
        if in_work and operation == "create":
            continue
        what = kind(operation, path)
        firsts.setdefault(what, number)
        if last and not in_work:
            lasts[what] = number
    return sorted(set(firsts.values()) | set(lasts.values()))


def wrap_local_operation(method: str, around: Callable[[str, tuple, Callable[[], object]], object]
                         ) -> None:
    """Send each of LocalFileSystem's `method` calls that is a file operation (an open for
    reading is none) through `around(name, args, call)`, where `call()` performs it."""
    original = getattr(LocalFileSystem, method)
    name = OPERATIONS[method]

    def operation(self, *args, **kwargs):
        mode = kwargs.get("mode", args[1] if len(args) > 1 else "rb")
        if name == "create" and not set(mode) & set("wxa"):
            return original(self, *args, **kwargs)  # reading is not an operation
        return around(name, args, lambda: original(self, *args, **kwargs))

    setattr(LocalFileSystem, method, operation)


def _intercept(method: str, trace, crash_at: int, counter: list[int], *, full: bool) -> None:
    def around(name: str, args: tuple, call: Callable[[], object]) -> object:
        if counter[0] == crash_at and not full:
            trace.flush()
            os._exit(137)  # no cleanup, no finally: what kill -9 leaves
        counter[0] += 1
        path = args[1] if name == "rename" else args[0]
        if full and name == "create" and counter[0] > crash_at >= 0:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), path)
        trace.write(json.dumps([name, path if isinstance(path, str) else list(path)]) + "\n")
        _IN_OPERATION.append(name)  # the file it opens is this operation's, not a plain write
        try:
            return call()
        finally:
            _IN_OPERATION.pop()

    wrap_local_operation(method, around)


def _intercept_store(method: str, trace, crash_at: int, counter: list[int]) -> None:
    """As `_intercept`, for gcsfs's object operations (coroutines, run on its event loop)."""
    from gcsfs.core import GCSFile, GCSFileSystem

    owner = GCSFile if method == "_initiate_upload" else GCSFileSystem
    original = getattr(owner, method)
    name = STORE_OPERATIONS[method]

    def record(path: str) -> None:
        if counter[0] == crash_at:
            trace.flush()
            os._exit(137)  # no cleanup, no finally: what kill -9 leaves
        counter[0] += 1
        trace.write(json.dumps([name, path]) + "\n")

    if owner is GCSFile:
        def operation(self, *args, **kwargs):
            record(self.path)
            return original(self, *args, **kwargs)
    else:
        async def operation(self, path, *args, **kwargs):
            record(path)
            return await original(self, path, *args, **kwargs)

    setattr(owner, method, operation)


class _FullDiskFile:
    """A file opened on a full disk: its writes fail with ENOSPC and no file name, as a
    `write()` call's error never has one."""

    def __init__(self, handle):
        self._handle = handle

    def write(self, data) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def __getattr__(self, name: str):
        return getattr(self._handle, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self._handle.close()


def _fill_plain_writes(under: str, full) -> None:
    """Python's own `open` for writing under `under` gives a `_FullDiskFile` once `full()`."""
    original = io.open

    def opened(file, mode="r", *args, **kwargs):
        handle = original(file, mode, *args, **kwargs)
        path = os.fspath(file) if isinstance(file, str | os.PathLike) else ""
        if (set(mode) & set("wxa") and str(path).startswith(under + "/") and full()
                and not _IN_OPERATION):
            return _FullDiskFile(handle)
        return handle

    io.open = builtins.open = opened


def run_and_die(arguments: list[str], *, stem: str, crash_at: int, store: bool = False,
                full: bool = False, output: str | None = None) -> None:
    """In a forked child: run the p3data command, dying just before its `crash_at`-th file
    operation (`store`: object operations, its output being on an object store; `full`: not
    dying but failing every file it starts writing from then on, as on a full disk, in the
    folder `output` also those written with Python's own `open`); its output goes to
    `<stem>.log`, the operations it ran to `<stem>.trace`."""
    log = open(f"{stem}.log", "w", encoding="utf-8")  # noqa: SIM115 - outlives os._exit
    os.dup2(log.fileno(), 1)
    os.dup2(log.fileno(), 2)
    trace = open(f"{stem}.trace", "w", encoding="utf-8")  # noqa: SIM115
    counter = [0]
    for method in STORE_OPERATIONS if store else OPERATIONS:
        if store:
            _intercept_store(method, trace, crash_at, counter)
        else:
            _intercept(method, trace, crash_at, counter, full=full)
    if full and output is not None and not store:
        _fill_plain_writes(output, lambda: counter[0] >= crash_at >= 0)
    code = cli(arguments)
    trace.close()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _child(out: Path | str, mode: str, crash_at: int, cache_args: list[str], *,
           log: Path) -> None:
    force = ["--force"] if mode == "rerun" else []
    run_and_die(["cache", "--output-dir", str(out), *force, *cache_args],
                stem=f"{log}.{mode}", crash_at=crash_at, store=on_object_store(str(out)),
                full=mode == "full", output=str(out))


def main() -> int:
    from command_server import warm_up  # beside this script

    warm_up()  # what each forked child would pay
    split = sys.argv.index("--")
    mode, outputs, points, *rest = sys.argv[1:split]
    target = rest[rest.index("--target") + 1] if "--target" in rest else None
    base = [arg for arg in rest if arg != "--target" and arg != target]
    Path(outputs).mkdir(parents=True, exist_ok=True)
    running: dict[int, Path] = {}
    for point in points.split(","):
        log = Path(outputs) / point
        out = f"{target}/{point}" if target else log
        if base and mode != "rerun":
            _copy_tree(base[0], str(out))
        if len(running) >= (os.cpu_count() or 1):
            _reap(running, mode)
        pid = os.fork()
        if pid == 0:
            _child(out, mode, -1 if mode == "rerun" else int(point), sys.argv[split + 1:],
                   log=log)
        running[pid] = log
    while running:
        _reap(running, mode)
    return 0


def _copy_tree(source: str, target: str) -> None:
    if not on_object_store(source) and not on_object_store(target):
        shutil.copytree(source, target)
        return
    fs.write_files({target + path[len(source):]: fs.read_bytes(path)
                    for path in fs.walk_files(source)})


def _reap(running: dict[int, Path], mode: str) -> None:
    pid, status = os.wait()
    log = running.pop(pid)
    Path(f"{log}.{mode}.code").write_text(str(os.waitstatus_to_exitcode(status)))


if __name__ == "__main__":
    sys.exit(main())
