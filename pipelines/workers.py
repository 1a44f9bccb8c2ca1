"""Where a job's workers run, and what they get from the driver.

A run is local when its workers are this machine's processes, started by the runner from the
driver, seeing the driver's files: the Direct runners, FnApiRunner, Dask, and portable
runners (PortableRunner, Prism, Flink, Spark) in the LOOPBACK environment (Prism's default).
Every other run is remote: DataflowRunner's, and a portable runner's in a DOCKER (Beam's
default), PROCESS or EXTERNAL environment, whose workers a job service starts wherever it
runs. A remote run's workers see none of the driver's disk: what they read of it (the
vocabulary, templates, catalog entries) travels in the job, pickled with the plan, and every
path they open themselves (the mirror, the output) must be on storage they share, such as
gs://. Dataflow's workers also need p3data itself: it is staged with the job.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import apache_beam as beam
from apache_beam.options.pipeline_options import PortableOptions, SetupOptions, WorkerOptions
from apache_beam.portability import python_urns

from p3data.errors import P3DataError
from p3data.staging import build_wheel

LOOPBACK = ("LOOPBACK", python_urns.EMBEDDED_PYTHON_LOOPBACK)


def _is(pipeline: beam.Pipeline, runner: str) -> bool:
    """Whether the pipeline's runner is `runner` or a subclass of it (without importing it)."""
    return any(cls.__name__ == runner for cls in type(pipeline.runner).__mro__)


def remote_workers(pipeline: beam.Pipeline) -> str | None:
    """The workers, named for a message, when the run is remote (see above); None if local."""
    name = type(pipeline.runner).__name__
    if _is(pipeline, "DataflowRunner"):
        return f"{name}'s workers"
    if _is(pipeline, "PortableRunner"):
        environment = pipeline.options.view_as(PortableOptions).environment_type
        if environment is None and _is(pipeline, "PrismRunner"):
            return None  # Prism's default environment is LOOPBACK
        if (environment or "DOCKER") not in LOOPBACK:
            return f"{name}'s workers (--environment_type={environment or 'DOCKER'})"
    return None


def stage_p3data(pipeline: beam.Pipeline, folder: Path, *,
                 extras: Sequence[str] = ()) -> Path | None:
    """On Dataflow, unless the job brings its own code (--setup_file, --extra_package,
    --sdk_container_image): p3data's wheel (`p3data.staging`), requiring what `extras`
    require too, made in `folder` and staged as an --extra_package, which Dataflow's workers
    install before they start. Returns it."""
    if not _is(pipeline, "DataflowRunner"):
        return None
    setup, worker = (pipeline.options.view_as(SetupOptions),
                     pipeline.options.view_as(WorkerOptions))
    if (setup.setup_file or setup.extra_packages or worker.sdk_container_image
            or worker.worker_harness_container_image):
        return None
    wheel = build_wheel(folder, extras=extras)
    setup.extra_packages = [str(wheel)]
    return wheel


def check_submission_client(pipeline: beam.Pipeline) -> None:
    """Dataflow's runner imports its API client only when it submits, after the output folder
    was planned and withdrawn: without Beam's GCP packages, refuse before anything."""
    if not _is(pipeline, "DataflowRunner"):
        return
    try:
        importlib.import_module("apache_beam.runners.dataflow.internal.apiclient")
    except ImportError as err:
        raise P3DataError(f"DataflowRunner needs Beam's GCP packages, which p3data's 'gcp' "
                          f"extra installs: pip install 'p3data[gcp]' ({err})") from None


@contextmanager
def service_refusals(pipeline: beam.Pipeline) -> Iterator[None]:
    """A job the runner's service refuses (Dataflow answering the submission with an error: a
    bad option, a quota, a permission) is one line naming the runner and its answer."""
    try:
        yield
    except Exception as err:
        if not type(err).__module__.startswith("google.api_core"):
            raise
        answer = " ".join(str(err).split())
        raise P3DataError(f"{type(pipeline.runner).__name__} refused the job: {answer}") from None
