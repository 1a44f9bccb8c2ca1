"""The README's training section, and docs/training.md that has each stack in full, run as
written: every Python snippet, and every `$ command` whose output they show (compared line by
line; a `...` line stands for any lines), in order, in a folder where `demo_output/t0_train` is
the demo cache and `gs://BUCKET/p3` means it too. A snippet that begins `# excerpt of
examples/NAME.py` is not run alone: each of its lines (but those eliding code with `...`) is a
line of that example, which a `$ python` command runs. The TRL recipe's commands are run by
tests/test_trainer_trl.py."""

from __future__ import annotations

import subprocess
import sys

import pytest
from helpers.doc_snippets import (
    EXCERPT,
    README_SNIPPETS,
    ROOT,
    SNIPPETS,
    T0_TRAIN_READ,
    TRL_SNIPPETS,
    as_run,
    make_workdir,
    matches,
    snippet_env,
)


@pytest.fixture(scope="module")
def workdir(demo_cache, tmp_path_factory):
    return make_workdir(tmp_path_factory.mktemp("readme"), demo_cache)


def test_the_pages_have_what_a_user_runs():
    kinds = {snippet.kind for snippet in SNIPPETS}
    assert kinds == {"python", "excerpt", "shell"} and len(SNIPPETS) >= 8
    assert any("add_global_cache_dirs" in snippet.code for snippet in README_SNIPPETS)


def _code(line: str) -> str:
    """A line without its indentation and trailing comment."""
    return line.split("  #")[0].strip() if not line.lstrip().startswith("#") else ""


@pytest.mark.parametrize("snippet", [s for s in SNIPPETS if s.kind == "excerpt"], ids=str)
def test_excerpt_is_the_examples_code(snippet):
    source, *lines = snippet.code.splitlines()
    example = ROOT / EXCERPT.match(source + "\n").group(1)
    code = {_code(line) for line in example.read_text().splitlines()}
    shown = [_code(line) for line in lines if _code(line) and "..." not in line]
    assert [line for line in shown if line not in code] == [], example
    assert any(s.code.startswith(f"python {example.relative_to(ROOT)}") for s in SNIPPETS)


@pytest.mark.parametrize("snippet", [s for s in SNIPPETS if s.kind != "excerpt"
                                     and s not in TRL_SNIPPETS], ids=str)
def test_snippet_runs_as_written(workdir, snippet, request):
    if snippet == T0_TRAIN_READ:  # run once with T5X's read of the same mixture (conftest)
        got = request.getfixturevalue("t0_train_reads")["readme"].rstrip("\n").splitlines()
    else:
        command = ([sys.executable, "-c", as_run(snippet)] if snippet.kind == "python"
                   else ["bash", "-c", as_run(snippet)])
        result = subprocess.run(command, cwd=workdir, env=snippet_env(), capture_output=True,
                                text=True, timeout=900)
        assert result.returncode == 0, result.stderr[-3000:]
        got = result.stdout.rstrip("\n").splitlines()
    if snippet.expected:
        assert matches(snippet.expected, got), "\n".join(got)
