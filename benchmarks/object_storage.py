"""`p3data cache` into gs:// against fake-gcs-server on 127.0.0.1, vs the same build on local
disk: T0's 74 super_glue rte/cb/copa tasks from the bundled samples, with the vocabulary and
Beam's temp_location on gs:// too.

    .venv/bin/python benchmarks/object_storage.py [--runs 3] [--shard-format arrayrecord]

The runs alternate, local then gs://, so the machine's load hits both alike; each gs:// run
gets a newly started server and a new bucket (fake-gcs-server's memory backend scans a
bucket's objects on every request, so runs into one bucket would measure the server). Per
run: wall, the command's CPU-seconds, and for gs:// the server's CPU-seconds (it shares the
machine) and the requests it answered; then the median walls, their ratio and the ratio run
by run. The load average is printed before every pair.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from helpers.cache import P3DATA, t0_only  # noqa: E402
from helpers.gcs import GcsServer  # noqa: E402

from p3data import fs  # noqa: E402
from p3data.vocab import SAMPLE_VOCAB  # noqa: E402

SELECTION = t0_only("super_glue_(rte|cb|copa)_.*")
TASKS = 74
BUILD = ["cache", "--samples", "--tasks", SELECTION, "--progress-every", "600"]


def timed(command: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds of a command, which must succeed."""
    start = time.monotonic()
    process = subprocess.Popen(command, env={**env, "TF_CPP_MIN_LOG_LEVEL": "2"},
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    output = process.stdout.read()
    _, status, usage = os.wait4(process.pid, 0)
    if status:
        raise SystemExit(output.decode()[-3000:])
    return time.monotonic() - start, usage.ru_utime + usage.ru_stime


def local_build(options: list[str]) -> float:
    with tempfile.TemporaryDirectory(prefix="p3data-bench-") as folder:
        wall, cpu = timed([P3DATA, *BUILD, *options, "--vocab", str(SAMPLE_VOCAB),
                           "--output-dir", f"{folder}/cache"], dict(os.environ))
    print(f"local  wall {wall:5.1f} s  CPU {cpu:4.1f} s", flush=True)
    return wall


def gs_build(options: list[str]) -> float:
    with tempfile.TemporaryDirectory(prefix="p3data-bench-gcs-") as folder:
        server = GcsServer(Path(folder))
        server.start()
        try:
            os.environ.update(server.environment)
            bucket = server.create_bucket("bench")
            fs.write_bytes(f"{bucket}/vocab/{SAMPLE_VOCAB.name}", SAMPLE_VOCAB.read_bytes())
            with server.counting() as count:
                wall, cpu = timed([P3DATA, *BUILD, *options, "--vocab",
                                   f"{bucket}/vocab/{SAMPLE_VOCAB.name}", "--output-dir",
                                   f"{bucket}/cache", f"--temp_location={bucket}/beam-temp"],
                                  dict(os.environ))
            server_cpu = _cpu_seconds(server)
        finally:
            server.stop()
    methods = Counter(request.method for request in count.requests)
    print(f"gs://  wall {wall:5.1f} s  CPU {cpu:4.1f} s  server CPU {server_cpu:4.1f} s  "
          f"{count.total:,} requests ({count.total / TASKS:.1f} a task; "
          f"{', '.join(f'{n:,} {m}' for m, n in sorted(methods.items()))})", flush=True)
    return wall


def _cpu_seconds(server: GcsServer) -> float:
    """The server process's CPU time so far (Linux)."""
    fields = Path(f"/proc/{server._process.pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--shard-format", choices=("tfrecord", "arrayrecord"),
                        default="tfrecord")
    args = parser.parse_args()
    runs, options = args.runs, ["--shard-format", args.shard_format]
    local, remote = [], []
    for _ in range(runs):
        print("load average: " + " ".join(f"{x:.1f}" for x in os.getloadavg()), flush=True)
        local.append(local_build(options))
        remote.append(gs_build(options))
    ratio = statistics.median(remote) / statistics.median(local)
    print(f"median wall: local {statistics.median(local):.1f} s, gs:// "
          f"{statistics.median(remote):.1f} s: {ratio:.2f}x; run by run: "
          + ", ".join(f"{g / w:.2f}x" for g, w in zip(remote, local, strict=True)))


if __name__ == "__main__":
    main()
