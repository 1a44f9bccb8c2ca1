"""Every (config, template) xP3 or xP3mt builds: the recipe's configs, each joined with the
templates of its prompt folder, and the language folder each one's output goes to.

Templates are found by folder, as the fork finds them (`templates/collection.folder_templates`),
not by the `dataset:`/`subset:` a file declares: 5 files of `tr13` and 26 of `xp3mt` declare
another folder's. A template name used twice in one folder (`codeparrot/apps/all`'s `abovesol`)
is one pair: the recipe's sorted name list holds it twice, but both runs render the last
template of that name, and the second finds its output written and skips.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from p3data.t0 import task_name
from p3data.templates import Template
from p3data.templates.collection import folder_templates
from p3data.xp3_recipe.languages import template_language
from p3data.xp3_recipe.recipe import prompt_folder, unique_train_datasets

SET_NAMES = ("xp3", "xp3mt")  # the template sets of `templates/install.py`


@dataclass(frozen=True)
class PromptPair:
    """One (config, template) of the recipe: the data of `dataset`/`config`, rendered with
    template `template` of `prompt_folder`, written to language folder `language`."""

    dataset: str
    config: str | None
    prompt_folder: str
    template: str
    language: str

    @property
    def task_name(self) -> str:
        """`xp3_<dataset>_<config>_<template>`, cleaned as T0's task names are."""
        return "xp3_" + task_name(self.dataset, self.config, self.template)


def prompt_pairs(set_name: str, templates: Path, *,
                 read: Callable[[Path, str], Mapping[str, Template]] = folder_templates
                 ) -> list[PromptPair]:
    """The pairs the recipe builds for `set_name` (`xp3`: English prompts on `tr13`; `xp3mt`:
    each config's own folder on `xp3mt`) from the installed `templates` folder, configs in the
    recipe's order, each config's templates by name. A config whose folder holds no templates
    yields none, as in the recipe (74 on xP3mt). `read` reads a folder's templates (a caller
    that keeps them passes its own memo)."""
    if set_name not in SET_NAMES:
        raise ValueError(f"unknown xP3 set {set_name!r}: expected one of {', '.join(SET_NAMES)}")
    english_prompts = set_name == "xp3"
    found: dict[str, list[str]] = {}
    pairs = []
    for dataset, config in unique_train_datasets():
        folder = prompt_folder(dataset, config, english_prompts=english_prompts)
        if folder not in found:
            found[folder] = list(read(templates, folder))
        for name in found[folder]:
            language = template_language(dataset, config, name)
            if language is None:
                raise ValueError(f"{dataset}/{config}, template {name!r}: the recipe finds no "
                                 "language folder for it")
            pairs.append(PromptPair(dataset, config, folder, name, language))
    return pairs
