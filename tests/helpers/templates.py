"""Template files in promptsource's YAML format, written by tests."""

from __future__ import annotations

import textwrap
from pathlib import Path


def write_templates(root: Path, dataset: str, subset: str | None, body: str) -> Path:
    """Write a promptsource-format templates.yaml; `body` is the YAML under `templates:`."""
    folder = root / dataset / subset if subset else root / dataset
    folder.mkdir(parents=True, exist_ok=True)
    head = f"dataset: {dataset}\n" + (f"subset: {subset}\n" if subset else "")
    path = folder / "templates.yaml"
    path.write_text(head + "templates:\n" + textwrap.indent(textwrap.dedent(body), "  "))
    return path


def template_entry(tid: str, name: str, jinja: str, answer_choices: str | None = None, *,
                   original_task: bool = True) -> str:
    choices = f"answer_choices: {answer_choices!r}\n  " if answer_choices is not None else ""
    return (
        f"{tid}: !Template\n"
        f"  {choices}id: {tid}\n"
        f"  jinja: {jinja!r}\n"
        f"  metadata: !TemplateMetadata\n"
        f"    choices_in_prompt: false\n"
        f"    metrics:\n    - Accuracy\n"
        f"    original_task: {str(original_task).lower()}\n"
        f"  name: {name!r}\n"
        f"  reference: ''\n"
    )
