"""Several probes that read the demo cache's t0_train mixture through stock seqio, run in one
fresh Python: importing seqio and `p3data.tasks` in a new process, then seqio's pipeline over
the mixture's 313 tasks, are most of a minute for each, and the README's snippet is T5X's
packed read (seqio's `get_dataset` with `use_cached=True`, packed by `EncDecFeatureConverter`).
The probes run in turn in one namespace, as consecutive `python -c` statements would, so a
probe reads what the ones before it defined (T5X's batches come from the README's `ds`); what
each printed is kept apart."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

# T5X's input pipeline is the README's `ds` (seeded: the same rows every run): three batches of
# 4 from it, and how many examples each row packs.
T5X_PACKED_READ = """
import numpy as np
batches = list(ds.batch(4).take(3).as_numpy_iterator())
for batch in batches:
    for name, value in sorted(batch.items()):
        print(name, value.dtype, value.shape)
segments = np.concatenate([b["encoder_segment_ids"] for b in batches])
print("examples per row", segments.max(axis=1).min(), segments.max(axis=1).max())
"""

_RUNNER = """
import contextlib, io, json, sys
probes, outputs, namespace = json.loads(sys.stdin.read()), {}, {"__name__": "__main__"}
for name, code in probes.items():
    with contextlib.redirect_stdout(io.StringIO()) as out:
        exec(compile(code, f"<probe {name}>", "exec"), namespace)
    outputs[name] = out.getvalue()
print(json.dumps(outputs))
"""


def run_probes(probes: dict[str, str], *, cwd: Path, env: dict[str, str]) -> dict[str, str]:
    """Runs each probe's code in turn in one fresh Python in `cwd` with `env`; returns what
    each printed. A probe that raises fails them all, with its
    traceback."""
    result = subprocess.run([sys.executable, "-c", _RUNNER], input=json.dumps(probes),
                            cwd=cwd, env=env, capture_output=True, text=True, timeout=1200)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.splitlines()[-1])
