"""Fixtures shared by the test modules (helpers to import are in `helpers/`)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from p3data.datasets.samples import SAMPLES_DIR
from p3data.datasets.stores import ENV_DATA_DIR
from p3data.vocab import ENV_VOCAB, SAMPLE_VOCAB, set_vocabulary

# No test, and no process a test starts, probes GCE's metadata server (169.254.169.254):
# google-auth reads this once, as it is imported, so it is set before anything imports it
# (the command server's Beam does, before any test's GCS environment is in place).
os.environ["NO_GCE_CHECK"] = "true"

# The tiers (docs/testing.md): a test that uses one of these fixtures carries its marker, and
# every test marked `env`, `trainer`, `crash`, `server` or `stock` is `slow` (`make test-fast`
# skips them).
FIXTURE_MARKERS = {
    "demo_cache": "trainer",  # the whole t0_train mixture, built for the tests that train on it
    "worker_venv": "env", "wheel_venv": "env", "mesh_tf_env": "env",  # from PyPI
    "gcs_server": "server",
    "p3data_wheel": "env",
    "stock_seqio_cache": "stock",  # p3data's wheel, built by pip from a copy of the checkout
}
SLOW_MARKERS = ("env", "trainer", "crash", "server", "stock", "collection")
# The units xdist hands its workers (`--dist loadgroup`): the tests that share an expensive
# session fixture, which the worker that runs them builds once; else a module's tests, so that
# its module-scoped fixtures (a cache most of its tests read) are built once, not on each worker.
# The slow units go first, so that neither worker is left with one at the end.
FIXTURE_GROUPS = ("worker_venv", "wheel_venv", "mesh_tf_env", "demo_cache", "stock_seqio_cache")


# First of all hooks: pytest's `-m` selection and xdist's `--dist loadgroup` read these markers.
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        for fixture, marker in FIXTURE_MARKERS.items():
            if fixture in item.fixturenames:
                item.add_marker(marker)
        if any(item.get_closest_marker(marker) for marker in SLOW_MARKERS):
            item.add_marker("slow")
        if not item.get_closest_marker("xdist_group"):
            group = next((f for f in FIXTURE_GROUPS if f in item.fixturenames), None)
            item.add_marker(pytest.mark.xdist_group(group or item.module.__name__))
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)  # stable


def pytest_xdist_node_collection_finished(node, ids: list[str]) -> None:
    """xdist's loadgroup names a grouped test `<id>@<group>`, and every test here has a group:
    a test without it would run on any worker, as every test does under a pytest that ignores
    the name xdist sets."""
    if node.config.getoption("dist") == "loadgroup" and ids and "@" not in ids[0]:
        pytest.exit(f"xdist did not group {ids[0]}: this pytest and pytest-xdist do not work "
                    "together (constraints.txt pins both)", returncode=4)


@pytest.fixture
def template_dir(tmp_path: Path) -> Path:
    return tmp_path / "templates"


@pytest.fixture(scope="session")
def t0_tasks():
    """T0's tasks and mixtures registered in seqio with their few-shot variants, once a session
    (registering reads no data and loads no vocabulary): T0's part of `p3data.tasks.DEFINITIONS`."""
    import p3data.tasks

    return p3data.tasks.DEFINITIONS.part("t0")


@pytest.fixture(scope="session")
def taskset(t0_tasks):
    """Every task and mixture `import p3data.tasks` registers, as the task set it registers:
    `p3data.tasks.DEFINITIONS`."""
    import p3data.tasks

    return p3data.tasks.DEFINITIONS


@pytest.fixture(scope="module")
def samples_in_seqio(t0_tasks):
    """For one module's tests, seqio reads the registered tasks' rows from the bundled samples
    and tokenizes them with the sample vocabulary; both are undone after the module."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(ENV_DATA_DIR, str(SAMPLES_DIR))
        set_vocabulary(SAMPLE_VOCAB)
        try:
            yield t0_tasks
        finally:
            set_vocabulary(None)


@pytest.fixture(scope="session")
def gcs_server(tmp_path_factory):
    """A GCS-compatible server on 127.0.0.1 (fake-gcs-server, in memory) for the session, and
    the environment that sends gcsfs and google-cloud-storage to it and nowhere else
    (`helpers.gcs`); stopped at the end."""
    from helpers.gcs import GcsServer

    server = GcsServer(tmp_path_factory.mktemp("gcs"))
    server.start()
    try:
        with pytest.MonkeyPatch.context() as patch:
            for name, value in server.environment.items():
                patch.setenv(name, value)
            yield server
    finally:
        server.stop()


@pytest.fixture
def bucket(gcs_server, request) -> str:
    """A new empty bucket on the session's server, named after the test: `gs://<name>`."""
    name = re.sub(r"[^a-z0-9]+", "-", request.node.name.lower()).strip("-")[:50]
    return gcs_server.create_bucket(f"{name}-{uuid.uuid4().hex[:8]}")


@pytest.fixture(scope="session")
def p3data_wheel(tmp_path_factory) -> Path:
    """p3data's wheel as `pip wheel` builds it from this checkout, once a session (per worker)."""
    from helpers.venvs import build_p3data_wheel

    return build_p3data_wheel(tmp_path_factory.mktemp("p3data_wheel"))


@pytest.fixture(scope="session")
def demo_cache(tmp_path_factory) -> Path:
    """What `make demo` builds: the whole t0_train mixture (313 tasks) from the bundled samples
    with the sample vocabulary, once a session, for the tests that train on it."""
    from helpers.cache import run_cache

    out = tmp_path_factory.mktemp("demo") / "t0_train"
    run_cache(out, "--mixture", "t0_train", "--direct_num_workers=2",
              "--direct_running_mode=multi_processing")
    return out


# What the stock tool caches for the tests that compare with it (test_tasks, test_fewshot_cache,
# test_index): T0's tasks and twins, and few-shot variants of each kind.
STOCK_TASKS = ("super_glue_copa_exercise", "super_glue_copa_exercise_score_eval",
               "anli_GPT_3_style_r1", "super_glue_rte_GPT_3_style",
               "super_glue_rte_GPT_3_style_5shot", "super_glue_copa_exercise_score_eval_0shot",
               "story_cloze_2016_Answer_Given_options_score_eval_1shot")


# What p3data runs for the DirectRunner: Beam's own tries its Prism runner first, downloading it
# from GitHub (`pipelines.options`), which the tests never ask the network for.
FN_API_RUNNER = "apache_beam.runners.portability.fn_api_runner.FnApiRunner"


@pytest.fixture(scope="session")
def stock_seqio_cache(tmp_path_factory) -> Path:
    """`seqio_cache_tasks --module_import=p3data.tasks`, the stock command line, on the bundled
    samples with the sample vocabulary, in two shards a split, on the runner p3data runs for
    the DirectRunner: once a session (a Beam job of its own in a fresh Python that imports
    seqio). Read it; copy what a test changes."""
    out = tmp_path_factory.mktemp("stock_seqio_cache")
    env = {**os.environ, ENV_DATA_DIR: str(SAMPLES_DIR), ENV_VOCAB: str(SAMPLE_VOCAB)}
    command = [str(Path(sys.executable).with_name("seqio_cache_tasks")),
               "--module_import=p3data.tasks", f"--output_cache_dir={out}", "--min_shards=2",
               "--tasks=" + ",".join(STOCK_TASKS), f"--pipeline_options=--runner={FN_API_RUNNER}"]
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=1200)
    assert result.returncode == 0, result.stderr[-3000:]
    return out


@pytest.fixture(scope="session")
def t0_train_reads(demo_cache, tmp_path_factory) -> dict[str, str]:
    """The README's read of t0_train through seqio, then T5X's packed batches of it, in one
    fresh Python (`helpers.seqio_probes`): what each printed."""
    from helpers.doc_snippets import T0_TRAIN_READ, as_run, make_workdir, snippet_env
    from helpers.seqio_probes import T5X_PACKED_READ, run_probes

    workdir = make_workdir(tmp_path_factory.mktemp("t0_train_reads"), demo_cache)
    return run_probes({"readme": as_run(T0_TRAIN_READ), "t5x": T5X_PACKED_READ},
                      cwd=workdir, env=snippet_env())


@pytest.fixture(scope="session")
def worker_venv(tmp_path_factory, p3data_wheel):
    """A remote worker's environment, once a session: Beam's SDK with its GCP extra (what
    Dataflow's worker container holds) and, as Dataflow's workers install it, the wheel a
    Dataflow submission stages (`helpers.venvs.staged_wheel`), under the pinned stack."""
    from helpers.venvs import ROOT, make_venv, staged_wheel

    tmp = tmp_path_factory.mktemp("worker")
    wheel = staged_wheel(tmp / "staging", p3data_wheel)
    venv = make_venv(tmp / "venv", "-c", ROOT / "constraints.txt",
                     "apache-beam[gcp]", wheel)
    print(f"\nworkers' environment (Beam, p3data's staged wheel) installed in "
          f"{venv.install_seconds:.0f} s")
    return venv, wheel


@pytest.fixture(scope="session")
def xp3_templates(tmp_path_factory, worker_id) -> dict[str, Path]:
    """Both of xP3's template sets installed from the fork's archives once a run, by whichever
    xdist worker asks first (some 10 s of CPU), in the run's folder the workers share: set
    name -> its templates/ folder. Read them; copy what a test changes."""
    import fcntl

    from helpers.template_sets import shared_archive

    from p3data.templates.install import TEMPLATE_SETS, install, installed

    run_folder = tmp_path_factory.getbasetemp()
    if worker_id != "master":  # each worker's folder is in the run's
        run_folder = run_folder.parent
    home = run_folder / "xp3_home"
    with open(run_folder / "xp3_home.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # the other worker waits for the install
        if not (run_folder / "xp3_home.done").exists():
            for name, spec in TEMPLATE_SETS.items():
                install(name, archive=shared_archive(spec), home=home)
            (run_folder / "xp3_home.done").touch()
    return {name: installed(name, home=home) for name in TEMPLATE_SETS}


@pytest.fixture(scope="session")
def xp3_home(xp3_templates) -> Path:
    """The P3DATA_HOME both of xP3's template sets are installed in."""
    return xp3_templates["xp3"].parents[2]  # <home>/templates/<set>-<commit>/templates
