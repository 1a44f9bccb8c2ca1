"""The collections `xp3` and `xp3mt` of the task set (entry points `p3data.collections`).

Light on purpose: every command loads every installed collection's module, so the recipe, its
templates and its catalog are read only when the task set asks for the tasks (`define`).
Without the set's templates installed the collection cannot load (`CollectionUnavailable`,
saying how to install them): the task set is then the other collections', and any name
`<set>` or `<set>_...` says why.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from p3data.taskset import Contribution, TaskSet


class XP3Collection:
    """xP3's tasks (`xp3`, English prompts) or xP3mt's (`xp3mt`, each config's own)."""

    requires: tuple[str, ...] = ()

    def __init__(self, name: str):
        self.name = name

    def define(self, base: TaskSet) -> Contribution:
        from p3data.taskset import CollectionUnavailable
        from p3data.templates import parse_index
        from p3data.templates.collection import TemplateSetMissing
        from p3data.templates.install import installed

        try:
            templates = installed(self.name)
        except TemplateSetMissing as err:
            raise CollectionUnavailable(str(err), claims=rf"{self.name}(_.*)?") from None
        parse_index.load(templates.parent)  # the set's parsed templates, if it has an index
        from p3data.xp3_recipe import tasks

        return tasks.define(self.name, templates, tasks.xp3_catalog())


XP3 = XP3Collection("xp3")
XP3MT = XP3Collection("xp3mt")
