"""The collections `xp3`, `xp3mt` and `xp3eval` of the task set (entry points
`p3data.collections`).

Light on purpose: every command loads every installed collection's module, so the recipe, its
templates and its catalog are read only when the task set asks for the tasks (`define`).
Without the set's templates installed the collection cannot load (`CollectionUnavailable`,
saying how to install them): the task set is then the other collections', and any name the
collection would define says why.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from p3data.taskset import Contribution, TaskSet


def _templates(template_set: str, claims: str) -> Path:
    """The installed templates of `template_set`, with the set's parsed templates if its
    install wrote an index, or why the collection cannot load."""
    from p3data.taskset import CollectionUnavailable
    from p3data.templates.collection import TemplateSetMissing
    from p3data.templates.install import installed

    try:
        templates = installed(template_set)
    except TemplateSetMissing as err:
        raise CollectionUnavailable(str(err), claims=claims) from None
    _load_index(templates.parent)
    return templates


@functools.cache
def _load_index(set_folder: Path) -> int:
    """The set's parse index handed to the template reader once a process: xP3mt's tasks and
    xp3eval's read the same set."""
    from p3data.templates import parse_index

    return parse_index.load(set_folder)


class XP3Collection:
    """xP3's tasks (`xp3`, English prompts) or xP3mt's (`xp3mt`, each config's own)."""

    requires: tuple[str, ...] = ()

    def __init__(self, name: str):
        self.name = self.prefix = name  # its names: `xp3`, `xp3_<lang>`, `xp3_<task>`

    def define(self, base: TaskSet) -> Contribution:
        templates = _templates(self.name, rf"{self.name}(_.*)?")
        from p3data.xp3_recipe import tasks

        return tasks.define(self.name, templates, tasks.xp3_catalog())


class XP3EvalCollection:
    """xP3's held-out L1 evaluation as rank-classification tasks, and `xp3_eval`; on the
    templates of the `xp3mt` branch, which xmtf's rank evaluation used."""

    name = "xp3eval"
    prefix = "xp3_"  # `xp3_eval`, `xp3_<task>_score_eval`
    requires: tuple[str, ...] = ()

    def define(self, base: TaskSet) -> Contribution:
        templates = _templates("xp3mt", r"xp3_eval|xp3_.*_score_eval")
        from p3data.xp3_recipe import evaluation, tasks

        return evaluation.define(templates, tasks.xp3_catalog())


XP3 = XP3Collection("xp3")
XP3MT = XP3Collection("xp3mt")
XP3_EVAL = XP3EvalCollection()
