"""Templates as plain data: what promptsource's YAML says, plus where it came from."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from p3data.dataset_key import DatasetKey


@dataclass(frozen=True)
class TemplateMetadata:
    """promptsource's `!TemplateMetadata`: drives T0's eval mixtures and metrics."""

    original_task: bool | None = None
    choices_in_prompt: bool | None = None
    metrics: tuple[str, ...] | None = None
    languages: tuple[str, ...] | None = None  # newer promptsource's (the xP3 fork's) only


@dataclass(frozen=True)
class Template:
    """One prompt template of one dataset/subset."""

    id: str
    name: str
    jinja: str
    dataset: str
    subset: str | None = None
    answer_choices: str | None = None
    reference: str = ""
    metadata: TemplateMetadata = field(default_factory=TemplateMetadata)
    source: Path | None = None  # the YAML file it was read from
    origin: str = ""  # which template source: "promptsource", "project" or a user folder

    @property
    def key(self) -> DatasetKey:
        return DatasetKey(self.dataset, self.subset)

    @property
    def where(self) -> str:
        """A human pointer to this template for error messages."""
        return f"{self.source or '<memory>'}: template {self.name!r} ({self.key})"
