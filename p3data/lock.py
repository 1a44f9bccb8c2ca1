"""One writer per output folder: the lock file `<output>/.p3data-lock`, held by whatever writes
a folder (a cache run, `p3data index`, `export`, `fetch`).

Two runs writing one cache would mix their shards and manifests, so a run holds this lock for
its whole length. The file is made by an exclusive create (fsspec's "xb": local disk,
memory://, gs:// through gcsfs's ifGenerationMatch=0, s3 likewise), so of two runs starting
together exactly one wins; it says who holds it, so the other can tell its user whom it waits
for. A lock left by a dead run stays until a run takes it over with `force`, which takes only
a lock whose run has ended for sure: its process, on this host, is gone (or the lock is
unreadable). Whether a run on another host still runs cannot be told from here, so its lock
is never taken: its user deletes it by hand once that run has ended.
"""

from __future__ import annotations

import contextlib
import dataclasses
import getpass
import json
import logging
import os
import shlex
import socket
import sys
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime

from p3data import fs
from p3data.errors import P3DataError, storage_refusal

LOCK = ".p3data-lock"  # the lock file's name, in the folder it locks
logger = logging.getLogger(__name__)


class LockHeldError(P3DataError):
    """Another run holds (or a dead run left) the output folder's lock."""


@dataclasses.dataclass(frozen=True)
class Holder:
    """Who holds a lock: what the lock file says, as JSON."""

    owner: str
    host: str
    pid: int
    started: str  # UTC, ISO 8601
    command: str
    run_id: str

    @classmethod
    def this_run(cls, command: str | None = None) -> Holder:
        if command is None:
            command = shlex.join([os.path.basename(sys.argv[0]), *sys.argv[1:]])
        return cls(owner=_user(), host=socket.gethostname(), pid=os.getpid(),
                   started=datetime.now(UTC).isoformat(timespec="seconds"), command=command,
                   run_id=uuid.uuid4().hex)

    @classmethod
    def from_json(cls, data: bytes) -> Holder:
        """The holder a lock file names; `ValueError` if it is not a lock this module wrote."""
        record = json.loads(data)
        if not isinstance(record, dict):
            raise ValueError("not a JSON object")
        missing = [f.name for f in dataclasses.fields(cls) if f.name not in record]
        if missing:
            raise ValueError(f"no {', '.join(missing)}")
        holder = cls(**{f.name: record[f.name] for f in dataclasses.fields(cls)})
        if not isinstance(holder.pid, int) or holder.pid <= 0:
            raise ValueError(f"pid {holder.pid!r} is not a process id")
        return holder

    def to_json(self) -> bytes:
        return json.dumps(dataclasses.asdict(self), indent=2).encode() + b"\n"

    def describe(self) -> str:
        """e.g. `alice@host1 (pid 4242, p3data cache --mixture t0_train) since 2026-11-22 12:00
        UTC`, and whether that process is gone when it ran on this host."""
        try:
            since = datetime.fromisoformat(self.started).astimezone(UTC)
            started = since.strftime("%Y-%m-%d %H:%M UTC")
        except (TypeError, ValueError):
            started = str(self.started)
        text = f"{self.owner}@{self.host} (pid {self.pid}, {self.command}) since {started}"
        return f"{text}, but that process is no longer running" if self.is_dead() else text

    def is_dead(self) -> bool:
        """True only when the holder ran on this host and its process is gone."""
        if self.host != socket.gethostname():
            return False
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return True
        except PermissionError:  # alive, owned by someone else
            return False
        return False


def describe_lock(data: bytes) -> str:
    """What a lock file's bytes say about its holder, readable or not."""
    try:
        return f"held by {Holder.from_json(data).describe()}"
    except ValueError as err:
        return f"unreadable ({err})"


@contextlib.contextmanager
def output_lock(output_dir: str, *, force: bool = False,
                command: str | None = None) -> Iterator[Holder]:
    """Hold `<output_dir>/.p3data-lock` while the block runs, creating the folder if needed.

    A held lock raises `LockHeldError` naming its holder; `force` takes it over (one warning
    names the previous holder). On exit the lock is deleted only if it is still ours, so a run
    whose lock was taken over leaves its successor's lock alone.
    """
    _make_folder(output_dir)
    path = fs.join(output_dir, LOCK)
    holder = Holder.this_run(command)
    if force:
        _take_over(path, output_dir)
    _create(path, holder, output_dir)
    try:
        yield holder
    finally:
        _release(path, holder)


def refuse_live_writer(folder: str) -> None:
    """For a command that reads `folder` where a run may be writing (`export` reading a cache,
    `index` before it locks it): the one line naming a run that holds its lock and may still
    run, as a second writer is told. A dead run's lock stops no reader: what that run left
    complete is read, and what it did not is named task by task."""
    path = fs.join(folder, LOCK)
    try:
        holder = Holder.from_json(fs.read_bytes(path))
    except (FileNotFoundError, NotADirectoryError, ValueError):
        return  # no lock, or one being written or not p3data's: the reading says the rest
    if not holder.is_dead():
        raise _live(holder, path, folder)


def _make_folder(output_dir: str) -> None:
    if fs.exists(output_dir) and not fs.is_dir(output_dir):
        raise P3DataError(f"{output_dir}: is a file, not a folder; choose another output folder")
    try:
        fs.makedirs(output_dir)
    except OSError as err:
        if storage_refusal(err) is not None:  # a full disk: said as such, by the caller
            raise
        raise P3DataError(f"{output_dir}: cannot create the output folder ({_reason(err)}); "
                          "choose another one or fix its permissions") from None


def _create(path: str, holder: Holder, output_dir: str) -> None:
    try:
        fs.create_exclusive(path, holder.to_json())
    except FileExistsError:
        raise _held(path, output_dir) from None
    except OSError as err:
        if storage_refusal(err) is not None:  # a full disk: said as such, by the caller
            raise
        raise P3DataError(f"{output_dir}: cannot write in the output folder ({_reason(err)}); "
                          "choose another one or fix its permissions") from None


def _held(path: str, output_dir: str) -> LockHeldError:
    """Why the lock cannot be taken; `setting` is set when taking it over is the fix."""
    try:
        holder = Holder.from_json(fs.read_bytes(path))
    except FileNotFoundError:
        return LockHeldError(f"{output_dir}: the run that held {path} ended just now; rerun")
    except ValueError as err:
        return LockHeldError(f"{output_dir} is locked, but {path} is unreadable ({err}); if no "
                             "run is writing it, rerun taking over the lock", setting="lock")
    if holder.is_dead():
        return LockHeldError(f"{output_dir} was being written by {holder.describe()}; rerun "
                             "taking over the lock", setting="lock")
    return _live(holder, path, output_dir)


def _live(holder: Holder, path: str, output_dir: str) -> LockHeldError:
    """The lock of a run that may still be running: nothing takes it over."""
    if holder.host != socket.gethostname():
        return LockHeldError(
            f"{output_dir} is being written by {holder.describe()}, on another host, where "
            "p3data cannot tell whether it still runs: wait for it to end, or if it has, "
            f"delete {path} and rerun")
    return LockHeldError(f"{output_dir} is being written by {holder.describe()}; wait for it "
                         "to end")


def _take_over(path: str, output_dir: str) -> None:
    """Remove the lock of a run that has ended (or an unreadable one); refuse any other."""
    try:
        data = fs.read_bytes(path)
    except FileNotFoundError:
        return
    try:
        holder = Holder.from_json(data)
    except ValueError as err:
        previous = f"which is unreadable ({err})"
    else:
        if not holder.is_dead():
            raise _live(holder, path, output_dir)
        previous = f"held by {holder.describe()}"
    fs.delete([path])
    logger.warning("p3data: %s: taking over the lock %s", output_dir, previous)


def _release(path: str, holder: Holder) -> None:
    try:
        current = Holder.from_json(fs.read_bytes(path))
    except (FileNotFoundError, ValueError):  # gone, or replaced by something not ours
        return
    if current.run_id == holder.run_id:
        fs.delete([path])


def _user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no name for this uid (e.g. in a container)
        return str(os.getuid())


def _reason(err: OSError) -> str:
    return err.strerror or str(err) or type(err).__name__
