"""gs:// for real: p3data's commands against a GCS-compatible server on 127.0.0.1
(fake-gcs-server, the `gcs_server` fixture) through gcsfs, as on GCS; no code path is faked,
and no request leaves the machine. A build into gs:// is byte for byte the local build, within
its request budget (60 object requests per task), and prints no more than a local build."""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from helpers.cache import t0_only, tree
from helpers.command_server import run_p3data
from helpers.hub import fetch, offline_hub

from p3data import fs
from p3data.cli import main
from p3data.format import layout
from p3data.object_store import WHOLE_OBJECT
from p3data.read import open_cache
from p3data.vocab import SAMPLE_VOCAB

SELECTION = t0_only("super_glue_(rte|cb|copa)_.*")  # 74 T0 tasks from the bundled samples
SELECTED = 74
REQUESTS_PER_TASK = 60


def gs_tree(root: str) -> dict[str, bytes]:
    """Every object under `root`, by path relative to it (as `helpers.cache.tree`)."""
    return {path[len(root) + 1:]: fs.read_bytes(path) for path in fs.walk_files(root)}


def plain(example: dict) -> dict:
    """An example with its arrays as lists, to compare with `==`."""
    return {name: getattr(value, "tolist", lambda v=value: v)() for name, value in
            example.items()}


def p3data(*args: str) -> subprocess.CompletedProcess:
    """A p3data command in its own process, as a user runs it (the server's environment
    included): its exit code and every line it printed."""
    return run_p3data(list(args), timeout=900, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})


@pytest.mark.parametrize("shard_format", ["tfrecord", "arrayrecord"])
def test_a_gs_build_is_the_local_build_within_its_request_budget_and_prints_no_more(
        shard_format, gcs_server, bucket, tmp_path):
    """ArrayRecord's shards are written on local disk, then uploaded as TFRecord's are."""
    args = ["cache", "--samples", "--tasks", SELECTION, "--vocab", str(SAMPLE_VOCAB),
            "--shard-format", shard_format,
            "--progress-every", "600"]  # the same progress lines, however long each takes
    local = p3data(*args, "--output-dir", str(tmp_path / "local"))
    assert local.returncode == 0, local.stderr[-3000:]
    with gcs_server.counting() as count:
        remote = p3data(*args, "--output-dir", f"{bucket}/cache")
    assert remote.returncode == 0, remote.stderr[-3000:]
    assert f"{SELECTED} tasks: {SELECTED} to build" in remote.stderr
    assert gs_tree(f"{bucket}/cache") == tree(tmp_path / "local")
    assert count.total <= REQUESTS_PER_TASK * SELECTED, count.describe()
    assert not [r for r in count.requests if r.status >= 500], count.describe()
    printed = lambda run: (run.stdout + run.stderr).splitlines()  # noqa: E731
    assert len(printed(remote)) <= len(printed(local)), "\n".join(printed(remote)[:20])
    assert not [line for line in printed(remote) if "WARNING" in line or "bucket" in line]


@pytest.fixture
def hub(tmp_path, monkeypatch):
    return offline_hub(tmp_path, monkeypatch)


@pytest.mark.usefixtures("gcs_server")
def test_fetch_cache_verify_index_read_and_export_on_gs(bucket, hub, tmp_path, capsys):
    """The real-data path with nothing on local disk but the Hub's files: fetch a mirror to
    gs://, build from it with the vocabulary and Beam's temp_location on gs://, verify,
    index, read back and export, all on gs://; the cache is the one built locally. A few-shot
    variant among the tasks keeps its exemplar pool in the work folder on gs:// too."""
    mirror, cache, vocab = f"{bucket}/mirror", f"{bucket}/cache", f"{bucket}/vocab/sample.model"
    fs.write_bytes(vocab, SAMPLE_VOCAB.read_bytes())
    tasks = ["--tasks",
             "super_glue_copa_(exercise|choose)(_score_eval)?|super_glue_copa_choose_3shot"]
    code, lines = fetch(capsys, *tasks, "--to", mirror, "--hub-root", hub.root)
    assert code == 0, lines
    assert fs.files_in(f"{mirror}/super_glue/copa")  # the mirror's parquet files
    build = ["cache", *tasks, "--progress-every", "600"]
    assert main([*build, "--data-dir", mirror, "--output-dir", cache, "--vocab", vocab,
                 f"--temp_location={bucket}/beam-temp"]) == 0, capsys.readouterr()
    assert main([*build, "--data-dir", mirror, "--output-dir", str(tmp_path / "local"),
                 "--vocab", str(SAMPLE_VOCAB)]) == 0, capsys.readouterr()
    assert gs_tree(cache) == tree(tmp_path / "local")
    capsys.readouterr()
    # Beam's own GCS I/O (google-cloud-storage, as on Dataflow) reads the same server
    from apache_beam.io.filesystems import FileSystems

    (completed,) = FileSystems.match([f"{cache}/*/{layout.COMPLETED}"])
    assert len(completed.metadata_list) == 5

    assert main(["verify", cache]) == 0
    assert capsys.readouterr().out.splitlines()[-1].startswith("OK: 5 complete tasks")
    indexes = [path for path in fs.walk_files(cache) if fs.name_of(path).startswith("index.")]
    fs.delete(indexes[:2])  # as if built without them (stock seqio)
    assert main(["index", cache]) == 0
    assert sorted(path for path in fs.walk_files(cache)
                  if fs.name_of(path).startswith("index.")) == sorted(indexes)
    assert main(["verify", cache]) == 0

    remote, local = open_cache(cache), open_cache(str(tmp_path / "local"))
    assert remote.tasks == local.tasks and len(remote.tasks) == 5
    for task in remote.tasks:
        for split in remote.splits(task):
            examples = [plain(example) for example in remote.split(task, split)]
            assert examples == [plain(example) for example in local.split(task, split)]
            assert plain(remote.split(task, split)[len(examples) - 1]) == examples[-1]

    export = f"{bucket}/export"
    assert main(["export", cache, "--out", export]) == 0, capsys.readouterr()
    card = fs.read_bytes(f"{export}/README.md").decode()
    assert "super_glue_copa_exercise" in card
    with fs.open_read(f"{export}/super_glue_copa_exercise/train-00000-of-00001.parquet") as f:
        assert pq.read_table(f).num_rows == len(remote.split("super_glue_copa_exercise",
                                                             "train"))
    assert not fs.glob(f"{bucket}/**/{layout.TEMP_PREFIX}*")  # nothing half-done anywhere


@pytest.mark.usefixtures("gcs_server")
def test_an_arrayrecord_cache_on_gs_verifies_reads_and_exports_as_the_local_one(
        bucket, tmp_path, capsys):
    """ArrayRecord's reader opens files on local disk only: on gs:// a shard is read from a
    local copy (verify, `p3data.read` in order and by number, export); nothing is left in
    the temporary folder."""
    cache, local = f"{bucket}/cache", str(tmp_path / "local")
    build = ["cache", "--samples", "--vocab", str(SAMPLE_VOCAB), "--tasks",
             "super_glue_copa_(exercise|choose)(_score_eval)?", "--shards", "2",
             "--shard-format", "arrayrecord", "--progress-every", "600"]
    temporaries = set(Path(tempfile.gettempdir()).glob("p3data-*.array_record"))
    for out in (cache, local):
        assert main([*build, "--output-dir", out]) == 0, capsys.readouterr()
    assert gs_tree(cache) == tree(Path(local))
    assert [name for name in gs_tree(cache) if ".array_record-" in name]
    capsys.readouterr()
    assert main(["verify", cache]) == 0
    assert capsys.readouterr().out.splitlines()[-1].startswith("OK: 4 complete tasks")
    remote, here = open_cache(cache), open_cache(local)
    for task in here.tasks:
        for split in here.splits(task):
            examples = [plain(example) for example in remote.split(task, split)]
            assert examples == [plain(example) for example in here.split(task, split)]
            assert [plain(remote.split(task, split)[n]) for n in range(len(examples))[::-1]
                    ] == examples[::-1]
    assert main(["export", cache, "--out", f"{bucket}/export"]) == 0, capsys.readouterr()
    with fs.open_read(f"{bucket}/export/super_glue_copa_exercise/"
                      "train-00000-of-00001.parquet") as f:
        assert pq.read_table(f).num_rows == len(here.split("super_glue_copa_exercise", "train"))
    assert set(Path(tempfile.gettempdir()).glob("p3data-*.array_record")) == temporaries


def test_no_request_leaves_the_machine(gcs_server, bucket):
    """Writing and reading gs:// goes to the local server only: what it answered is what the
    client sent."""
    with gcs_server.counting() as count:
        fs.write_bytes(f"{bucket}/a/b.json", b"{}")
        assert fs.read_bytes(f"{bucket}/a/b.json") == b"{}"
    assert [r.method for r in count.requests] == ["POST", "GET"]
    assert os.environ["STORAGE_EMULATOR_HOST"] == gcs_server.url
    assert os.environ["NO_GCE_CHECK"] == "true"


def test_the_lock_is_an_exclusive_create_the_server_enforces(gcs_server, bucket):
    """The lock is one upload with the precondition ifGenerationMatch=0: of two creates of one
    name the server lets one through and answers the other 412 (`FileExistsError`)."""
    path = f"{bucket}/out/.p3data-lock"
    with gcs_server.counting() as count:
        fs.create_exclusive(path, b"first")
        with pytest.raises(FileExistsError):
            fs.create_exclusive(path, b"second")
    assert fs.read_bytes(path) == b"first"
    assert [(r.method, "ifGenerationMatch=0" in r.target, r.status)
            for r in count.requests] == [("POST", True, 200), ("POST", True, 412)]


def test_an_upload_that_fails_leaves_nothing(bucket):
    path = f"{bucket}/task/train.tfrecord-00000-of-00001"
    with pytest.raises(RuntimeError), fs.atomic_writer(path) as handle:
        handle.write(b"half a shard")
        raise RuntimeError("the worker died")
    assert not fs.exists(path)
    with fs.atomic_writer(path) as handle:
        handle.write(b"x" * (WHOLE_OBJECT + 5))  # streamed: a resumable upload
        assert not fs.exists(path)  # nothing under the name until the upload completes
    assert fs.size(path) == WHOLE_OBJECT + 5
    with pytest.raises(RuntimeError), fs.atomic_writer(path) as handle:
        handle.write(b"y" * (WHOLE_OBJECT + 5))
        raise RuntimeError("the worker died")
    assert fs.read_bytes(path)[:1] == b"x"  # the object before, untouched


def test_reading_an_object_of_any_size(bucket):
    for size in (0, 1, WHOLE_OBJECT - 1, WHOLE_OBJECT, WHOLE_OBJECT + 1):
        data = os.urandom(size)
        fs.write_bytes(f"{bucket}/{size}", data)
        with fs.open_read(f"{bucket}/{size}") as handle:
            assert handle.read() == data
            handle.seek(size // 2)
            assert handle.read(3) == data[size // 2:size // 2 + 3]
