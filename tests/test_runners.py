"""The cache builder on Beam's runners: every runner writes the same bytes, few-shot variants
(their exemplar pools a stage of their own) included."""

from __future__ import annotations

import hashlib

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


def test_portable_runner_with_embedded_job_server(in_process, tmp_path):
    run_cache(tmp_path, "--tasks", TASKS, "--rows-per-shard", "4", "--runner=PortableRunner",
              "--job_endpoint=embed", "--environment_type=LOOPBACK")
    assert tree(tmp_path) == in_process


def test_dask_cluster_with_two_worker_processes(in_process, tmp_path):
    from distributed import LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=None) as cluster:
        assert len(cluster.workers) == 2
        run_cache(tmp_path, "--tasks", TASKS, "--rows-per-shard", "4", "--runner=DaskRunner",
                  f"--dask_client_address={cluster.scheduler_address}")
    assert tree(tmp_path) == in_process


def test_only_the_tokenizing_step_ships_the_model(tmp_path):
    """Beam pickles (and compresses) every step's settings more than once: the model goes with
    the step that tokenizes only; the others carry its digest, which the manifest records."""
    from apache_beam.internal import pickler
    from p3data.pipelines.cache import CompleteTask, PlanSplit, RenderShard

    from p3data.builder.plan import CacheConfig
    from p3data.vocab import SAMPLE_VOCAB

    model = SAMPLE_VOCAB.read_bytes()
    config = CacheConfig(output_dir=str(tmp_path), vocab_model=model)
    assert pickler.loads(pickler.dumps(RenderShard(config))).config.vocab_model == model
    for step in (PlanSplit(config, {}), CompleteTask(config, {})):
        shipped = pickler.loads(pickler.dumps(step)).config
        assert shipped.vocab_model == b""
        assert shipped.vocab_sha256 == hashlib.sha256(model).hexdigest()
        assert shipped.without_model() == shipped
