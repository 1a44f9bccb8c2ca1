"""The README's training section and docs/training.md as a user runs them: their Python
snippets and `$ command`s (with the output they show), in a folder where
`demo_output/t0_train` is the demo cache and `gs://BUCKET/p3` means it too
(tests/test_readme.py runs them all)."""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from p3data.datasets.samples import SAMPLES_DIR
from p3data.vocab import SAMPLE_VOCAB

ROOT = Path(__file__).resolve().parents[2]
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
# The TRL recipe's commands (exports in TRL's shapes, and SFTTrainer on each): run as written
# by tests/test_trainer_trl.py, which also asserts that the loss falls.
TRL_SNIPPETS = [s for s in SNIPPETS if s.kind == "shell"
                and ("--shape" in s.code or "trl_sft.py" in s.code)]


def make_workdir(folder: Path, demo_cache: Path) -> Path:
    """`folder` laid out as the pages assume: the demo cache and the examples beside it."""
    (folder / "demo_output").mkdir()
    (folder / "demo_output" / "t0_train").symlink_to(demo_cache)
    (folder / "examples").symlink_to(ROOT / "examples")
    return folder


def snippet_env() -> dict[str, str]:
    """The environment a snippet runs in: the sample vocabulary and rows, no Hub."""
    return {**os.environ, "P3DATA_VOCAB": str(SAMPLE_VOCAB), "P3DATA_DATA_DIR": str(SAMPLES_DIR),
            "HF_HUB_OFFLINE": "1",  # `datasets` asks the Hub about a name it finds no folder for
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}


def as_run(snippet: Snippet) -> str:
    """The snippet's code as it runs here: the bucket is the demo cache."""
    return snippet.code.replace(BUCKET, "demo_output/t0_train")


# The README's read of t0_train through seqio, run with T5X's in one process (conftest).
T0_TRAIN_READ = next(s for s in README_SNIPPETS
                     if s.kind == "python" and 'get_dataset("t0_train"' in s.code)
