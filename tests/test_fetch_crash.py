"""A fetch killed like `kill -9` just before each of its file operations, driven
deterministically in a forked child: a build serves every split whole or refuses it,
`--verify` passes only a mirror that is complete, and a rerun finishes it."""

from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest
from fsspec.implementations.local import LocalFileSystem
from helpers.hub import offline_hub, read_all

from p3data.cli import main
from p3data.datasets.errors import SourceError
from p3data.datasets.fetch import snapshot
from p3data.datasets.hub import HubStore
from p3data.datasets.mirror_check import verify_mirror
from p3data.datasets.snapshot import read_snapshot
from p3data.datasets.stores import MirrorStore


@pytest.fixture
def hub(tmp_path, monkeypatch) -> SimpleNamespace:
    return offline_hub(tmp_path, monkeypatch)


_OPERATIONS = ("_open", "mv", "rm")  # how fsspec's local filesystem creates, renames, deletes


def _fetch_dying_at(args: list[str], crash_at: int, count: Path) -> int:
    """`p3data fetch ARGS` in a forked child that dies just before its file operation number
    `crash_at` (-1: never; it then writes how many it made to `count`); its exit code."""
    pid = os.fork()
    if pid:
        return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    code = 3
    try:
        made = [0]
        for method in _OPERATIONS:
            original = getattr(LocalFileSystem, method)

            def operation(self, *a, _original=original, _method=method, **kw):
                mode = kw.get("mode", a[1] if len(a) > 1 else "rb")
                if _method != "_open" or set(mode) & set("wxa"):
                    if made[0] == crash_at:
                        os._exit(137)  # no cleanup, no finally: what kill -9 leaves
                    made[0] += 1
                return _original(self, *a, **kw)

            setattr(LocalFileSystem, method, operation)
        with open(os.devnull, "w") as null, contextlib.redirect_stdout(null), \
                contextlib.redirect_stderr(null):
            code = main(["fetch", *args])
        count.write_text(str(made[0]))
    finally:
        os._exit(code)


def _served_or_refused(store, split: str) -> list[dict] | None:
    """The rows a build would read, or None when it refuses the split."""
    try:
        return read_all(store, split)
    except SourceError:
        return None


@pytest.mark.crash
def test_a_killed_fetch_leaves_nothing_that_passes_for_complete(hub, tmp_path):
    """A refetch that changes the files' layout (COPA's train from three files to one) dies
    before each of its file operations: a build serves every split whole or refuses it,
    `--verify` passes only a mirror whose datasets are all complete, and a rerun finishes."""
    base = tmp_path / "base"
    source = sum(HubStore(hub.copa, hub_root=hub.root).files("train").values())
    snapshot(hub.copa, str(base), hub_root=hub.root, row_group_rows=2,
             file_bytes=-(-source // 3))
    snapshot(hub.trec, str(base), hub_root=hub.root)
    expected = {(entry.name, split): read_all(HubStore(entry, hub_root=hub.root), split)
                for entry in (hub.trec, hub.copa) for split in entry.splits}

    def args(mirror: Path) -> list[str]:
        return ["super_glue/copa", "trec", "--to", str(mirror), "--hub-root", hub.root,
                "--force"]

    count = tmp_path / "count"
    whole = tmp_path / "whole"
    shutil.copytree(base, whole)
    assert _fetch_dying_at(args(whole), -1, count) == 0
    operations = int(count.read_text())
    assert operations >= 12
    for point in range(operations):
        mirror = tmp_path / f"killed-{point}"
        shutil.copytree(base, mirror)
        assert _fetch_dying_at(args(mirror), point, count) == 137
        served = {key: _served_or_refused(MirrorStore(mirror, entry), key[1])
                  for entry in (hub.trec, hub.copa) for key in expected if key[0] == entry.name}
        for key, rows in served.items():
            assert rows in (None, expected[key]), (point, key)
        if not verify_mirror(str(mirror)).problems:
            assert served == expected, point
        # the command also finds the dead run's lock: its fetch did not end
        assert main(["fetch", "--verify", str(mirror)]) == (1 if point else 0), point
        assert main(["fetch", *args(mirror)]) == 0, point  # --force takes over the dead lock
        assert not verify_mirror(str(mirror)).problems
        assert {key: read_all(MirrorStore(mirror, entry), key[1]) for entry in (
            hub.trec, hub.copa) for key in expected if key[0] == entry.name} == expected
        record = read_snapshot(str(mirror / "super_glue" / "copa"))
        assert list(record.splits["train"].files) == ["train.parquet"]
