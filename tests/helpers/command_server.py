"""Run the `p3data` command in a fresh process without paying its start-up each time.

A test worker starts one server process that imports p3data's commands and the Beam runner
they use once (some 4 seconds of CPU, most of a small build's cost) and parses the bundled
templates once (`warm_up`); for each command it forks a child, which takes the test's
arguments, environment and folder, writes its output to files and exits with the command's
exit code, as the `p3data` executable would (`sys.argv[0]` is that executable, exit handlers
run). Only what the server imported and parsed is shared, before any command ran: every
command starts from the state a new process has, but for what those imports read from the
environment as the server started (google-auth's NO_GCE_CHECK: tests/conftest.py sets it for
every process) and for template files it need not parse again (p3data keeps a file's parse
by the digest of its bytes, so a changed file is parsed anew).

    run_p3data(["cache", ...], env=..., cwd=..., timeout=...) -> subprocess.CompletedProcess

Tests that need the executable itself (resource limits, signals, process groups, other
interpreters) run it with `subprocess` as before.
"""

from __future__ import annotations

import atexit
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import traceback
from pathlib import Path

P3DATA = str(Path(sys.executable).with_name("p3data"))
_SERVER: list[subprocess.Popen] = []  # this test worker's server, started on first use


def run_p3data(args: list[str], *, env: dict[str, str] | None = None, cwd: Path | str | None = None,
               timeout: float = 1200) -> subprocess.CompletedProcess:
    """`subprocess.run([P3DATA, *args], capture_output=True, text=True, ...)`, forked (or
    run, when `env` changes what the interpreter reads as it starts: PYTHONPATH and the like)."""
    env = dict(os.environ if env is None else env)
    if _starts_another_interpreter(env):
        return subprocess.run([P3DATA, *args], env=env, cwd=cwd, timeout=timeout,
                              capture_output=True, text=True)
    server = _server()
    with tempfile.TemporaryDirectory(prefix="p3data-command-") as folder:
        out, err = Path(folder, "stdout"), Path(folder, "stderr")
        request = {"args": list(args), "env": env,
                   "cwd": str(cwd or os.getcwd()), "stdout": str(out), "stderr": str(err)}
        server.stdin.write(json.dumps(request) + "\n")
        server.stdin.flush()
        child = int(_reply(server, 60))
        try:
            code = int(_reply(server, timeout))
        except subprocess.TimeoutExpired:
            os.kill(child, signal.SIGKILL)
            _reply(server, 60)
            raise subprocess.TimeoutExpired([P3DATA, *args], timeout) from None
        return subprocess.CompletedProcess([P3DATA, *args], code, out.read_text(),
                                           err.read_text())


def _starts_another_interpreter(env: dict[str, str]) -> bool:
    names = {name for name in (*env, *os.environ) if name.startswith("PYTHON")}
    return any(env.get(name) != os.environ.get(name) for name in names)


def _server() -> subprocess.Popen:
    if not _SERVER or _SERVER[0].poll() is not None:
        _SERVER[:] = [subprocess.Popen([sys.executable, __file__], stdin=subprocess.PIPE,
                                       stdout=subprocess.PIPE, text=True)]
        atexit.register(_SERVER[0].kill)
    return _SERVER[0]


def _reply(server: subprocess.Popen, timeout: float) -> str:
    ready, _, _ = select.select([server.stdout], [], [], timeout)
    if not ready:
        raise subprocess.TimeoutExpired(P3DATA, timeout)
    line = server.stdout.readline()
    if not line:
        raise RuntimeError("the p3data command server died")
    return line


def _child(request: dict) -> None:
    """In the forked child: become the `p3data` process the request asks for."""
    code = 1
    try:
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        stdin = os.open(os.devnull, os.O_RDONLY)
        os.dup2(stdin, 0)
        for fd, path in ((1, request["stdout"]), (2, request["stderr"])):
            os.dup2(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), fd)
        sys.argv = [P3DATA, *request["args"]]
        from p3data.cli import main

        code = main(request["args"])
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else (stop.code is not None)
        if isinstance(stop.code, str):
            print(stop.code, file=sys.stderr)
    except BaseException:  # noqa: BLE001 - printed as Python prints an uncaught exception
        traceback.print_exc()
    finally:
        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


# What a command imports as it runs (a build's Beam runner among them): imported by `warm_up`.
_COMMAND_MODULES = ("p3data.cli", "p3data.commands", "p3data.pipelines",
                    "apache_beam.runners.direct.direct_runner",
                    "apache_beam.runners.portability.fn_api_runner",
                    "apache_beam.runners.portability.portable_runner",
                    "apache_beam.runners.worker.sdk_worker_main",
                    "gcsfs")  # gs://'s filesystem, which fsspec imports on a first gs:// path


def warm_up() -> None:
    """Pay once what every forked command would: importing p3data's commands (not
    `p3data.tasks`, whose import registers tasks) and Beam's runner, and parsing the
    templates of every collection installed here (xP3's too where this process's
    P3DATA_HOME has them: the bundled catalogs and the sets' parse indexes are then read once).
    A failure here is left to the commands, which meet it themselves."""
    import contextlib
    import importlib
    import pkgutil

    from p3data.errors import P3DataError
    from p3data.taskset import load_definitions

    for name in _COMMAND_MODULES:
        module = importlib.import_module(name)
        if name.startswith("p3data.") and hasattr(module, "__path__"):  # a package: its modules
            for info in pkgutil.iter_modules(module.__path__, f"{name}."):
                importlib.import_module(info.name)
    with contextlib.suppress(P3DataError):
        load_definitions()  # a collection that cannot load here is left out


def serve() -> None:
    """Import once, then fork a child per request line; reply its pid, then its exit code."""
    import logging

    warm_up()
    # Beam logs a warning as it is imported, which gives the root logger a handler: a new
    # process has none until p3data's console is configured (before it imports Beam).
    logging.root.handlers.clear()
    logging.root.setLevel(logging.WARNING)
    for line in sys.stdin:
        pid = os.fork()
        if pid == 0:
            _child(json.loads(line))
        print(pid, flush=True)
        print(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]), flush=True)


if __name__ == "__main__":
    serve()
