"""The cache builder on Beam's runners: every runner writes the same bytes, few-shot variants
(their exemplar pools a stage of their own) included."""

from __future__ import annotations

import pytest
from helpers.cache import run_cache, t0_only, tree

T0_TASKS = t0_only("super_glue_copa_exercise.*|anli_GPT_3_style_r2.*|super_glue_rte_GPT_3_style")
TASKS = f"{T0_TASKS}|super_glue_rte_GPT_3_style_3shot|super_glue_copa_exercise_score_eval_1shot"


@pytest.fixture(scope="module")
def in_process(tmp_path_factory):
    out = tmp_path_factory.mktemp("direct")
    run_cache(out, "--tasks", TASKS, "--rows-per-shard", "4")
    return tree(out)


def test_direct_runner_with_two_worker_processes(in_process, tmp_path):
    run_cache(tmp_path, "--tasks", TASKS, "--rows-per-shard", "4", "--direct_num_workers=2",
              "--direct_running_mode=multi_processing")
    assert tree(tmp_path) == in_process


# Python started with this on its path records every host name it looks up that is not this
# machine's, before looking it up.
_LOOKUPS = """
import os, socket
_lookup = socket.getaddrinfo
def getaddrinfo(host, *args, **kwargs):
    if host not in (None, "localhost", "127.0.0.1", "::1", socket.gethostname()):
        with open(os.environ["LOOKUPS_FILE"], "a") as out:
            out.write(f"{host}\\n")
    return _lookup(host, *args, **kwargs)
socket.getaddrinfo = getaddrinfo
"""


@pytest.mark.parametrize("workers", [[], ["--direct_num_workers=2",
                                          "--direct_running_mode=multi_processing"]],
                         ids=["in process", "two worker processes"])
def test_the_direct_runner_looks_up_no_host_beyond_this_machine(in_process, tmp_path, workers):
    """Beam's DirectRunner (2.77) first tries Prism, a binary it downloads from GitHub: p3data
    runs the FnApiRunner it is tested on, online or not, and asks the network for nothing."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(_LOOKUPS)
    lookups = tmp_path / "lookups.txt"
    env = {"PYTHONPATH": str(site), "LOOKUPS_FILE": str(lookups)}
    result = run_cache(tmp_path / "out", "--tasks", TASKS, "--rows-per-shard", "4", *workers,
                       env=env)
    assert "Prism" not in result.stderr
    assert not lookups.exists(), lookups.read_text()
    assert tree(tmp_path / "out") == in_process


def test_portable_runner_with_embedded_job_server(in_process, tmp_path):
    run_cache(tmp_path, "--tasks", TASKS, "--rows-per-shard", "4", "--runner=PortableRunner",
              "--job_endpoint=embed", "--environment_type=LOOPBACK")
    assert tree(tmp_path) == in_process


@pytest.mark.server  # a Dask scheduler and its workers on 127.0.0.1
def test_dask_cluster_with_two_worker_processes(in_process, tmp_path):
    from distributed import LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=None) as cluster:
        assert len(cluster.workers) == 2
        run_cache(tmp_path, "--tasks", TASKS, "--rows-per-shard", "4", "--runner=DaskRunner",
                  f"--dask_client_address={cluster.scheduler_address}")
    assert tree(tmp_path) == in_process


def test_steps_carry_where_the_plan_is_and_a_process_reads_it_once(tmp_path):
    """Beam pickles every step into the job (compressed, then base64): each carries the path
    of the plan the driver shipped to the work folder, not the model, the tasks or the units;
    set up, every step has that plan, read once per process."""
    from apache_beam.internal import pickler

    from p3data import fs
    from p3data.builder.jobs import CacheConfig
    from p3data.builder.planning import build_plan
    from p3data.builder.shipping import ship
    from p3data.datasets.samples import SAMPLES_DIR
    from p3data.pipelines import cache
    from p3data.taskset import load_definitions
    from p3data.vocab import SAMPLE_VOCAB

    config = CacheConfig(output_dir=str(tmp_path), vocab_model=SAMPLE_VOCAB.read_bytes(),
                         data_dir=str(SAMPLES_DIR))
    plan = build_plan(config, load_definitions().select([], [TASKS]))
    assert plan.units and plan.pool_units and len(config.vocab_model) > 200_000
    shipped = ship(plan)
    steps = [cache.BuildPoolParts, cache.MergePool, cache.RenderShard, cache.TriageSplit,
             cache.DealPart, cache.WriteShard, cache.FinishSplit, cache.CompleteTask]
    payloads = [pickler.dumps(step(shipped)) for step in steps]
    assert max(len(payload) for payload in payloads) < 3_000
    received = []
    for payload in payloads:
        step = pickler.loads(payload)
        step.setup()
        received.append(step.plan)
        if len(received) == 1:
            fs.delete([shipped.path])  # read by the first step only: the others have it
    assert received[0] == plan and all(each is received[0] for each in received)
