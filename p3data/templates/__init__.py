"""promptsource templates: loading (with overrides and provenance), sandboxed, bounded
rendering, and installing the sets no package carries (`p3data.templates.install`)."""

from p3data.templates.choice import choice_seed
from p3data.templates.collection import (
    DatasetTemplates,
    TemplateCollection,
    TemplateSource,
    default_sources,
)
from p3data.templates.model import Template, TemplateMetadata
from p3data.templates.render import (
    NO_LABEL,
    CompiledTemplate,
    DatasetRenderer,
    Dropped,
    Outcome,
    Rendered,
    prepare_row,
)

__all__ = [
    "NO_LABEL",
    "CompiledTemplate",
    "DatasetRenderer",
    "DatasetTemplates",
    "Dropped",
    "Outcome",
    "Rendered",
    "Template",
    "TemplateCollection",
    "TemplateMetadata",
    "TemplateSource",
    "choice_seed",
    "default_sources",
    "prepare_row",
]
