"""An object store's refusals, against the local GCS-compatible server (and a proxy in front
of it that refuses what a test says: a permission withdrawn, a precondition another writer
won): each is one line naming the object, and nothing is left that seqio would read as
complete."""

from __future__ import annotations

import json

import pytest
from helpers.gcs import Refusing

from p3data import fs
from p3data.cli import main
from p3data.format import layout
from p3data.lock import LOCK, Holder
from p3data.vocab import SAMPLE_VOCAB

pytestmark = pytest.mark.usefixtures("gcs_server")

BUILD = ["cache", "--samples", "--tasks", "super_glue_copa_exercise", "--vocab",
         str(SAMPLE_VOCAB), "--progress-every", "600"]
MISSING = "gs://no-such-bucket-p3data"


def error_lines(capsys) -> list[str]:
    return capsys.readouterr().err.splitlines()


@pytest.mark.parametrize("command", [
    [*BUILD, "--output-dir", f"{MISSING}/cache"],
    ["verify", f"{MISSING}/cache"],
    ["index", f"{MISSING}/cache"],
    ["export", f"{MISSING}/cache", "--out", "{bucket}/export"],
    ["export", "{bucket}/cache", "--out", f"{MISSING}/export"],
    ["fetch", "super_glue/copa", "--to", f"{MISSING}/mirror"],
], ids=["cache", "verify", "index", "export-from", "export-to", "fetch"])
def test_a_missing_bucket_is_one_line_naming_it(command, bucket, capsys):
    if command[0] == "export" and "{bucket}/cache" in command:  # a cache to export
        assert main([*BUILD, "--output-dir", f"{bucket}/cache"]) == 0
        capsys.readouterr()
    code = main([part.replace("{bucket}", bucket) for part in command])
    (line,) = error_lines(capsys)
    assert code != 0 and line.startswith("p3data: error: ") and MISSING in line, line
    assert not fs.glob(f"{bucket}/**/{layout.COMPLETED}") or command[0] == "export"


def test_a_permission_withdrawn_before_completed_leaves_no_task_complete(
        gcs_server, bucket, monkeypatch, capsys):
    """The store refuses COMPLETED (the last object a task writes): the run fails in one line
    naming it, and no folder is complete; once allowed again, a rerun finishes."""
    def refuse_completed(method: str, path: str, body: bytes) -> int | None:
        return 403 if method == "POST" and b'/COMPLETED"' in body else None

    out = f"{bucket}/cache"
    with Refusing(gcs_server.url, refuse_completed) as proxy:
        monkeypatch.setenv("STORAGE_EMULATOR_HOST", proxy.url)
        code = main([*BUILD, "--output-dir", out, "--force"])
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", gcs_server.url)
    assert proxy.refused
    lines = error_lines(capsys)
    assert code != 0 and len(lines) == 1, lines
    assert f"{out}/super_glue_copa_exercise/COMPLETED: cannot write it: permission denied" in (
        lines[0])
    assert not fs.glob(f"{out}/**/{layout.COMPLETED}")
    assert main([*BUILD, "--output-dir", out, "--force"]) == 0
    assert fs.exists(f"{out}/super_glue_copa_exercise/{layout.COMPLETED}")


def test_a_lock_another_writer_won_is_one_line(gcs_server, bucket, monkeypatch, capsys):
    """Two runs create the lock at once and the other wins (the store answers 412 to this
    one's `ifGenerationMatch=0`): one line, and this run writes nothing."""
    def other_writer_won(method: str, path: str, body: bytes) -> int | None:
        return 412 if "ifGenerationMatch=0" in path else None

    out = f"{bucket}/cache"
    with Refusing(gcs_server.url, other_writer_won) as proxy:
        monkeypatch.setenv("STORAGE_EMULATOR_HOST", proxy.url)
        code = main([*BUILD, "--output-dir", out])
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", gcs_server.url)
    (line,) = error_lines(capsys)
    assert code == 2 and f"{out}/{LOCK}" in line and "rerun" in line, line
    assert fs.walk_files(out) == []


def test_a_lock_held_on_another_host_is_one_line_and_kept(bucket, capsys):
    out = f"{bucket}/cache"
    holder = Holder("alice", "elsewhere", 4242, "2026-11-26T10:00:00+00:00",
                    "p3data cache --mixture t0_train", "0" * 32)
    fs.write_bytes(f"{out}/{LOCK}", holder.to_json())
    assert main([*BUILD, "--output-dir", out, "--force"]) == 2
    (line,) = error_lines(capsys)
    assert "alice@elsewhere" in line and f"delete {out}/{LOCK}" in line, line
    assert json.loads(fs.read_bytes(f"{out}/{LOCK}"))["host"] == "elsewhere"
    assert fs.walk_files(out) == [f"{out}/{LOCK}"]
