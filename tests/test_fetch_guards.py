"""What `p3data fetch` and a build from its mirror guard against: a mirror edited after the
fetch (a file cut, copied, added or removed, a record edited) fails the dataset split that
reads it with one line naming the file and the fix; Hub files whose column types contradict
their metadata are refused, never truncated (integers of another width are the same data while
every value fits, and one that does not is named); a corrupt Hub file fails without pyarrow threads
left running; a second fetch into a mirror is refused while the first holds its lock; and a
bad target is one line that changes nothing. (A fetch killed at each file operation:
test_fetch_crash.py.)"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from helpers.hub import (
    COPA_COMMIT,
    COPA_FEATURES,
    catalog_entry,
    catalog_path,
    copa_rows,
    fetch,
    offline_hub,
    read_all,
    status_of,
    value,
    write_parquet,
)

from p3data.cli import main
from p3data.datasets import drift
from p3data.datasets.errors import SourceError
from p3data.datasets.fetch import snapshot
from p3data.datasets.hub import HubStore
from p3data.datasets.snapshot import SNAPSHOT
from p3data.datasets.stores import MirrorStore
from p3data.format import layout
from p3data.lock import output_lock
from p3data.vocab import SAMPLE_VOCAB

COPA_TASKS = ["super_glue_copa_exercise", "super_glue_copa_choose"]
TREC_TASK = "trec_what_category_best_describe"


@pytest.fixture
def hub(tmp_path, monkeypatch) -> SimpleNamespace:
    return offline_hub(tmp_path, monkeypatch)


@pytest.fixture
def mirror(hub, tmp_path, capsys) -> Path:
    """trec and COPA fetched from the offline Hub."""
    root = tmp_path / "mirror"
    code, lines = fetch(capsys, "trec", "super_glue/copa", "--to", str(root), "--hub-root",
                        hub.root)
    assert code == 0, lines
    return root


def refetch(mirror: Path, dataset: str = "super_glue/copa") -> str:
    return f"fetch it again: p3data fetch {dataset} --to {mirror}"


def one_line_error(call) -> str:
    with pytest.raises(SourceError) as info:
        call()
    assert "\n" not in str(info.value)
    return str(info.value)


def edit_record(folder: Path, edit) -> None:
    path = folder / SNAPSHOT
    record = json.loads(path.read_text())
    edit(record)
    path.write_text(json.dumps(record))


def cut(folder: Path, mirror: Path) -> str:
    path = folder / "train.parquet"
    recorded = path.stat().st_size
    pq.write_table(pq.read_table(path).slice(0, 3), path)
    return (f"{path}: {path.stat().st_size:,} bytes, the snapshot record says {recorded:,}; "
            f"{refetch(mirror)}")


def copy_added(folder: Path, mirror: Path) -> str:
    copy = folder / "train-00000-of-00001.jsonl"
    copy.write_text("".join(json.dumps(row) + "\n" for row in copa_rows("train")))
    return (f"{copy}: not in {folder / SNAPSHOT}, yet --data-dir reads it too: move it out "
            "of the mirror")


def removed(folder: Path, mirror: Path) -> str:
    (folder / "train.parquet").unlink()
    return (f"{folder / 'train.parquet'}: missing ({folder / SNAPSHOT} records it); "
            f"{refetch(mirror)}")


def total_edited(folder: Path, mirror: Path) -> str:
    edit_record(folder, lambda record: record["splits"]["train"].update(rows=12))
    return (f"{folder / SNAPSHOT}: train has 11 rows by its files' records but says 12 (the "
            f"record was edited); {refetch(mirror)}")


def file_rows_edited(folder: Path, mirror: Path) -> str:
    def edit(record: dict) -> None:
        record["splits"]["train"]["rows"] = 12
        record["splits"]["train"]["files"]["train.parquet"]["rows"] = 12

    edit_record(folder, edit)
    return (f"{folder / 'train.parquet'}: 11 rows in its footer, the snapshot record says 12; "
            f"{refetch(mirror)}")


def same_size_edit(folder: Path, mirror: Path) -> str:
    path = folder / "train.parquet"
    data = bytearray(path.read_bytes())
    data[len(data) // 3] ^= 0xFF
    path.write_bytes(bytes(data))
    return f"{path}: sha256 differs from the snapshot record (the file changed); {refetch(mirror)}"


@pytest.mark.parametrize("edit", [cut, copy_added, removed, total_edited, file_rows_edited,
                                  same_size_edit], ids=lambda edit: edit.__name__)
def test_a_mirror_edited_after_its_fetch_fails_the_split_it_serves(hub, mirror, capsys, edit):
    folder = mirror / "super_glue" / "copa"
    problem = edit(folder, mirror)
    store = MirrorStore(mirror, hub.copa)
    # as the build's planner asks a store: its shards, then what they are
    assert one_line_error(lambda: (store.list_shards("train"), store.identity("train"))) == (
        f"super_glue/copa/train: {problem}")
    assert read_all(MirrorStore(mirror, hub.copa), "validation") == copa_rows("validation")
    assert read_all(MirrorStore(mirror, hub.trec), "train") == read_all(
        HubStore(hub.trec, hub_root=hub.root), "train")
    code, lines = fetch(capsys, "--verify", str(mirror))
    assert (code, lines[0]) == (1, problem) and lines[-1].endswith("FAILED: 1 problem")


def test_a_catalog_sized_otherwise_than_the_snapshot_fails_the_split(hub, mirror, tmp_path):
    entry = catalog_entry(tmp_path, {"repo": hub.copa.hub.repo, "revision": COPA_COMMIT,
                                     "files": {s: list(g) for s, g in hub.copa.hub.files.items()}},
                          dataset="super_glue", subset="copa", features=hub.copa.features,
                          splits={**hub.copa.splits, "train": 400})
    folder = mirror / "super_glue" / "copa"
    assert one_line_error(lambda: MirrorStore(mirror, entry).list_shards("train")) == (
        f"super_glue/copa/train: {folder / SNAPSHOT}: train has 11 rows, the catalog 400 "
        f"(fetched for another catalog?); {refetch(mirror)}")


def test_a_build_from_an_edited_mirror_fails_only_that_dataset(hub, mirror, tmp_path, capsys):
    problem = copy_added(mirror / "super_glue" / "copa", mirror)
    out = tmp_path / "cache"
    tasks = [arg for task in [TREC_TASK, *COPA_TASKS] for arg in ("--tasks", task)]
    assert main(["cache", *tasks, "--output-dir", str(out), "--vocab", str(SAMPLE_VOCAB),
                 "--progress-every", "100", "--data-dir", str(mirror)]) == 1
    printed = capsys.readouterr().out.splitlines()
    assert sorted(line for line in printed if line.startswith("FAILED ")) == [
        f"FAILED {task}: super_glue/copa/train: {problem}" for task in sorted(COPA_TASKS)]
    assert (out / TREC_TASK / layout.COMPLETED).exists()
    assert not any((out / task).exists() for task in COPA_TASKS)


def float_columns(rows: list[dict]) -> dict[str, list]:
    """COPA's columns with `idx` and `label` as floats, two of them not whole."""
    columns = {name: [row[name] for row in rows] for name in COPA_FEATURES}
    columns["idx"] = [float(i) for i in columns["idx"]]
    columns["label"] = [float(label) for label in columns["label"]]
    columns["idx"][-1] += 0.5
    columns["label"][0] = 0.7
    return columns


def test_floats_under_integer_metadata_are_refused_and_never_truncated(hub, tmp_path, capsys,
                                                                      monkeypatch):
    export = Path(hub.root, "aps", "super_glue", COPA_COMMIT, "copa")
    write_parquet(export / "train-00000-of-00001.parquet", float_columns(copa_rows("train")),
                  COPA_FEATURES)
    mirror = tmp_path / "mirror"
    code, lines = fetch(capsys, "super_glue/copa", "--to", str(mirror), "--hub-root", hub.root)
    assert code == 1
    assert status_of(lines, "super_glue/copa") == (
        "failed: super_glue/copa/train: idx: the files hold float64 where their metadata "
        "declares int32; label: the files hold float64 where their metadata declares "
        "class_label [choice1, choice2]")
    assert not (mirror / "super_glue").exists()

    # Had the check let them through, the writer would still not cut 0.7 to 0.
    monkeypatch.setattr(drift, "check", lambda *args, **kwargs: None)
    error = one_line_error(lambda: snapshot(hub.copa, str(mirror), hub_root=hub.root))
    assert error.startswith("super_glue/copa/train: rows 0 to 10 do not fit the catalog's "
                            "schema: idx: ") and "truncated" in error, error
    folder = mirror / "super_glue" / "copa"
    assert not (folder / "train.parquet").exists() and not (folder / SNAPSHOT).exists()
    # a split written before the failure is no snapshot: a build refuses it
    assert "written by p3data fetch, but" in one_line_error(
        lambda: MirrorStore(mirror, hub.copa).list_shards("test"))


def copa_columns(rows: list[dict], idx: pa.Array) -> dict[str, list | pa.Array]:
    return {**{name: [row[name] for row in rows] for name in COPA_FEATURES}, "idx": idx}


def test_integers_wider_than_their_metadata_are_the_same_data_when_every_value_fits(
        hub, tmp_path, capsys):
    """COPA's idx held as int64 under int32 metadata (as pyarrow writes Python ints, and as
    examples/offline_hub.py wrote it): every value fits int32, so nothing would change."""
    export = Path(hub.root, "aps", "super_glue", COPA_COMMIT, "copa")
    rows = copa_rows("train")
    write_parquet(export / "train-00000-of-00001.parquet",
                  copa_columns(rows, pa.array([row["idx"] for row in rows], pa.int64())),
                  COPA_FEATURES)
    mirror = tmp_path / "mirror"
    code, lines = fetch(capsys, "super_glue/copa", "--to", str(mirror), "--hub-root", hub.root)
    assert code == 0, lines
    assert read_all(HubStore(hub.copa, hub_root=hub.root), "train") == rows
    assert read_all(MirrorStore(mirror, hub.copa), "train") == rows
    written = pq.read_schema(mirror / "super_glue" / "copa" / "train.parquet")
    assert written.field("idx").type == pa.int32()


def test_an_integer_its_declared_type_cannot_hold_is_refused_naming_column_file_and_value(
        hub, tmp_path, capsys):
    export = Path(hub.root, "aps", "super_glue", COPA_COMMIT, "copa")
    path = export / "train-00000-of-00001.parquet"
    rows = copa_rows("train")
    ids = [row["idx"] for row in rows]
    ids[7] = 2**31
    write_parquet(path, copa_columns(rows, pa.array(ids, pa.int64())), COPA_FEATURES,
                  row_group_size=4)
    problem = (f"super_glue/copa train: {path}: idx holds 2,147,483,648 (row 7), which its "
               "type int32 cannot hold")
    assert one_line_error(lambda: read_all(HubStore(hub.copa, hub_root=hub.root), "train")) \
        == problem
    mirror = tmp_path / "mirror"
    code, lines = fetch(capsys, "super_glue/copa", "--to", str(mirror), "--hub-root", hub.root)
    assert code == 1
    assert status_of(lines, "super_glue/copa") == f"failed: {problem}"
    assert not (mirror / "super_glue" / "copa" / SNAPSHOT).exists()


CORRUPT_FETCH = """
import os, sys, threading
from p3data.cli import main
from p3data.datasets.parquet import ParquetRows

def native_threads():
    return len(os.listdir("/proc/self/task")) - threading.active_count()

ParquetRows(sys.argv[1]).metadata()  # pyarrow starts its helpers with the first footer read
before = native_threads()
code = main(sys.argv[2:])
print(f"native threads started: {native_threads() - before}", file=sys.stderr)
sys.exit(code)
"""


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="counts threads in /proc")
def test_a_corrupt_hub_file_fails_with_no_pyarrow_thread_left_running(tmp_path):
    """pyarrow's threaded reads left column decoders running after the error, which
    could abort the interpreter at exit; reads start no thread now."""
    rows = 20_000
    features = {f"text{i}": "string" for i in range(8)} | {"idx": "int32"}
    columns = {f"text{i}": [f"text {i} of row {j} " * 4 for j in range(rows)] for i in range(8)}
    path = tmp_path / "hub" / "acme" / "toy" / "main" / "train.parquet"
    write_parquet(path, columns | {"idx": pa.array(range(rows), pa.int32())},
                  {name: value(kind) for name, kind in features.items()}, row_group_size=rows)
    data = bytearray(path.read_bytes())
    scramble = random.Random(0)
    for offset in range(len(data) // 2, len(data) // 2 + 400):
        data[offset] = scramble.randrange(256)
    path.write_bytes(bytes(data))
    catalog_entry(tmp_path, {"repo": "acme/toy", "revision": "main",
                             "files": {"train": "train.parquet"}},
                  splits={"train": rows}, features=features)
    env = {**os.environ, "P3DATA_CATALOG": str(catalog_path(tmp_path, "toy"))}
    result = subprocess.run(
        [sys.executable, "-c", CORRUPT_FETCH, str(path), "fetch", "toy", "--to",
         str(tmp_path / "mirror"), "--hub-root", str(tmp_path / "hub")],
        capture_output=True, text=True, env=env, timeout=300)
    assert "native threads started: 0" in result.stderr
    assert result.returncode == 1, result.stderr
    assert f"failed: toy train: {path}: cannot decode the rows from row 0 on (corrupt file?)" in (
        result.stdout)


def test_a_second_fetch_is_refused_while_the_first_holds_the_mirror(hub, tmp_path, capsys):
    mirror = tmp_path / "mirror"
    writing = mirror / "trec" / f".p3data-tmp-{'0' * 32}-train.parquet"  # the holder's, half done
    writing.parent.mkdir(parents=True)
    writing.write_bytes(b"half")
    with output_lock(str(mirror), command="p3data fetch trec --to mirror"):
        code = main(["fetch", "trec", "--to", str(mirror), "--hub-root", hub.root])
        err = capsys.readouterr().err.splitlines()
        assert code == 2 and len(err) == 1
        assert err[0].startswith(f"p3data: error: {mirror} is being written by ")
        assert "(pid " in err[0] and "p3data fetch trec --to mirror" in err[0]
        assert writing.read_bytes() == b"half" and not (mirror / "trec" / SNAPSHOT).exists()
        code, lines = fetch(capsys, "--verify", str(mirror))  # a mirror being written
        assert code == 1 and lines[0].startswith(f"{mirror}/.p3data-lock: held by ")
        assert lines[0].endswith(": a fetch is writing this mirror, or died before it ended; "
                                 "once none runs, rerun it (--force takes over a dead run's "
                                 "lock)")
    assert fetch(capsys, "trec", "--to", str(mirror), "--hub-root", hub.root)[0] == 0
    assert not writing.exists()  # swept by the run that held the lock


def test_a_refetch_never_deletes_rows_it_did_not_write(hub, mirror, capsys):
    stray = mirror / "trec" / "test.jsonl"
    stray.write_text('{"text": "mine"}\n')
    code, lines = fetch(capsys, "trec", "--to", str(mirror), "--hub-root", hub.root, "--force")
    assert code == 1
    assert status_of(lines, "trec") == (
        f"failed: trec/test: {stray}: rows p3data did not fetch, which --data-dir would read "
        "with the fetched ones: move it out of the mirror, then fetch again")
    assert stray.read_text() == '{"text": "mine"}\n'
    hand_made = mirror / "ag_news"
    hand_made.mkdir()
    (hand_made / "train.jsonl").write_text('{"text": "mine", "label": 0}\n')
    stray.unlink()
    assert fetch(capsys, "trec", "--to", str(mirror), "--hub-root", hub.root, "--force")[0] == 0
    assert (hand_made / "train.jsonl").read_text() == '{"text": "mine", "label": 0}\n'


def file_tree(root: Path) -> dict[str, bytes | None]:
    return {str(path.relative_to(root)): path.read_bytes() if path.is_file() else None
            for path in sorted(root.rglob("*"))}


@pytest.mark.parametrize(("args", "expected"), [
    (["trec", "--to", "{notes}"], "{notes}: a file, not a mirror folder; choose an empty "
                                  "folder, or a mirror p3data fetch wrote"),
    (["trec", "--to", "{notes}/sub"], "{notes}/sub: cannot create the output folder"),
    (["trec", "--to", "{project}"], "{project}: not a mirror (it holds README.md, src, which "
                                    "are no catalog dataset's folders); choose an empty folder, "
                                    "or a mirror p3data fetch wrote"),
    (["trec", "--to", ""], "--to names no folder"),
    (["trec", "--to", "{tmp}/mirror", "--hub-root", "{tmp}/nowhere"],
     "{tmp}/nowhere: no such Hub root folder"),
    (["--verify", "{notes}"], "{notes}: a file, not a mirror folder"),
    (["--verify", "{tmp}/nowhere"], "{tmp}/nowhere: no such mirror folder; fill one with "
                                    "p3data fetch --to {tmp}/nowhere"),
    (["--verify", ""], "--verify names no folder"),
    (["nosuch", "--to", "{tmp}/mirror"], "dataset 'nosuch' is not in the catalog"),
    (["--tasks", "(", "--to", "{tmp}/mirror"], "a task pattern is not a regular expression"),
    (["trec", "--verify", "{tmp}"], "--verify checks a whole mirror: name no datasets"),
], ids=["to-file", "to-under-file", "to-unrelated", "to-empty", "hub-root-missing",
        "verify-file", "verify-missing", "verify-empty", "unknown-dataset", "bad-pattern",
        "verify-with-dataset"])
def test_a_bad_target_is_one_line_and_changes_nothing(hub, tmp_path, capsys, *, args,
                                                       expected):
    (tmp_path / "notes").write_text("mine")
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    (project / "README.md").write_text("mine")
    places = {"notes": tmp_path / "notes", "project": project, "tmp": tmp_path}
    before = file_tree(tmp_path)
    code = main(["fetch", *[arg.format(**places) for arg in args]])
    err = capsys.readouterr().err.splitlines()
    assert code == 2 and len(err) == 1
    assert err[0].startswith(f"p3data: error: {expected.format(**places)}"), err
    assert file_tree(tmp_path) == before


def test_an_unrelated_folder_is_verified_read_only(tmp_path, capsys):
    (tmp_path / "README.md").write_text("mine")
    assert fetch(capsys, "--verify", str(tmp_path)) == (1, [
        f"{tmp_path}: no {SNAPSHOT} in this mirror; fill it with p3data fetch --to {tmp_path}",
        "0 snapshots, 0 files: FAILED: 1 problem"])
    assert [path.name for path in tmp_path.iterdir()] == ["README.md"]


def test_fetched_files_without_their_record_are_refused(hub, mirror, capsys):
    """What a fetch killed before its record leaves: files a build must not take for a
    hand-made mirror's, and that `--verify` names."""
    folder = mirror / "super_glue" / "copa"
    (folder / SNAPSHOT).unlink()
    problem = (f"written by p3data fetch, but {folder / SNAPSHOT} (written last) is missing: "
               f"an interrupted fetch? {refetch(mirror)}")
    assert one_line_error(lambda: MirrorStore(mirror, hub.copa).list_shards("train")) == (
        f"super_glue/copa/train: {folder / 'train.parquet'}: {problem}")
    code, lines = fetch(capsys, "--verify", str(mirror))
    assert (code, lines) == (1, [f"{folder / split}.parquet: {problem}" for split in (
        "test", "train", "validation")] + ["1 snapshots, 2 files: FAILED: 3 problems"])


def test_a_file_where_a_dataset_folder_goes_fails_that_dataset_only(hub, tmp_path, capsys):
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    (mirror / "trec").write_text("mine")
    code, lines = fetch(capsys, "trec", "super_glue/copa", "--to", str(mirror), "--hub-root",
                        hub.root)
    assert code == 1
    assert status_of(lines, "trec") == (
        f"failed: trec: {mirror / 'trec'} is a file, where the dataset's folder goes: move it "
        "out of the mirror, then fetch again")
    assert status_of(lines, "super_glue/copa") == "fetched"
    assert (mirror / "trec").read_text() == "mine"
    shutil.rmtree(mirror / "super_glue")
    (mirror / "super_glue").write_text("mine")  # a file above a subset's folder
    code, lines = fetch(capsys, "super_glue/copa", "--to", str(mirror), "--hub-root", hub.root)
    status = status_of(lines, "super_glue/copa")
    assert code == 1 and status.startswith(f"failed: {mirror}/super_glue/copa/"), status
    assert "cannot write it" in status
    assert (mirror / "super_glue").read_text() == "mine"
    with pytest.raises(SourceError, match="no rows for split 'train' in the mirror"):
        MirrorStore(mirror, hub.trec).list_shards("train")
