"""Beam's pipeline options, checked before a cache run locks its output folder or plans
anything: an option no registered options class knows (a typo, or one of p3data's misspelt),
a value Beam refuses, a value Beam's parser takes but its runner cannot run (a negative
`--direct_num_workers`), an unknown or unavailable runner, and what Beam's own validation of the
options refuses are each one `P3DataError` naming it, where Beam would log a warning, exit, or
fail after the run had started.
"""

from __future__ import annotations

import argparse
import difflib
from collections.abc import Sequence

import apache_beam as beam
from apache_beam.options.pipeline_options import DirectOptions, PipelineOptions, StandardOptions
from apache_beam.portability.api import beam_provision_api_pb2
from apache_beam.runners.direct.direct_runner import SwitchingDirectRunner
from apache_beam.runners.portability.fn_api_runner import FnApiRunner
from apache_beam.runners.portability.fn_api_runner.fn_runner import ExtendedProvisionInfo
from apache_beam.runners.portability.portable_runner import JobServiceHandle
from apache_beam.runners.runner import PipelineRunner, create_runner

from p3data.errors import P3DataError

DEFAULT_ARGS = ("--runner=DirectRunner",)
# Runners Beam knows only by their full name.
RUNNER_ALIASES = {"DaskRunner": "apache_beam.runners.dask.dask_runner.DaskRunner"}


def beam_pipeline(args: Sequence[str], *, own_options: Sequence[str] = ()) -> beam.Pipeline:
    """A Beam pipeline of these options (none: the DirectRunner), every one of them checked;
    `own_options` are the caller's, offered when an unknown option is close to one."""
    args = list(args) or list(DEFAULT_ARGS)
    runner_name = _parse(args, strict=False).runner or StandardOptions.DEFAULT_RUNNER
    runner_name = RUNNER_ALIASES.get(runner_name, runner_name)
    try:  # imports the runner's module, which registers its options classes
        runner = create_runner(runner_name)
    except ValueError:
        known = ", ".join([*StandardOptions.KNOWN_RUNNER_NAMES, *RUNNER_ALIASES])
        raise P3DataError(f"no Beam runner {runner_name!r}; Beam's runners: {known}, or the "
                          "full name of a PipelineRunner subclass") from None
    except (ImportError, AttributeError) as err:
        raise P3DataError(f"Beam runner {runner_name!r} is not available here ({err}); "
                          "install what it needs, or choose another runner") from None
    parsed = _parse(args, strict=True, own_options=own_options)
    options = PipelineOptions(args)
    if parsed.runner:
        options.view_as(StandardOptions).runner = runner_name
    if isinstance(runner, SwitchingDirectRunner):
        runner = _tested_direct_runner(options)
    _check_direct(runner, options)
    try:
        return beam.Pipeline(runner=runner, options=options)
    except ValueError as err:  # Beam's validation of the options for this runner
        problems = "; ".join(line.strip() for line in str(err).splitlines()[1:] if line.strip())
        raise P3DataError(f"Beam's {type(runner).__name__} refuses these options: "
                          f"{problems or err}") from None


def _tested_direct_runner(options: PipelineOptions) -> FnApiRunner:
    """What p3data runs for the DirectRunner: the FnApiRunner, as Beam's DirectRunner ran it
    until recently (`--direct_num_workers`, `--direct_running_mode`). Beam's (2.77) tries its
    Prism runner first, a binary it downloads from GitHub at first use: online, the build would
    go to a runner p3data is not tested on; offline, every run would wait for a failed download
    first. `--runner=PrismRunner` still chooses Prism. The workers get the options as Beam's
    DirectRunner gives them."""
    encoded = JobServiceHandle.encode_pipeline_options(options.get_all_options())
    return FnApiRunner(provision_info=ExtendedProvisionInfo(
        beam_provision_api_pb2.ProvisionInfo(pipeline_options=encoded)))


def _check_direct(runner: PipelineRunner, options: PipelineOptions) -> None:
    """What the DirectRunner cannot run though Beam's parser takes it: its FnApiRunner makes
    `direct_num_workers` workers, one per CPU for 0, and none for a negative count, which
    fails once the run has started (an IndexError deep in Beam). Other runners ignore it."""
    if not isinstance(runner, FnApiRunner):
        return
    workers = options.view_as(DirectOptions).direct_num_workers
    if workers < 0:
        raise P3DataError(f"Beam option --direct_num_workers: {workers} workers; give a "
                          "number of workers, or 0 for one per CPU")


def _parse(args: list[str], *, strict: bool,
           own_options: Sequence[str] = ()) -> argparse.Namespace:
    """Parse with Beam's own parser of every options class registered so far; `strict`: an
    argument none of them takes is an error."""
    parser = _beam_parser()
    parsed, unknown = parser.parse_known_args(args)
    if strict and unknown:
        raise _unknown(unknown[0], parser, own_options)
    return parsed


def _beam_parser() -> argparse.ArgumentParser:
    """The parser Beam builds from every registered options class, raising `P3DataError` on a
    bad value where Beam's would print usage and exit."""
    built: list[argparse.ArgumentParser] = []
    PipelineOptions([]).get_all_options(add_extra_args_fn=built.append)
    parser = built[0]
    parser.error = _refuse  # Beam's parser exits; this one names the option in an error
    return parser


def _refuse(message: str) -> None:
    if message.startswith("ambiguous option: "):  # Beam's parser ignores these too
        return
    # argparse says "argument --x: invalid int value: 'abc'"
    raise P3DataError(f"Beam option {message.removeprefix('argument ')}")


def _unknown(arg: str, parser: argparse.ArgumentParser,
             own_options: Sequence[str]) -> P3DataError:
    name = arg.split("=", 1)[0]
    known = [*own_options, *(o for action in parser._actions for o in action.option_strings)]
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.75)
    hint = f"; did you mean {close[0]}?" if close else ""
    what = "option" if name.startswith("-") else "argument"
    return P3DataError(f"{name}: no such {what} of p3data cache or of Beam's pipeline "
                       f"options{hint}")
