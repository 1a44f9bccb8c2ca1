"""Dataflow without a checkout: which runs are remote and what they refuse, p3data staging
itself as a wheel (the same files `pip wheel` builds, requiring the builder's stack), and the
job graph of every task, measured against Dataflow's 10 MB limit. The staged wheel's workers
build tasks in test_share_nothing.py."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import math
import os
import subprocess
import threading
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from helpers.cache import P3DATA

from p3data import __version__, fs
from p3data.builder.jobs import CacheConfig, CachePlan, WorkUnit
from p3data.builder.planning import build_plan
from p3data.builder.shipping import ship
from p3data.datasets.samples import SAMPLES_DIR
from p3data.datasets.shards import ROWS_PER_SHARD
from p3data.format.shard_format import SHARD_FORMATS
from p3data.staging import build_wheel, worker_requirements
from p3data.taskset import load_definitions
from p3data.vocab import SAMPLE_VOCAB

DATAFLOW = ["--runner=DataflowRunner", "--project=p3data-test", "--region=us-central1"]
T5_MODEL_BYTES = 791_656  # gs://t5-data/vocabs/cc_all.32000/sentencepiece.model
DATAFLOW_LIMIT = 10 * 1024 * 1024


def _pipeline(*args: str):
    from p3data.pipelines.options import beam_pipeline

    return beam_pipeline(list(args))


@pytest.mark.parametrize(("args", "remote"), [
    ([], None),
    (["--runner=DirectRunner", "--direct_running_mode=multi_processing"], None),
    (["--runner=PortableRunner", "--environment_type=LOOPBACK"], None),
    (["--runner=PrismRunner"], None),
    (["--runner=DaskRunner"], None),
    (["--runner=PortableRunner"], "PortableRunner's workers (--environment_type=DOCKER)"),
    (["--runner=PortableRunner", "--environment_type=EXTERNAL", "--environment_config=h:1"],
     "PortableRunner's workers (--environment_type=EXTERNAL)"),
    (["--runner=FlinkRunner", "--environment_type=PROCESS",
      "--environment_options=process_command=boot"],
     "FlinkRunner's workers (--environment_type=PROCESS)"),
    (["--runner=PrismRunner", "--environment_type=DOCKER"],
     "PrismRunner's workers (--environment_type=DOCKER)"),
])
def test_which_runs_are_remote(args, remote):
    from p3data.pipelines.workers import remote_workers

    assert remote_workers(_pipeline(*args)) == remote


def test_dataflow_stages_p3data_unless_the_job_brings_its_own(gcs_server, bucket, tmp_path):
    from apache_beam.options.pipeline_options import SetupOptions

    from p3data.pipelines.workers import stage_p3data

    dataflow = [*DATAFLOW, f"--temp_location={bucket}/tmp"]
    pipeline = _pipeline(*dataflow)
    wheel = stage_p3data(pipeline, tmp_path)
    assert wheel is not None and wheel.name.startswith("p3data-")
    assert pipeline.options.view_as(SetupOptions).extra_packages == [str(wheel)]
    for own in ("--setup_file=./setup.py", "--extra_package=mine.whl",
                "--sdk_container_image=gcr.io/p/image"):
        assert stage_p3data(_pipeline(*dataflow, own), tmp_path / "other") is None
    assert stage_p3data(_pipeline("--runner=PortableRunner"), tmp_path / "other") is None


def test_the_staged_wheel_holds_what_pip_wheel_builds_and_the_builders_requirements(
        tmp_path, p3data_wheel):
    """From this checkout's editable install: the same files, byte for byte, as the wheel pip
    builds from the source; requirements without extras, the builder's among them."""
    built = p3data_wheel.parent
    (staged := tmp_path / "staged").mkdir()
    ours, theirs = (zipfile.ZipFile(next(folder.glob("*.whl")))
                    for folder in (build_wheel(staged).parent, built))

    def package(wheel: zipfile.ZipFile) -> dict[str, bytes]:
        return {n: wheel.read(n) for n in wheel.namelist() if ".dist-info/" not in n}

    assert package(ours) == package(theirs)
    assert len(package(ours)) > 500
    assert ours.testzip() is None
    metadata = ours.read(next(n for n in ours.namelist() if n.endswith("/METADATA"))).decode()
    requires = [line.split(": ", 1)[1] for line in metadata.splitlines()
                if line.startswith("Requires-Dist: ")]
    assert "seqio>=0.0.20" in requires and "gcsfs>=2023.1" in requires
    assert not any("extra" in r or "torch" in r for r in requires)


class DataflowStandIn:
    """Dataflow's job API on 127.0.0.1: keeps each request's path and body and refuses it
    (400), so a job is staged and submitted, and goes nowhere."""

    def __init__(self):
        self.requests: list[tuple[str, bytes]] = []
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # quiet
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                stand_in.requests.append((self.path, body))
                message = json.dumps({"error": {"code": 400, "status": "INVALID_ARGUMENT",
                                                "message": "a stand-in for Dataflow"}}).encode()
                self.send_response(400)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(message)))
                self.end_headers()
                self.wfile.write(message)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        # Beam's options take a localhost endpoint as a local one (no Google checks)
        self.url = f"http://localhost:{self.server.server_address[1]}"

    def __enter__(self) -> DataflowStandIn:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_an_installed_p3data_stages_itself_for_dataflow(worker_venv, gcs_server, bucket,
                                                        tmp_path):
    """From the workers' environment (p3data installed from the staged wheel, no checkout):
    the command says in one line that it stages p3data, Beam uploads to the staging location
    exactly the wheel that environment was installed from, and the job lists it."""
    venv, wheel = worker_venv
    fs.write_files({f"{bucket}/mirror/super_glue/copa/{path.name}": path.read_bytes()
                    for path in (SAMPLES_DIR / "super_glue" / "copa").glob("*.jsonl")})
    with DataflowStandIn() as dataflow:
        result = venv.run(
            venv.bin("p3data"), "cache", "--tasks", "super_glue_copa_exercise",
            "--vocab", SAMPLE_VOCAB, "--data-dir", f"{bucket}/mirror",
            "--output-dir", f"{bucket}/out", *DATAFLOW, f"--temp_location={bucket}/tmp",
            f"--dataflow_endpoint={dataflow.url}", "--no_auth", cwd=tmp_path,
            env=gcs_server.environment)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.splitlines()[-1].startswith(
        "p3data: error: DataflowRunner refused the job: 400 POST ")
    assert result.stderr.splitlines()[-1].endswith(": a stand-in for Dataflow")
    assert [line for line in result.stderr.splitlines() if "staging" in line] == [
        f"[p3data cache] staging p3data {__version__} for Dataflow's workers: {wheel.name} "
        "(--extra_package; --setup_file, --extra_package or --sdk_container_image stage your "
        "own instead)"]
    [staged] = fs.glob(f"{bucket}/tmp/*/{wheel.name}")
    assert fs.read_bytes(staged) == wheel.read_bytes()
    [(path, body)] = dataflow.requests
    assert path.startswith("/v1b3/projects/p3data-test/locations/us-central1/jobs")
    job = json.loads(body)
    assert wheel.name in [package["name"] for pool in job["environment"]["workerPools"]
                          for package in pool["packages"]]
    print(f"\nDataflow job request: {len(body):,} bytes (the pipeline proto is staged beside "
          "the wheel, as pipeline.pb)")


@pytest.mark.skipif(importlib.util.find_spec("google.cloud.dataflow") is not None,
                    reason="Beam's GCP packages are installed here (make test's .venv has none)")
def test_dataflow_without_beams_gcp_packages_is_refused_before_anything(gcs_server, bucket,
                                                                        tmp_path):
    """Beam would import its Dataflow client only to submit, after planning and withdrawing."""
    fs.write_files({f"{bucket}/mirror/super_glue/copa/{path.name}": path.read_bytes()
                    for path in (SAMPLES_DIR / "super_glue" / "copa").glob("*.jsonl")})
    result = subprocess.run(
        [P3DATA, "cache", "--tasks", "super_glue_copa_exercise", "--vocab", str(SAMPLE_VOCAB),
         "--data-dir", f"{bucket}/mirror", "--output-dir", f"{bucket}/out", *DATAFLOW,
         f"--temp_location={bucket}/tmp"], capture_output=True, text=True, cwd=tmp_path,
        env={**os.environ})
    assert result.returncode == 2, result.stderr[-3000:]
    [line] = result.stderr.splitlines()
    assert line.startswith("p3data: error: DataflowRunner needs Beam's GCP packages, which "
                           "p3data's 'gcp' extra installs: pip install 'p3data[gcp]' (")
    assert fs.glob(f"{bucket}/out/**") == [] and list(tmp_path.iterdir()) == []


def test_worker_requirements_keep_the_builders_and_markers_without_extras():
    requires = ["numpy>=1.23", 'gcsfs>=2023.1; extra == "builder"',
                'torch>=2.1; extra == "torch"', 'tomli>=2; python_version < "3.11"',
                'array-record>=0.8; extra == "arrayrecord"']
    assert worker_requirements(requires) == [
        "numpy>=1.23", "gcsfs>=2023.1", 'tomli>=2; python_version < "3.11"']
    assert worker_requirements(requires, ["arrayrecord"]) == [
        "numpy>=1.23", "gcsfs>=2023.1", 'tomli>=2; python_version < "3.11"', "array-record>=0.8"]


def _requires(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as archive:
        metadata = archive.read(next(n for n in archive.namelist()
                                     if n.endswith("/METADATA"))).decode()
    return [line.split(": ", 1)[1] for line in metadata.splitlines()
            if line.startswith("Requires-Dist: ")]


def test_an_arrayrecord_job_stages_array_record_for_its_workers(gcs_server, bucket, tmp_path):
    """ArrayRecord's shards are written by its workers, with array_record: the staged wheel
    requires the arrayrecord extra's packages, unconditionally (workers install no extras);
    a TFRecord job's does not."""
    from p3data.pipelines.workers import stage_p3data

    dataflow = [*DATAFLOW, f"--temp_location={bucket}/tmp"]
    for name in SHARD_FORMATS:
        (tmp_path / name).mkdir()
    wheels = {shard_format.name: stage_p3data(
        _pipeline(*dataflow), tmp_path / shard_format.name,
        extras=[shard_format.extra] if shard_format.extra else [])
        for shard_format in SHARD_FORMATS.values()}
    assert "array-record>=0.8" in _requires(wheels["arrayrecord"])
    assert not any("array" in r for r in _requires(wheels["tfrecord"]))
    assert not any("extra" in r for wheel in wheels.values() for r in _requires(wheel))


@pytest.mark.parametrize(("args", "env", "refused"), [
    ([*DATAFLOW, "--temp_location={bucket}/tmp", "--output-dir", "{bucket}/out", "--samples"],
     {}, f"--samples {SAMPLES_DIR}: only this machine can open it, not DataflowRunner's workers"),
    (["--runner=PortableRunner", "--output-dir", "{bucket}/out"], {"P3DATA_DATA_DIR": "{tmp}"},
     "$P3DATA_DATA_DIR {tmp}: only this machine can open it, not PortableRunner's workers "
     "(--environment_type=DOCKER)"),
    (["--runner=PortableRunner", "--output-dir", "{bucket}/out", "--hub-root", "{tmp}"], {},
     "--hub-root {tmp}: only this machine can open it, not PortableRunner's workers "
     "(--environment_type=DOCKER)"),
    (["--runner=PortableRunner", "--environment_type=EXTERNAL", "--environment_config=h:1",
      "--output-dir", "memory://out", "--samples"], {},
     "--output-dir memory://out: only this machine can open it, not PortableRunner's workers "
     "(--environment_type=EXTERNAL)"),
])
def test_a_remote_run_refuses_paths_only_this_machine_can_open(gcs_server, bucket, tmp_path, *,
                                                               args, env, refused):
    """Before anything is planned or written: one line naming the option and the path."""
    args = [a.format(bucket=bucket, tmp=tmp_path) for a in args]
    env = {k: v.format(tmp=tmp_path) for k, v in env.items()}
    with gcs_server.counting() as requests:
        result = subprocess.run(
            [P3DATA, "cache", "--tasks", "super_glue_copa_exercise", "--vocab",
             str(SAMPLE_VOCAB), *args], capture_output=True, text=True,
            env={**os.environ, **env}, cwd=tmp_path)
    assert result.returncode == 2, result.stderr[-3000:]
    assert result.stderr.strip().splitlines() == [
        f"p3data: error: {refused.format(tmp=tmp_path)}; give one on storage they share, "
        "e.g. gs://"]
    assert list(tmp_path.iterdir()) == []
    assert set(requests.by_method()) <= {"GET"}  # Beam's checks of --temp_location's bucket


def _shipped(plan: CachePlan) -> tuple[int, int]:
    """The pipeline proto Beam would submit for this plan, serialized, and the plan its steps
    read from the work folder: their sizes."""
    import apache_beam as beam

    from p3data.pipelines.cache import build

    pipeline = beam.Pipeline(runner="DirectRunner")
    shipped = ship(plan)
    build(pipeline, plan, shipped)
    return len(pipeline.to_runner_api().SerializeToString()), fs.size(shipped.path)


def _at_p3_scale(plan: CachePlan) -> CachePlan:
    """The plan with each dataset split's source shards, its pools' too, as P3's row counts
    (the catalog's) make them: units of `ROWS_PER_SHARD` rows."""

    def scaled(units: list, where) -> list:
        first = {}  # (dataset, split) -> its entry, and its first unit to copy
        for unit in units:
            entry, split = where(unit)
            first.setdefault((entry.name, split), (entry, split, unit))
        more = []
        for entry, split, unit in first.values():
            rows = entry.splits.get(split) or 1
            count = math.ceil(rows / ROWS_PER_SHARD)
            more += [dataclasses.replace(
                unit, index=i, **({"count": count} if isinstance(unit, WorkUnit) else {}),
                shard=dataclasses.replace(unit.shard, start=i * ROWS_PER_SHARD,
                                          stop=min(rows, (i + 1) * ROWS_PER_SHARD)))
                for i in range(count)]
        return more

    return dataclasses.replace(
        plan, units=scaled(plan.units, lambda unit: (unit.job.entry, unit.job.source_split)),
        pool_units=scaled(plan.pool_units, lambda unit: (unit.entry, unit.split)))


def test_the_job_graph_of_every_task_and_variant_is_far_below_dataflows_limit(tmp_path):
    """All 983 tasks and their 3,932 few-shot variants, every split, planned from the bundled
    samples (no Dataflow contact) with an incompressible model of T5's vocabulary's size;
    then with P3's row counts. The graph carries the units' indices; the plan, the model
    with it, goes once to the work folder."""
    specs = load_definitions().select([], [".*"])
    config = CacheConfig(output_dir=str(tmp_path), vocab_model=os.urandom(T5_MODEL_BYTES),
                         data_dir=str(SAMPLES_DIR))
    plan = build_plan(config, specs)
    assert len(specs) == len(plan.tasks) == 4915 and not plan.failed
    p3 = _at_p3_scale(plan)
    assert len(p3.units) > len(plan.units) and len(p3.pool_units) > len(plan.pool_units)
    sizes = [(each, *_shipped(each)) for each in (plan, p3)]
    for each, graph, shipped in sizes:
        print(f"\njob graph of {len(each.tasks):,} tasks ({each.task_splits:,} task splits, "
              f"{len(each.units):,} + {len(each.pool_units):,} pool source shards): "
              f"{graph / 1e6:.3f} MB; the plan it reads: {shipped / 1e6:.2f} MB")
    assert all(graph < 150_000 < DATAFLOW_LIMIT / 50 for _, graph, _ in sizes)
