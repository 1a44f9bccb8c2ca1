"""What reaches the console at each verbosity: by default, p3data's own output only.

Only the command line calls these; no library module configures logging when imported.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import sys
import tempfile
from collections.abc import Callable, Iterator
from typing import TextIO

from p3data.errors import P3DataError

TF_LOG_LEVEL = "TF_CPP_MIN_LOG_LEVEL"
QUIET_LOGGERS = ("absl", "tensorflow")


def configure(verbose: int) -> None:
    """Default: TensorFlow's C++ core and absl's and TensorFlow's Python loggers keep quiet
    (TensorFlow reads its level once, when it loads). `-v`: every library's INFO logs."""
    if verbose:
        logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
        return
    os.environ.setdefault(TF_LOG_LEVEL, "3")
    import absl.logging  # noqa: F401 - absl must create its logger, of its own class, first

    for name in QUIET_LOGGERS:
        logging.getLogger(name).setLevel(logging.ERROR)


def import_tensorflow(verbose: int) -> None:
    """Import TensorFlow before seqio does. Its CUDA probing writes to stderr before its log
    level applies, so at default verbosity stderr is closed while it loads."""
    if verbose:
        import tensorflow  # noqa: F401
        return
    with _stderr_to(os.devnull):
        import tensorflow  # noqa: F401


class Console(io.TextIOBase):
    """A console stream that falls silent once its reader has gone (`p3data cache | head`):
    what a command does never depends on whether someone still reads about it."""

    def __init__(self, stream: TextIO):
        super().__init__()
        self.stream = stream
        self.gone = False

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        self._unless_gone(self.stream.write, text)
        return len(text)

    def flush(self) -> None:
        self._unless_gone(self.stream.flush)

    def _unless_gone(self, method: Callable[..., object], *args: str) -> None:
        if not self.gone and not self.stream.closed:
            try:
                method(*args)
            except BrokenPipeError:
                self.gone = True


@contextlib.contextmanager
def reader_may_leave(stream: TextIO) -> Iterator[None]:
    """Print the block's output to `sys.stdout` or `sys.stderr`: if its reader goes away, the
    rest goes nowhere (and Python's flush at exit does not complain)."""
    try:
        yield
        stream.flush()
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), stream.fileno())


@contextlib.contextmanager
def libraries_to_log(verbose: int, name: str) -> Iterator[TextIO]:
    """Yields the stream for p3data's own progress (a `Console`). By default whatever else
    writes to stderr (Beam's loggers, worker processes that inherit stderr, C++ code) goes to a
    log file, deleted on success and named on failure; `-v` keeps it all on the console."""
    if verbose:
        yield Console(sys.stderr)
        return
    handle, log_path = tempfile.mkstemp(prefix=f"p3data-{name}-", suffix=".log")
    os.close(handle)
    own = logging.getLogger("p3data")  # p3data's own warnings still reach the console
    with _stderr_to(log_path) as console:
        handler = logging.StreamHandler(console)
        handler.setFormatter(logging.Formatter("%(message)s"))
        own.addHandler(handler)
        own.propagate = False
        try:
            yield console
        except BaseException as err:
            if not isinstance(err, P3DataError) and os.path.getsize(log_path):
                print(f"p3data: the libraries' log of this run: {log_path}", file=console)
                raise
            os.unlink(log_path)
            raise
        finally:
            own.removeHandler(handler)
            own.propagate = True
    os.unlink(log_path)


@contextlib.contextmanager
def _stderr_to(path: str) -> Iterator[TextIO]:
    """Point file descriptor 2 at `path` (so C++ code's and child processes' writes go there
    too); yields a stream to the real stderr."""
    sys.stderr.flush()
    saved = os.dup(2)
    target = os.open(path, os.O_WRONLY | os.O_APPEND)
    os.dup2(target, 2)
    os.close(target)
    console = os.fdopen(os.dup(saved), "w", buffering=1)
    try:
        yield Console(console)
    finally:
        sys.stderr.flush()
        with contextlib.suppress(BrokenPipeError):  # what its reader left unread
            console.close()
        os.dup2(saved, 2)
        os.close(saved)
