"""The reference p3data's xP3 rule is checked against: the xP3 fork's own `Template.apply`
(`promptsource/templates.py` of the fork's archive, extracted and imported by path under another
name, never copied into the repository) plus xP3's recipe's per-row rule (`apply_template`'s map
and filter in bigscience's `data/xp3/prepare_xp3_train.py`), restated here for the tests.

Two test-only adjustments, which change no rendered text but the draws:
- the fork's `choice` and `random` filters draw from the global `random` module; here they draw
  from the per-row seeded RNG p3data uses, so templates that draw can be compared exactly, not
  only for membership;
- the fork compiles each template on every call; here once per source: with those filters
  drawing at render time (`pass_context`), compiling draws nothing.
"""

from __future__ import annotations

import functools
import importlib.util
import random
import sys
import tarfile
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import yaml
from jinja2 import pass_context

from p3data.templates.choice import choice_seed
from p3data.templates.render import (
    BLANK,
    EMPTY_INPUTS,
    EMPTY_TARGETS,
    EXTRA_SEPARATOR,
    NO_SEPARATOR,
    RENDER_ERROR,
    TEMPLATE_SPLIT_ERROR,
)

FORK_MODULE = "xp3_fork_templates"  # not `promptsource`: T0's promptsource 0.1.0 keeps its name
_LOADERS = (yaml.Loader, yaml.FullLoader, yaml.UnsafeLoader)


@contextmanager
def _yaml_tags_kept() -> Iterator[None]:
    """The fork's classes register promptsource's YAML tags with PyYAML's loaders, as 0.1.0's
    do: put back what was there, so T0's reference reads its own classes afterwards."""
    saved = {loader: dict(loader.__dict__["yaml_constructors"])
             for loader in _LOADERS if "yaml_constructors" in loader.__dict__}
    try:
        yield
    finally:
        for loader in _LOADERS:
            if loader in saved:
                loader.yaml_constructors = saved[loader]
            elif "yaml_constructors" in loader.__dict__:
                del loader.yaml_constructors


class _Draws:
    rng = random.Random(0)


@pass_context  # as p3data's: Jinja then draws at render time, never while compiling
def _seeded_choice(context, items):
    return _Draws.rng.choice(items)


@pass_context
def _seeded_random(context, items):
    """Jinja's `random` filter (the fork's), drawing from the row's RNG."""
    try:
        return _Draws.rng.choice(items)
    except IndexError:
        return context.environment.undefined("No random item, sequence was empty.")


def extract_fork(archive: Path, folder: Path, prompt_folders: list[str]) -> Path:
    """`promptsource/templates.py` and the named prompt folders' `templates.yaml` from the
    fork's archive into `folder`; returns the `templates/` folder."""
    wanted = {"promptsource/templates.py"} | {
        f"promptsource/templates/{name}/templates.yaml" for name in prompt_folders}
    with tarfile.open(archive) as tar:
        members = [m for m in tar.getmembers() if m.name.partition("/")[2] in wanted]
        assert len(members) == len(wanted), sorted(wanted - {m.name.partition("/")[2]
                                                             for m in members})
        for member in members:
            member.name = member.name.partition("/")[2]
            tar.extract(member, folder, filter="data")
    return folder / "promptsource" / "templates"


def load_fork(templates_dir: Path, prompt_folders: list[str]) -> tuple[ModuleType, dict]:
    """The fork's module (its draws seeded per row), and each prompt folder's templates as the
    fork reads them (`DatasetTemplates(folder)`, as the recipe calls it): {folder: {id: T}}."""
    source = templates_dir.parent / "templates.py"
    spec = importlib.util.spec_from_file_location(FORK_MODULE, source)
    fork = importlib.util.module_from_spec(spec)
    with _yaml_tags_kept(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pkg_resources' deprecation
        sys.modules[FORK_MODULE] = fork  # pkg_resources finds the module's folder through it
        try:
            spec.loader.exec_module(fork)
        finally:
            del sys.modules[FORK_MODULE]
        fork.TEMPLATES_FOLDER_PATH = str(templates_dir)
        by_folder = {name: {t.id: t for t in fork.DatasetTemplates(name).templates.values()}
                     for name in prompt_folders}
    fork.env.filters["choice"] = _seeded_choice
    fork.env.filters["random"] = _seeded_random
    fork.env.from_string = functools.lru_cache(maxsize=None)(fork.env.from_string)
    return fork, by_folder


@dataclass(frozen=True)
class Expected:
    """What xP3's recipe made of one row: kept (inputs, target) or dropped, and why, in
    p3data's words (`TEMPLATE_SPLIT_ERROR`: the exception dropped the whole template file)."""

    inputs: str | None = None
    target: str | None = None
    reason: str | None = None
    error: str = ""


def xp3_apply(template, row: dict[str, Any], index: int, *, strip_connection: bool,
              seed: int = 0) -> Expected:
    """The recipe's `removeHyphen`, the fork's `apply` and `apply_template`'s map and filter."""
    _Draws.rng = random.Random(choice_seed(template.id, index, seed))
    example = {key.replace("-", "_"): value for key, value in row.items()}
    try:
        result = template.apply(example, strip_connection=strip_connection, truncate=True)
    except ValueError as err:  # the recipe: an empty example
        fork_own = str(err).startswith("Prompt did not produce an input and at least one target")
        return Expected(reason=NO_SEPARATOR if fork_own else RENDER_ERROR, error=repr(err))
    except Exception as err:  # noqa: BLE001 - escapes the map: the recipe skips the file
        return Expected(reason=TEMPLATE_SPLIT_ERROR, error=repr(err))
    if len(result) != 2:
        assert result == [""], result
        return Expected(reason=BLANK)
    inputs, targets = result
    if len(targets) > 1:
        return Expected(reason=EXTRA_SEPARATOR)
    if not inputs:
        return Expected(reason=EMPTY_INPUTS)
    if not targets[0]:
        return Expected(reason=EMPTY_TARGETS)
    return Expected(inputs, targets[0])
