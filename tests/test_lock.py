"""The output folder's lock: one writer at a time, named when refused; taking over a dead run's."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import fsspec
import pytest

from p3data.errors import P3DataError
from p3data.lock import Holder, LockHeldError, output_lock

COMMAND = "p3data cache --mixture t0_train"
HOLD_UNTIL_STDIN_CLOSES = f"""
import sys
from p3data.lock import output_lock
with output_lock(sys.argv[1], command={COMMAND!r}):
    print("held", flush=True)
    sys.stdin.read()
"""


def lock_holder(out: Path) -> Holder:
    return Holder.from_json((out / ".p3data-lock").read_bytes())


def one_line(err: pytest.ExceptionInfo) -> str:
    message = str(err.value)
    assert "\n" not in message
    return message


def test_acquire_creates_the_folder_and_release_deletes_the_lock(tmp_path):
    out = tmp_path / "new" / "out"
    with output_lock(str(out), command=COMMAND) as held:
        record = json.loads((out / ".p3data-lock").read_text())
        assert set(record) == {"owner", "host", "pid", "started", "command", "run_id"}
        assert lock_holder(out) == held
        assert (held.pid, held.host, held.command) == (os.getpid(), socket.gethostname(), COMMAND)
    assert out.is_dir() and not (out / ".p3data-lock").exists()


def test_a_second_acquire_in_this_process_names_the_holder(tmp_path):
    with output_lock(str(tmp_path), command=COMMAND) as held:
        with pytest.raises(LockHeldError) as err, output_lock(str(tmp_path)):
            pytest.fail("the lock was taken twice")
        assert lock_holder(tmp_path) == held  # the refused run left the lock alone
    assert one_line(err) == (
        f"{tmp_path} is being written by {held.owner}@{held.host} (pid {os.getpid()}, "
        f"{COMMAND}) since {held.started[:10]} {held.started[11:16]} UTC; wait for it to end")
    assert err.value.setting is None  # no option takes a live run's lock


@pytest.mark.parametrize("force", [False, True])
def test_a_holder_on_another_host_is_never_taken_over(tmp_path, force):
    """Whether a run on another host still runs cannot be told from here: only its user,
    deleting the lock by hand, can say it has ended."""
    holder = Holder(owner="alice", host="host1", pid=4242, started="2026-11-22T12:00:07+00:00",
                    command=COMMAND, run_id="x")
    (tmp_path / ".p3data-lock").write_bytes(holder.to_json())
    with pytest.raises(LockHeldError) as err, output_lock(str(tmp_path), force=force):
        pass
    assert one_line(err) == (
        f"{tmp_path} is being written by alice@host1 (pid 4242, p3data cache --mixture "
        "t0_train) since 2026-11-22 12:00 UTC, on another host, where p3data cannot tell "
        f"whether it still runs: wait for it to end, or if it has, delete {tmp_path}/"
        ".p3data-lock and rerun")
    assert lock_holder(tmp_path) == holder


def test_another_process_holds_then_dies_then_force_takes_over(tmp_path, caplog):
    holder = subprocess.Popen([sys.executable, "-c", HOLD_UNTIL_STDIN_CLOSES, str(tmp_path)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "held\n"
        with pytest.raises(LockHeldError) as err, output_lock(str(tmp_path)):
            pass
        assert f"is being written by {Holder.this_run().owner}@" in one_line(err)
        assert f"(pid {holder.pid}, {COMMAND})" in str(err.value)
    finally:
        holder.kill()  # SIGKILL: the lock stays behind, as after a crash
        holder.wait()

    with pytest.raises(LockHeldError) as err, output_lock(str(tmp_path)):
        pass
    assert f"(pid {holder.pid}, {COMMAND})" in one_line(err)
    assert "but that process is no longer running; rerun taking over the lock" in str(
        err.value)

    dead = lock_holder(tmp_path)
    with caplog.at_level(logging.WARNING), output_lock(str(tmp_path), force=True) as held:
        assert lock_holder(tmp_path).run_id == held.run_id
    assert [r.getMessage() for r in caplog.records] == [
        f"p3data: {tmp_path}: taking over the lock held by {dead.describe()}"]
    assert not (tmp_path / ".p3data-lock").exists()


def test_force_never_takes_the_lock_of_a_live_run(tmp_path):
    holder = subprocess.Popen([sys.executable, "-c", HOLD_UNTIL_STDIN_CLOSES, str(tmp_path)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "held\n"
        held = lock_holder(tmp_path)
        with pytest.raises(LockHeldError) as err, output_lock(str(tmp_path), force=True):
            pytest.fail("a live run's lock was taken")
        assert f"(pid {holder.pid}, {COMMAND})" in one_line(err)
        assert one_line(err).endswith("; wait for it to end")
        assert lock_holder(tmp_path) == held
    finally:
        holder.stdin.close()
        holder.wait()
    assert holder.returncode == 0 and not (tmp_path / ".p3data-lock").exists()


def test_release_after_a_takeover_keeps_the_new_holders_lock(tmp_path):
    with contextlib.ExitStack() as first:
        held = first.enter_context(output_lock(str(tmp_path)))
        # the first run's process is gone (as after kill -9, its `finally` never ran)
        (tmp_path / ".p3data-lock").write_bytes(
            dataclasses.replace(held, pid=_dead_pid()).to_json())
        with output_lock(str(tmp_path), force=True) as second:
            first.close()  # the run that lost its lock ends meanwhile
            assert lock_holder(tmp_path).run_id == second.run_id
        assert not (tmp_path / ".p3data-lock").exists()


def _dead_pid() -> int:
    """The pid of a process that has ended."""
    process = subprocess.Popen([sys.executable, "-c", ""])
    process.wait()
    return process.pid


def test_a_garbled_lock_is_held_and_said_to_be_unreadable(tmp_path, caplog):
    (tmp_path / ".p3data-lock").write_text('{"owner": "al')
    with pytest.raises(LockHeldError) as err, output_lock(str(tmp_path)):
        pass
    assert f"{tmp_path} is locked, but {tmp_path}/.p3data-lock is unreadable" in one_line(err)
    assert "rerun taking over the lock" in str(err.value) and err.value.setting == "lock"
    with caplog.at_level(logging.WARNING), output_lock(str(tmp_path), force=True):
        pass
    assert any("unreadable" in r.getMessage() for r in caplog.records)


def test_memory_filesystem(tmp_path):
    url = f"memory://p3data-test-{uuid.uuid4().hex}/out"
    memory = fsspec.filesystem("memory")
    with output_lock(url) as held:
        assert Holder.from_json(memory.cat_file(f"{url}/.p3data-lock")) == held
        with pytest.raises(LockHeldError, match="is being written by"), output_lock(url):
            pass
    assert not memory.exists(f"{url}/.p3data-lock")


def test_an_output_folder_that_cannot_be_made_is_one_clear_error(tmp_path):
    regular = tmp_path / "notes.txt"
    regular.write_text("not a folder")
    with pytest.raises(P3DataError) as err, output_lock(str(regular / "out")):
        pytest.fail("no lock can be taken here")
    assert not isinstance(err.value, LockHeldError)
    assert one_line(err).startswith(f"{regular / 'out'}: cannot create the output folder "
                                    "(Not a directory)")
    with pytest.raises(P3DataError, match="is a file, not a folder"), output_lock(str(regular)):
        pass
    unknown = pytest.raises(P3DataError, match="^nowhere://out: cannot use this filesystem")
    with unknown, output_lock("nowhere://out"):
        pass


PAUSE_RUN = Path(__file__).parent / "helpers" / "pause_run.py"


def paused(ready: Path, when: str, *arguments: str) -> subprocess.Popen:
    """`p3data ARGUMENTS` paused alive at the file operation `when` says (pause_run.py)."""
    run = subprocess.Popen([sys.executable, str(PAUSE_RUN), str(ready), when, "--", *arguments],
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True)
    while not ready.exists():
        assert run.poll() is None, run.communicate()
        time.sleep(0.05)
    return run


def finish(run: subprocess.Popen) -> tuple[int, str]:
    """Let a paused run go on to its end: its exit code and its stderr."""
    _, errors = run.communicate("", timeout=600)
    return run.returncode, errors


def test_export_and_index_of_a_folder_a_live_cache_run_rebuilds_name_that_run(tmp_path):
    """A `p3data cache` run paused, alive and holding the lock, just after it withdrew the
    task it rebuilds (another shard count): `export` and `index` say whose run is writing the
    folder in one line, write nothing, and work once that run has ended."""
    from helpers.cache import P3DATA, cache_command, run_cache
    from helpers.command_server import run_p3data

    task = "super_glue_copa_exercise"
    out = tmp_path / "cache"
    run_cache(out, "--tasks", task)
    rebuild = cache_command(out, "--tasks", task, "--shards", "2")[1:]
    run = paused(tmp_path / "ready", "withdrawn", *rebuild)
    try:
        assert not (out / task / "COMPLETED").exists()  # withdrawn, being rebuilt
        holder = lock_holder(out)
        assert holder.pid == run.pid and holder.command == " ".join(["p3data", *rebuild])
        problem = f"{out} is being written by {holder.describe()}; wait for it to end"
        for command in (["export", str(out), "--out", str(tmp_path / "export")],
                        ["index", str(out)]):
            refused = subprocess.run([P3DATA, *command], capture_output=True, text=True,
                                     timeout=600)
            assert (refused.returncode, refused.stdout) == (2, ""), refused.stderr[-3000:]
            assert refused.stderr.splitlines() == [f"p3data: error: {problem}"]
        assert not (tmp_path / "export").exists()
        assert lock_holder(out) == holder
    finally:
        code, errors = finish(run)
    assert code == 0, errors[-3000:]
    exported = run_p3data(["export", str(out), "--out", str(tmp_path / "export")], timeout=600)
    assert exported.returncode == 0, exported.stderr[-3000:]


def test_an_export_a_cache_run_overtakes_names_that_run(tmp_path):
    """`export` paused once it holds its own lock, having opened the cache; a rebuild of the
    cache starts and withdraws the task meanwhile: the export stops in one line naming it, not
    with the task's missing files."""
    from helpers.cache import cache_command, run_cache

    task = "super_glue_copa_exercise"
    out, exported = tmp_path / "cache", tmp_path / "export"
    run_cache(out, "--tasks", task)
    export = paused(tmp_path / "export-ready", "1", "export", str(out), "--out", str(exported))
    rebuild = cache_command(out, "--tasks", task, "--shards", "2")[1:]
    cache = paused(tmp_path / "cache-ready", "withdrawn", *rebuild)
    try:
        holder = lock_holder(out)
        code, errors = finish(export)
        assert code == 2, errors[-3000:]
        assert errors.splitlines()[-1] == (f"p3data: error: {out} is being written by "
                                           f"{holder.describe()}; wait for it to end")
    finally:
        assert finish(cache)[0] == 0
