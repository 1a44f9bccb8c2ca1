"""TRL's SFTTrainer trains a tiny decoder-only model (examples/trl_sft.py) on the demo cache's
t0_train exported in both TRL shapes, as docs/training.md runs it: its commands, run as
written, print what the page shows, and the loss falls."""

from __future__ import annotations

import re
import subprocess

from helpers.doc_snippets import TRL_SNIPPETS, as_run, make_workdir, matches, snippet_env

LOSSES = re.compile(r"mean of the first 5 ([\d.]+), of the last 5 ([\d.]+)$")


def test_sft_trains_on_both_shapes_as_the_page_says(demo_cache, tmp_path):
    workdir = make_workdir(tmp_path, demo_cache)
    env = {**snippet_env(), "OMP_NUM_THREADS": "1"}  # a second thread spins on 2 shared cores
    losses = {}
    for snippet in TRL_SNIPPETS:
        result = subprocess.run(["bash", "-c", as_run(snippet)], cwd=workdir, env=env,
                                capture_output=True, text=True, timeout=900)
        assert result.returncode == 0, result.stderr[-3000:]
        got = result.stdout.rstrip("\n").splitlines()
        assert matches(snippet.expected, got), "\n".join(got)
        if "trl_sft.py" in snippet.code:
            shape = got[-2].split(":")[0]
            first, last = map(float, LOSSES.search(got[-1]).groups())
            losses[shape] = first, last
    assert set(losses) == {"prompt-completion", "messages"}
    assert all(last < first - 0.5 for first, last in losses.values()), losses
