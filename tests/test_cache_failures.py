"""`p3data cache` under bad input and faults: failures stay in their dataset split, success is
honest, bad options and folders are one line and exit 2, and the console stays readable."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from helpers.cache import cache_command, copy_samples, run_cache, tree
from helpers.command_server import run_p3data

from p3data.dataset_key import DatasetKey
from p3data.datasets.samples import sample_rows
from p3data.format.verify import verify_task
from p3data.lock import output_lock

COPA = "super_glue_copa_exercise"
RTE = "super_glue_rte_GPT_3_style"
BOTH = f"{COPA}|{RTE}"


def _failed_lines(result: subprocess.CompletedProcess) -> dict[str, str]:
    return {line.split()[1].rstrip(":"): line for line in result.stdout.splitlines()
            if line.startswith("FAILED ")}


def _mirror(tmp_path: Path) -> tuple[Path, Path]:
    """A mirror of copa and rte; returns (mirror, copa's folder)."""
    mirror = tmp_path / "mirror"
    copy_samples(mirror, "super_glue", "rte")
    return mirror, copy_samples(mirror, "super_glue", "copa")


@pytest.mark.parametrize("damage", ["non-utf8 jsonl", "corrupt parquet", "fake parquet"])
def test_an_unreadable_file_fails_only_its_dataset_split(tmp_path, damage):
    mirror, copa = _mirror(tmp_path)
    if damage == "non-utf8 jsonl":
        lines = (copa / "validation.jsonl").read_bytes().splitlines(keepends=True)
        (copa / "validation.jsonl").write_bytes(b"".join(lines[:3]) + b'{"premise": "\xff"}\n')
        where = "validation.jsonl"
    else:
        (copa / "validation.jsonl").unlink()
        path = copa / "validation.parquet"
        rows = sample_rows(DatasetKey("super_glue", "copa"), "validation")
        pq.write_table(pa.Table.from_pylist(rows), path)
        data = path.read_bytes()
        path.write_bytes(data[:20] + b"\0" * 64 + data[84:] if damage == "corrupt parquet"
                         else b"premise,choice1\nnot,parquet\n")
        where = "validation.parquet"
    out = tmp_path / "out"
    result = run_cache(out, "--tasks", BOTH, data_dir=mirror, check=False)
    assert result.returncode == 1, result.stderr[-2000:]
    assert "Traceback" not in result.stderr
    assert where in _failed_lines(result)[COPA]
    assert not (out / COPA / "COMPLETED").exists()
    assert (out / RTE / "COMPLETED").exists()


def test_more_failing_rows_than_the_error_rate_fail_the_split(tmp_path):
    mirror, copa = _mirror(tmp_path)
    rows = (copa / "train.jsonl").read_text().splitlines()
    broken = json.loads(rows[0])
    del broken["premise"]
    (copa / "train.jsonl").write_text("\n".join([json.dumps(broken), *rows[1:]]) + "\n")
    out = tmp_path / "out"
    result = run_cache(out, "--tasks", COPA, data_dir=mirror, check=False)
    assert result.returncode == 1
    line = _failed_lines(result)[COPA]
    assert f"1 of {len(rows)} rows" in line and "maximum error rate 1.0%" in line
    assert "premise" in line
    assert not (out / COPA / "COMPLETED").exists()


def test_an_empty_source_split_fails(tmp_path):
    mirror, copa = _mirror(tmp_path)
    (copa / "test.jsonl").write_text("")
    out = tmp_path / "out"
    result = run_cache(out, "--tasks", BOTH, data_dir=mirror, check=False)
    assert result.returncode == 1
    assert "source split 'test' has no rows (the catalog lists 500)" in _failed_lines(result)[COPA]
    assert (out / RTE / "COMPLETED").exists()
    work = out / ".p3data-work"  # kept for the rerun, without the plan its job read
    assert work.exists() and not list(work.glob("plan-*"))


def _cache_failing_copa(out: Path, error: str) -> subprocess.CompletedProcess:
    """`p3data cache` of copa and rte where stage 1 raises `error` on copa's rows."""
    inject = (
        "import sys\n"
        "import p3data.builder.shard_work as work\n"
        "from p3data.errors import P3DataError\n"
        "real = work._render_shard\n"
        "def failing(config, unit, **kwargs):\n"
        "    if unit.job.entry.subset == 'copa':\n"
        f"        raise {error}\n"
        "    return real(config, unit, **kwargs)\n"
        "work._render_shard = failing\n"
        "from p3data.cli import main\n"
        "sys.exit(main(sys.argv[1:]))\n")
    command = [sys.executable, "-c", inject, *cache_command(out, "--tasks", BOTH)[1:]]
    return subprocess.run(command, capture_output=True, text=True, timeout=600)


def test_a_failure_while_reading_rows_is_retried_by_the_rerun(tmp_path):
    """A transient failure (a file gone for a moment) is not remembered: only finished work
    is reused, so the rerun reads the rows again and completes."""
    out = tmp_path / "out"
    failed = _cache_failing_copa(out, "P3DataError('copa/train.jsonl: no such file')")
    assert failed.returncode == 1
    assert "no such file" in _failed_lines(failed)[COPA]
    rerun = run_cache(out, "--tasks", BOTH)
    assert "no such file" not in rerun.stdout
    assert (out / COPA / "COMPLETED").exists() and not (out / ".p3data-work").exists()


def test_an_unexpected_error_fails_its_dataset_split_and_keeps_the_traceback(tmp_path):
    """A bug inside stage 1 for one dataset (injected) does not stop the other's tasks."""
    out = tmp_path / "out"
    result = _cache_failing_copa(out, "RuntimeError('injected bug')")
    assert result.returncode == 1
    assert "a bug in p3data" in _failed_lines(result)[COPA]
    assert "Traceback" in result.stderr and "RuntimeError: injected bug" in result.stderr
    assert (out / RTE / "COMPLETED").exists()


@pytest.mark.parametrize(("args", "message"), [
    (["--rows-per-shard", "0"], "--rows-per-shard"),
    (["--rows-per-shard", "-5"], "--rows-per-shard"),
    (["--shards", "-1"], "--shards"),
    (["--max-error-rate", "2"], "--max-error-rate"),
    (["--splits", "nosuchsplit"], "no selected task has split 'nosuchsplit'"),
    (["--vocab", "README.md"], "README.md is not a SentencePiece model"),
])
def test_bad_options_are_one_line_and_exit_2(tmp_path, args, message):
    result = run_cache(tmp_path / "out", "--tasks", COPA, *args, check=False)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) <= 2 and message in lines[-1], result.stderr  # argparse adds a usage line
    assert not (tmp_path / "out" / COPA).exists()


@pytest.mark.parametrize(("args", "message"), [
    (["--spilts", "train"], "--spilts: no such option of p3data cache or of Beam's pipeline "
                            "options; did you mean --splits?"),
    (["--direct_num_worker=2"], "did you mean --direct_num_workers?"),
    (["--bogus-beam-flag=1"], "--bogus-beam-flag: no such option"),
    (["--direct_num_workers=abc"], "--direct_num_workers: invalid int value: 'abc'"),
    (["--direct_running_mode", "fast"], "--direct_running_mode: invalid choice: 'fast'"),
    (["--runner=NoSuchRunner"], "no Beam runner 'NoSuchRunner'"),
    (["--runner=DataflowRunner"], "Beam's DataflowRunner"),  # Beam's checks: no --project
    (["--direct_num_workers=-2", "--direct_running_mode=multi_threading"],
     "Beam option --direct_num_workers: -2 workers"),
    (["--direct_num_workers=-1"], "Beam option --direct_num_workers: -1 workers"),
])
def test_bad_beam_options_are_one_line_and_exit_2_before_any_work(tmp_path, args, message):
    """p3data hands Beam only options Beam knows, with values it takes, for a runner it has:
    anything else is refused before the output folder is locked or touched."""
    out = tmp_path / "out"
    result = run_cache(out, "--tasks", COPA, *args, check=False)
    assert result.returncode == 2, result.stderr[-3000:]
    assert result.stderr.count("\n") == 1 and message in result.stderr, result.stderr[-3000:]
    assert result.stdout == ""
    assert not out.exists()


def test_direct_num_workers_zero_is_one_worker_per_cpu_as_beam_runs_it():
    """Only what Beam's DirectRunner cannot run is refused: 0 is a count it takes."""
    from p3data.pipelines.options import beam_pipeline

    for mode in ("in_memory", "multi_threading"):
        beam_pipeline(["--direct_num_workers=0", f"--direct_running_mode={mode}"])


@pytest.mark.parametrize("stranger", ["notes.txt", "results/scores.csv",
                                      f"{COPA}/my_notes.txt", f"{COPA}/.p3data-work/x"])
def test_an_output_folder_that_is_not_a_cache_is_refused_untouched(tmp_path, stranger):
    """p3data never deletes nor overwrites a file it did not write: it writes a cache into an
    empty or new folder, or into a cache, nowhere else."""
    out = tmp_path / "out"
    (out / stranger).parent.mkdir(parents=True, exist_ok=True)
    (out / stranger).write_text("mine")
    before = tree(out)
    result = run_cache(out, "--tasks", COPA, check=False)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "neither empty nor a p3data cache" in result.stderr
    assert str(out / stranger) in result.stderr
    assert tree(out) == before


@pytest.mark.parametrize("data_dir", ["missing", "a file"])
def test_a_data_dir_that_is_no_folder_is_one_line(tmp_path, data_dir):
    path = tmp_path / data_dir
    if data_dir == "a file":
        path.write_text("")
    out = tmp_path / "out"
    result = run_cache(out, "--tasks", COPA, data_dir=path, check=False)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and f"{path}: not a folder" in result.stderr
    assert "(--data-dir, --samples)" in result.stderr
    assert not out.exists()


def test_an_output_folder_that_cannot_be_made_is_one_line(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    result = run_cache(blocker / "out", "--tasks", COPA, check=False)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and str(blocker) in result.stderr


def test_a_second_writer_is_refused_and_told_who_writes(tmp_path):
    out = tmp_path / "out"
    with output_lock(str(out), command="p3data cache --mixture t0_train"):
        result = run_cache(out, "--tasks", COPA, check=False)
    assert result.returncode == 2
    assert "is being written by" in result.stderr and "p3data cache --mixture t0_train" in (
        result.stderr)
    assert not (out / COPA).exists()


def test_force_never_takes_over_a_live_run_nor_sweeps_its_files(tmp_path):
    out = tmp_path / "out"
    with output_lock(str(out), command="p3data cache --mixture t0_train") as held:
        temporary = out / COPA / ".p3data-tmp-0123abcd-train.tfrecord-00000-of-00001"
        temporary.parent.mkdir()
        temporary.write_bytes(b"being written")
        result = run_cache(out, "--tasks", COPA, "--force", check=False)
        assert result.returncode == 2
        assert result.stderr.count("\n") == 1, result.stderr
        assert "is being written by" in result.stderr and "wait for it to end" in result.stderr
        assert temporary.read_bytes() == b"being written"
        assert json.loads((out / ".p3data-lock").read_text())["run_id"] == held.run_id


def test_an_unreadable_manifest_means_a_rebuild(tmp_path):
    out = tmp_path / "out"
    run_cache(out, "--tasks", COPA)
    manifest = out / COPA / "manifest.json"
    good = manifest.read_bytes()
    manifest.write_bytes(good[:40])
    result = run_cache(out, "--tasks", COPA)
    assert "1 to build" in result.stderr
    assert manifest.read_bytes() == good


@pytest.mark.parametrize(("damaged", "code"), [(False, 0), (True, 1)])
@pytest.mark.parametrize("streams", ["stdout", "stdout and stderr"])
def test_a_reader_that_goes_away_stops_nothing(tmp_path, streams, damaged, code):
    """`p3data cache ... | head -1` (or `2>&1 | head -1`): the build goes on to its end, cleans
    up, and exits as it would have."""
    mirror, copa = _mirror(tmp_path)
    if damaged:
        (copa / "test.jsonl").write_text("")  # copa fails: an empty source split
    out = tmp_path / "out"
    both = streams == "stdout and stderr"
    process = subprocess.Popen(cache_command(out, "--tasks", BOTH, data_dir=mirror),
                               stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT if both else subprocess.DEVNULL)
    assert process.stdout.readline()
    process.stdout.close()  # the reader goes away after one line
    assert process.wait(timeout=600) == code
    assert not (out / ".p3data-lock").exists()
    assert (out / ".p3data-work").exists() == damaged
    assert (out / RTE / "COMPLETED").exists() and verify_task(str(out / RTE)) == []


def test_console_is_quiet_with_workers_and_says_more_with_verbose(tmp_path):
    workers = ["--direct_num_workers=2", "--direct_running_mode=multi_processing"]
    long_name = "dbpedia_14_given_a_list_of_category_what_does_the_title_belong_to_score_eval"
    quiet = run_cache(tmp_path / "quiet", "--tasks", long_name, *workers)
    assert all(line.startswith("[p3data cache]") for line in quiet.stderr.splitlines()), (
        quiet.stderr)
    assert "task splits assembled" in quiet.stderr
    assert any(line.startswith(long_name + " ") for line in quiet.stdout.splitlines())
    command = cache_command(tmp_path / "verbose", "--tasks", long_name, *workers)
    verbose = run_p3data(["-v", *command[1:]], timeout=600)
    assert verbose.returncode == 0
    assert any(not line.startswith("[p3data cache]") for line in verbose.stderr.splitlines())
