"""docs/data.md's real-data example run as written, in a fresh folder standing for `/tmp`:
examples/offline_hub.py writes an offline Hub, `p3data fetch` fills a mirror from it, `fetch
--verify` checks it and `p3data cache` builds from it. Each command's output must be the one
the page shows (stdout lines, then the `[p3data ...]` lines of stderr, durations aside)."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

from helpers.command_server import run_p3data

from p3data.vocab import SAMPLE_VOCAB

ROOT = Path(__file__).resolve().parents[1]
HEADING = "Real output, from an offline copy of the Hub"
DURATIONS = re.compile(r"elapsed \d+m\d+s|time: [\d.]+ s")
SETTINGS = ("P3DATA_CATALOG", "P3DATA_DATA_DIR", "P3DATA_HUB_ROOT", "P3DATA_VOCAB",
            "P3DATA_MANUAL_DIR", "P3DATA_TEMPLATE_DIRS")


def shown_commands() -> list[tuple[str, list[str]]]:
    """The example's `$ ` commands with the lines shown after each."""
    text = (ROOT / "docs" / "data.md").read_text()
    block = text[text.index(HEADING):].split("```\n", 2)[1]
    commands = []
    for chunk in block.split("$ ")[1:]:
        command, *output = chunk.rstrip("\n").splitlines()
        commands.append((command, output))
    return commands


def normal(lines: list[str]) -> list[str]:
    return [DURATIONS.sub("DURATION", line) for line in lines]


def test_the_real_data_example_runs_as_shown(tmp_path):
    env = {name: value for name, value in os.environ.items() if name not in SETTINGS}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    commands = shown_commands()
    assert [command.split()[:2] for command, _ in commands] == [
        ["python", "examples/offline_hub.py"], ["p3data", "fetch"], ["p3data", "fetch"],
        ["p3data", "cache"]]
    for command, shown in commands:
        run = command.replace("/tmp/", f"{tmp_path}/").replace(
            "--vocab ...", f"--vocab {SAMPLE_VOCAB}").replace("python ", f"{sys.executable} ")
        if run.startswith("p3data "):  # the command line as bash splits it, in a warm child
            result = run_p3data(shlex.split(run)[1:], env=env, cwd=ROOT, timeout=600)
        else:
            result = subprocess.run(["bash", "-c", run], cwd=ROOT, env=env,
                                    capture_output=True, text=True, timeout=600)
        assert result.returncode == 0, (command, result.stdout, result.stderr[-3000:])
        if not shown:  # the offline Hub's files, which the page does not show
            continue
        expected = [line.replace("/tmp/", f"{tmp_path}/") for line in shown]
        progress = [line for line in result.stderr.splitlines() if line.startswith("[p3data ")]
        assert normal(result.stdout.splitlines()) + normal(progress) == normal(
            [line for line in expected if not line.startswith("[p3data ")]
            + [line for line in expected if line.startswith("[p3data ")]), command
