"""Workers that share nothing with the driver but the job and the bucket.

Beam's job service and an external worker pool run as processes of their own, in a clean
environment holding Beam and the wheel a Dataflow submission stages (`worker_venv`), started
in a folder outside the checkout, without the driver's P3DATA_* settings. The driver builds
bundled datasets and a user's own dataset, whose templates, catalog entry and vocabulary exist
only on the driver's disk; rows and output are on a GCS-compatible server on 127.0.0.1, which
both sides reach (as Dataflow's workers reach GCS). The result is the DirectRunner's, byte for
byte. A path that only the driver's machine can open is refused before the job starts.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.cache import copy_samples, tree
from helpers.command_server import run_p3data
from helpers.templates import template_entry, write_templates

from p3data import fs
from p3data.vocab import SAMPLE_VOCAB

pytestmark = pytest.mark.usefixtures("gcs_server")

BUNDLED = [("super_glue", "copa"), ("anli", None), ("super_glue", "rte")]
TASKS = "super_glue_copa_exercise.*|anli_GPT_3_style_r2.*|super_glue_rte_GPT_3_style|my_reviews_.*"
USER_CATALOG = """
- dataset: my_reviews
  subset: v1
  splits: {train: 4, validation: 2}
  features: {text: string, label: {class_label: [bad, good]}}
"""


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _wait_for(port: int, process: subprocess.Popen, log: Path) -> None:
    """Until the process accepts connections on 127.0.0.1:port (it dies: the test fails)."""
    while True:
        assert process.poll() is None, log.read_text()[-3000:]
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
            return
        time.sleep(0.1)


@pytest.fixture
def remote_workers(worker_venv, tmp_path) -> Iterator[tuple[list[str], Path]]:
    """Beam's job service and an external worker pool, each a process of the workers'
    environment, started outside the checkout: the driver's Beam options that use them, and
    the folder they run in (with their logs). Both are stopped at the end, whatever
    happened."""
    venv, _ = worker_venv
    home = tmp_path / "workers"
    home.mkdir()
    job_port, pool_port = _free_port(), _free_port()
    commands = {
        "job-service": ["apache_beam.runners.portability.local_job_service_main",
                        f"--port={job_port}"],
        "worker-pool": ["apache_beam.runners.worker.worker_pool_main",
                        f"--service_port={pool_port}"]}
    started: list[subprocess.Popen] = []
    try:
        for (name, command), port in zip(commands.items(), (job_port, pool_port), strict=True):
            log = home / f"{name}.log"
            with log.open("wb") as out:
                started.append(subprocess.Popen(
                    [str(venv.python), "-m", *command], cwd=home, env=venv.environment(),
                    stdout=out, stderr=subprocess.STDOUT))
            _wait_for(port, started[-1], log)
        yield (["--runner=PortableRunner", f"--job_endpoint=127.0.0.1:{job_port}",
                "--environment_type=EXTERNAL", f"--environment_config=127.0.0.1:{pool_port}"],
               home)
    finally:
        for process in started:
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


@pytest.fixture
def driver_only(tmp_path, bucket) -> dict[str, str]:
    """The driver's settings: a template folder, a catalog and a vocabulary that exist only on
    its disk, and a mirror (the bundled samples of three datasets and the user's rows) on the
    bucket, set by $P3DATA_DATA_DIR."""
    driver = tmp_path / "driver"
    templates = driver / "templates"
    write_templates(templates, "my_reviews", "v1", template_entry(
        "my-1", "Is it good?", "{{ text }} Is it good? ||| {{ answer_choices[label] }}",
        answer_choices="no ||| yes") + template_entry("my-2", "Echo", "{{ text }} ||| {{ text }}"))
    (driver / "catalog.yaml").write_text(USER_CATALOG)
    shutil.copyfile(SAMPLE_VOCAB, driver / "vocab.model")
    local = driver / "mirror"
    for dataset, subset in BUNDLED:
        copy_samples(local, dataset, subset)
    reviews = local / "my_reviews" / "v1"
    reviews.mkdir(parents=True)
    for split, count in (("train", 4), ("validation", 2)):
        rows = [{"text": f"{split} review {i}", "label": i % 2} for i in range(count)]
        (reviews / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    mirror = f"{bucket}/mirror"
    fs.write_files({fs.join(mirror, p.relative_to(local).as_posix()): p.read_bytes()
                    for p in local.rglob("*.jsonl")})
    return {"P3DATA_TEMPLATE_DIRS": str(templates), "P3DATA_CATALOG": str(driver / "catalog.yaml"),
            "P3DATA_VOCAB": str(driver / "vocab.model"), "P3DATA_DATA_DIR": mirror}


def _cache(output: str, env: dict[str, str], *beam_args: str) -> subprocess.CompletedProcess:
    return run_p3data(["cache", "--output-dir", output, "--tasks", TASKS, "--rows-per-shard", "4",
                       *beam_args], timeout=1800, env={**os.environ, **env})


def _download(url: str, target: Path) -> Path:
    filesystem, path = fs.resolve(url)
    filesystem.get(path + "/", str(target), recursive=True)
    return target


def test_workers_with_only_the_staged_package_build_the_direct_runners_bytes(
        remote_workers, worker_venv, driver_only, bucket, *, tmp_path):
    options, home = remote_workers
    venv, _ = worker_venv
    where = venv.run(venv.python, "-c", "import p3data; print(p3data.__file__)", cwd=home)
    assert where.stdout.startswith(str(venv.root / "lib")), where.stderr[-2000:]
    direct = _cache(str(tmp_path / "direct"), driver_only)
    assert direct.returncode == 0, direct.stderr[-3000:]
    reference = tree(tmp_path / "direct")
    completed = {name.split("/")[0] for name in reference if name.endswith("/COMPLETED")}
    assert {"super_glue_copa_exercise", "anli_GPT_3_style_r2", "super_glue_rte_GPT_3_style",
            "my_reviews_v1_Echo", "my_reviews_v1_Is_it_good__score_eval"} <= completed

    remote = _cache(f"{bucket}/portable", driver_only, *options)
    assert remote.returncode == 0, remote.stderr[-3000:] + remote.stdout[-2000:]
    assert "Starting worker with command" in (home / "worker-pool.log").read_text()
    assert tree(_download(f"{bucket}/portable", tmp_path / "portable")) == reference


def test_paths_only_the_driver_can_open_are_refused_before_the_job_starts(
        remote_workers, driver_only, tmp_path):
    """The workers exist and answer, and still nothing is sent to them: a local output folder,
    or a local mirror, is one line, exit 2, and nothing written."""
    out = tmp_path / "out"
    refused = _cache(str(out), driver_only, *remote_workers[0])
    assert refused.returncode == 2
    assert refused.stderr.strip().splitlines() == [
        f"p3data: error: --output-dir {out}: only this machine can open it, not "
        "PortableRunner's workers (--environment_type=EXTERNAL); give one on storage they "
        "share, e.g. gs://"]
    assert not out.exists()
