"""Every command that reads or adds to a built cache (export, index, verify, report, peek,
compare, and the reader `open_cache`), given a missing path, a file where a folder belongs, an
unrelated folder, or a bad value: one line naming what is wrong (and where), exit 2, and
nothing created, changed or deleted, neither where it was pointed nor in the cache."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from helpers.cache import run_cache

from p3data.cli import main
from p3data.errors import P3DataError
from p3data.read import open_cache

TASK = "super_glue_copa_exercise"


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("surfaces") / "cache"
    run_cache(out, "--tasks", TASK)
    return out


@pytest.fixture
def sandbox(tmp_path) -> Path:
    """A missing path, a file, and an unrelated folder with a file in it."""
    (tmp_path / "file.txt").write_text("mine\n")
    (tmp_path / "other" / "logs").mkdir(parents=True)
    (tmp_path / "other" / "logs" / "run.txt").write_text("mine\n")
    return tmp_path


def snapshot(*roots: Path) -> dict[str, bytes | None]:
    """Every file (its bytes) and folder (None) under the roots."""
    return {str(path): path.read_bytes() if path.is_file() else None
            for root in roots for path in sorted(root.rglob("*"))}


PLACES = {"missing": "missing", "file": "file.txt", "other": "other"}
REASONS = {"missing": "no such", "file": "is a file",  # and what the line must say of each
           "other": "holds no|holds neither|not written by p3data"}
# (arguments, what the line must say); {cache} is a sound cache, {x} each of PLACES in turn.
PATHS = [
    ("export {x} --out {sandbox}/out", "{x}: "),
    ("index {x}", "{x}: "),
    ("verify {x}", "{x}: "),
    ("verify {cache} --against {x}", "{x}: "),
    ("report {x} --out {sandbox}/report.html", "{x}: "),
    ("peek {x} " + TASK, "{x}: "),
    ("compare {x} {cache}", "{x}: "),
    ("compare {cache} {x}", "{x}: "),
]
OUTPUTS = [  # a missing output folder is fine: it is created
    ("export {cache} --out {x}", "{x}"),
]
VALUES = [
    ("export {cache} --out {sandbox}/out --examples-per-shard 0", "--examples-per-shard"),
    ("export {cache} --out {sandbox}/out --format xml", "--format"),
    ("export {cache} --out {sandbox}/out --shape chat", "--shape: invalid choice: 'chat'"),
    ("export {cache} --out {sandbox}/out --format arrayrecord --shape messages",
     "--shape messages is for parquet or jsonl rows"),
    ("export {cache} --out {sandbox}/out --mixture nosuch", "unknown mixture 'nosuch'"),
    ("export {cache} --out {sandbox}/out --tasks nosuch", "the cache holds no task"),
    ("export {cache} --out {sandbox}/out --tasks (", "("),
    ("report {cache} --out {sandbox}/report.html --split nosuch", "'nosuch'"),
    ("report {cache} --out {sandbox}/report.html --lengths x", "--lengths"),
    ("report {cache} --out {sandbox}/report.html --max-records 0", "--max-records"),
    ("report {cache} --out {sandbox}/other", "{sandbox}/other"),
    ("peek {cache} nosuch_task", "nosuch_task"),
    ("peek {cache} " + TASK + " --split nosuch", "'nosuch'"),
    ("peek {cache} " + TASK + " -n 0", "-n"),
    ("index {cache} --progress-every nan", "--progress-every"),
]


def cases() -> list:
    found = [pytest.param((args, says, place), id=f"{args}:{place}")
             for args, says in PATHS for place in PLACES]
    found += [pytest.param((args, says, place), id=f"{args}:{place}")
              for args, says in OUTPUTS for place in ("file", "other")]
    found += [pytest.param((args, says, None), id=args) for args, says in VALUES]
    return found


@pytest.mark.parametrize("case", cases())
def test_one_line_exit_2_and_nothing_touched(cache, sandbox, capsys, case):
    args, says, place = case
    names = {"cache": str(cache), "sandbox": str(sandbox),
             "x": str(sandbox / PLACES[place]) if place else ""}
    before = snapshot(sandbox, cache)
    try:
        code = main([part.format(**names) for part in args.split()])
    except SystemExit as exit:  # argparse's, for a value of the wrong form
        code = exit.code
    out, err = capsys.readouterr()
    assert (code, err.count("\n")) == (2, 1), err
    assert re.match(r"p3data( \w+)?: error: ", err) and says.format(**names) in err, err
    assert "Traceback" not in err and out == ""
    if place is not None:
        assert re.search(REASONS[place], err), err
    assert snapshot(sandbox, cache) == before


@pytest.mark.parametrize("place", PLACES)
def test_the_reader_on_no_cache_is_one_line(sandbox, place):
    before = snapshot(sandbox)
    with pytest.raises(P3DataError) as err:
        open_cache(str(sandbox / PLACES[place]))
    assert str(err.value).startswith(f"{sandbox / PLACES[place]}: ")
    assert "\n" not in str(err.value) and "give the folder" in str(err.value)
    assert snapshot(sandbox) == before
