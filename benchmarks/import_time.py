"""Wall time of `import p3data.tasks` (T0's) and of `import p3data.xp3` (xP3's and xP3mt's),
each after `import seqio`, in fresh processes (median of 5).

T0's own module took 199 s online (8 s offline) because it asked the Hub for every task's
splits at import. Targets: under 2 s (T0), under 4 s (xP3, its template sets installed:
`p3data templates install xp3`, `... xp3mt`; installed before the parse index existed, the
4,479 prompt folders' YAML is parsed at each import: install again to add it).

    .venv/bin/python benchmarks/import_time.py
"""

from __future__ import annotations

import statistics
import subprocess
import sys

PROBE = """
import time
t = time.perf_counter(); import seqio; seqio_s = time.perf_counter() - t
t = time.perf_counter(); import {module}; module_s = time.perf_counter() - t
print(seqio_s, module_s, len(seqio.TaskRegistry.names()), len(seqio.MixtureRegistry.names()))
"""
MODULES = {  # module -> (target in seconds, what it registers)
    "p3data.tasks": (2.0, "T0's and their few-shot variants"),
    "p3data.xp3": (4.0, "xP3's and xP3mt's"),
}


def timed(module: str, runs: int = 5) -> tuple[float, float, int, int]:
    """Median seconds of `import seqio`, then of `import module`; tasks and mixtures."""
    found = []
    for _ in range(runs):
        done = subprocess.run([sys.executable, "-c", PROBE.format(module=module)],
                              capture_output=True, text=True)
        if done.returncode != 0:
            sys.exit(f"import {module} failed: {done.stderr.strip().splitlines()[-1]}")
        out = done.stdout.split()
        found.append((float(out[0]), float(out[1]), int(out[2]), int(out[3])))
    return (statistics.median(r[0] for r in found), statistics.median(r[1] for r in found),
            found[0][2], found[0][3])


def main() -> None:
    for module, (target, whose) in MODULES.items():
        seqio_s, module_s, tasks, mixtures = timed(module)
        print(f"import seqio:                {seqio_s:6.2f} s (median of 5)")
        print(f"then import {module + ':':16}{module_s:6.2f} s ({tasks:,} tasks, {mixtures} "
              f"mixtures: {whose}); target < {target:g} s: "
              f"{'met' if module_s < target else 'MISSED'}")


if __name__ == "__main__":
    main()
