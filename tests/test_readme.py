"""The README's training section, and docs/training.md that has each stack in full, run as
written: every Python snippet, and every `$ command` whose output they show (compared line by
line; a `...` line stands for any lines), in order, in a folder where `demo_output/t0_train` is
the demo cache and `gs://BUCKET/p3` means it too. A snippet that begins `# excerpt of
examples/NAME.py` is not run alone: each of its lines (but those eliding code with `...`) is a
line of that example, which a `$ python` command runs."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from p3data.datasets.samples import SAMPLES_DIR
from p3data.vocab import SAMPLE_VOCAB

ROOT = Path(__file__).resolve().parents[1]
SECTION = "## Training with any stack"
TRAINING_DOC = "docs/training.md"
BUCKET = "gs://BUCKET/p3"
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.MULTILINE | re.DOTALL)
EXCERPT = re.compile(r"# excerpt of (examples/\S+\.py)\n")


@dataclass(frozen=True)
class Snippet:
    kind: str  # "python", "excerpt" or "shell"
    code: str
    expected: tuple[str, ...] = ()  # a command's shown output

    def __str__(self) -> str:
        return self.code.splitlines()[0][:80]


def section(text: str, heading: str) -> str:
    start = text.index(heading + "\n")
    end = text.find("\n## ", start + len(heading))
    return text[start:end if end != -1 else None]


def snippets(text: str) -> list[Snippet]:
    """Python blocks, and shell commands shown with their output (`$ ` lines)."""
    found = []
    for language, body in FENCE.findall(text):
        if language == "python":
            found.append(Snippet("excerpt" if EXCERPT.match(body) else "python", body))
        elif body.startswith("$ "):
            for command in re.split(r"^\$ ", body, flags=re.MULTILINE)[1:]:
                lines = command.splitlines()
                while lines[0].endswith("\\"):
                    lines[0] = lines[0][:-1] + lines.pop(1)
                found.append(Snippet("shell", lines[0], tuple(lines[1:])))
    return found


def matches(expected: tuple[str, ...], got: list[str]) -> bool:
    """Line by line; a `...` line stands for any number of lines."""
    pattern = "".join(".*?" if line.strip() == "..." else re.escape(line + "\n")
                      for line in expected)
    return re.fullmatch(pattern, "".join(line + "\n" for line in got), re.DOTALL) is not None


README_SNIPPETS = snippets(section((ROOT / "README.md").read_text(), SECTION))
SNIPPETS = README_SNIPPETS + snippets((ROOT / TRAINING_DOC).read_text())


@pytest.fixture(scope="module")
def workdir(demo_cache, tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("readme")
    (folder / "demo_output").mkdir()
    (folder / "demo_output" / "t0_train").symlink_to(demo_cache)
    (folder / "examples").symlink_to(ROOT / "examples")
    return folder


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


@pytest.mark.parametrize("snippet", [s for s in SNIPPETS if s.kind != "excerpt"], ids=str)
def test_snippet_runs_as_written(workdir, snippet):
    env = {**os.environ, "P3DATA_VOCAB": str(SAMPLE_VOCAB), "P3DATA_DATA_DIR": str(SAMPLES_DIR),
           "HF_HUB_OFFLINE": "1",  # `datasets` asks the Hub about a name it finds no folder for
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    code = snippet.code.replace(BUCKET, "demo_output/t0_train")
    command = ([sys.executable, "-c", code] if snippet.kind == "python"
               else ["bash", "-c", code])
    result = subprocess.run(command, cwd=workdir, env=env, capture_output=True, text=True,
                            timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    if snippet.expected:
        got = result.stdout.rstrip("\n").splitlines()
        assert matches(snippet.expected, got), "\n".join(got)
