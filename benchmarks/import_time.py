"""Wall time of `import p3data.tasks` after `import seqio`, in fresh processes (median of 5).

T0's own module took 199 s online (8 s offline) because it asked the Hub for every task's
splits at import. Target: under 2 s.

    .venv/bin/python benchmarks/import_time.py
"""

from __future__ import annotations

import statistics
import subprocess
import sys

PROBE = """
import time
t = time.perf_counter(); import seqio; seqio_s = time.perf_counter() - t
t = time.perf_counter(); import p3data.tasks; tasks_s = time.perf_counter() - t
print(seqio_s, tasks_s, len(seqio.TaskRegistry.names()), len(seqio.MixtureRegistry.names()))
"""


def main() -> None:
    runs = []
    for _ in range(5):
        out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                             check=True).stdout.split()
        runs.append((float(out[0]), float(out[1]), int(out[2]), int(out[3])))
    seqio_s = statistics.median(r[0] for r in runs)
    tasks_s = statistics.median(r[1] for r in runs)
    print(f"import seqio:               {seqio_s:6.2f} s (median of {len(runs)})")
    print(f"then import p3data.tasks:   {tasks_s:6.2f} s ({runs[0][2]:,} tasks, {runs[0][3]} "
          "mixtures: T0's and their few-shot variants)")
    print(f"target < 2 s: {'met' if tasks_s < 2 else 'MISSED'}")


if __name__ == "__main__":
    main()
