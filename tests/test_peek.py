"""`p3data peek`: cached examples read back by stock seqio on a quiet console, and one clear
line for each mistake."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.cache import run_cache
from helpers.command_server import run_p3data

from p3data.cli import main
from p3data.commands import console

TASK = "super_glue_rte_GPT_3_style"
SHARD = f"{TASK}/validation.tfrecord-00000-of-00001"
NOISE = ("cuda", "tensorflow", "onednn", "absl")


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("peek") / "cache"
    run_cache(out, "--tasks", TASK, "--splits", "validation")
    return out


def copy_of(cache: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(cache, tmp_path / "cache"))


def peek(*args: str) -> subprocess.CompletedProcess:
    """`p3data peek` as a user runs it, with TensorFlow's log level left to p3data."""
    env = {k: v for k, v in os.environ.items() if k != console.TF_LOG_LEVEL}
    return run_p3data(["peek", *args], env=env, timeout=600)


def assert_quiet(stderr: str) -> None:
    noisy = [line for line in stderr.splitlines() if any(w in line.lower() for w in NOISE)]
    assert not noisy, stderr


def test_peek_prints_examples_with_a_quiet_console(cache):
    result = peek(str(cache), TASK, "--split", "validation", "-n", "2")
    assert result.returncode == 0, result.stderr
    headings = [line for line in result.stdout.splitlines() if line.startswith("---")]
    assert headings == [f"--- {TASK} [validation] example {n}" for n in range(2)]
    assert "inputs_pretokenized: 'A magnitude 6.1 earthquake" in result.stdout
    assert_quiet(result.stderr)


def test_corrupt_shard_is_one_line_naming_the_file(cache, tmp_path):
    root = copy_of(cache, tmp_path)
    shard = root / SHARD
    data = bytearray(shard.read_bytes())
    data[100] ^= 0xFF
    shard.write_bytes(bytes(data))
    result = peek(str(root), TASK, "--split", "validation")
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        f"p3data: error: {shard}: record 0 payload fails its CRC (it starts at byte 0); check "
        f"the cache with p3data verify {root}"]


def mistake(capsys, *args: str) -> str:
    """Peek's error line for a mistake: exit 2, one line on stderr, nothing on stdout."""
    assert main(["peek", *args]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 1, err
    return err


def test_missing_cache_folder(tmp_path, capsys):
    err = mistake(capsys, str(tmp_path / "nope"), TASK)
    assert f"{tmp_path / 'nope'}: no such cache folder" in err


def test_unknown_task_suggests_names(cache, capsys):
    err = mistake(capsys, str(cache), "super_glue_rte_GPT3_style")
    assert "unknown task 'super_glue_rte_GPT3_style'; did you mean super_glue_rte_GPT_3_style" \
        in err


def test_task_not_in_the_cache(cache, capsys):
    err = mistake(capsys, str(cache), "super_glue_copa_exercise")
    assert f"{cache}: task super_glue_copa_exercise is not in this cache" in err


def test_incomplete_task_says_to_rerun(cache, tmp_path, capsys):
    root = copy_of(cache, tmp_path)
    (root / TASK / "COMPLETED").unlink()
    err = mistake(capsys, str(root), TASK, "--split", "validation")
    assert f"{root / TASK}: task {TASK} is incomplete (no COMPLETED)" in err
    assert "rerun the p3data cache command" in err and "not in this cache" not in err


def test_p3_layout_points_at_its_data_folder(cache, tmp_path, capsys):
    root = tmp_path / "p3"
    shutil.copytree(cache / TASK, root / "data" / TASK)
    err = mistake(capsys, str(root), TASK, "--split", "validation")
    assert f"a cache in P3's layout; peek {root / 'data'}" in err


def test_unknown_split_lists_the_cached_ones(cache, capsys):
    err = mistake(capsys, str(cache), TASK)  # --split defaults to train
    assert f"{cache / TASK}: no split 'train' cached; pass --split with one of: validation" \
        in err


@pytest.mark.parametrize("count", ["0", "-3", "two"])
def test_count_must_be_a_positive_whole_number(cache, capsys, count):
    with pytest.raises(SystemExit) as exit_:
        main(["peek", str(cache), TASK, "-n", count])
    assert exit_.value.code == 2
    assert f"argument -n: expected a whole number above 0, not '{count}'" \
        in capsys.readouterr().err


def test_default_verbosity_keeps_what_libraries_write_to_stderr_off_the_console(capfd):
    """C++ code and worker processes write to file descriptor 2 directly; p3data's own lines
    (its stream, its loggers' warnings) still reach the console."""
    import logging

    with console.libraries_to_log(0, "test") as stream:
        os.write(2, b"cudart_stub.cc: Could not find cuda drivers\n")
        print("[p3data] progress", file=stream)
        logging.getLogger("p3data.lock").warning("p3data: taking over the lock")
    os.write(2, b"after\n")
    assert capfd.readouterr().err == "[p3data] progress\np3data: taking over the lock\nafter\n"


def tensorflow_log_level(verbose: int, users: str | None = None) -> str | None:
    """TF_CPP_MIN_LOG_LEVEL once the console is configured, in a fresh process."""
    env = {k: v for k, v in os.environ.items() if k != console.TF_LOG_LEVEL}
    if users is not None:
        env[console.TF_LOG_LEVEL] = users
    code = ("import os; from p3data.commands import console; "
            f"console.configure({verbose}); print(os.environ.get(console.TF_LOG_LEVEL, ''))")
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                            text=True, check=True)
    return result.stdout.strip() or None


def test_tensorflow_log_level_quiet_by_default_unless_the_user_set_it_or_asked_v():
    assert tensorflow_log_level(0) == "3"
    assert tensorflow_log_level(0, users="1") == "1"
    assert tensorflow_log_level(1) is None
