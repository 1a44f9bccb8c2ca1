"""promptsource templates: loading (with overrides and provenance), sandboxed, bounded
rendering, and installing the sets no package carries (`p3data.templates.install`)."""

# What users may use: a task spec's template, and a set of templates. The rest is imported
# from its module (`render`, `collection`, `choice`, ...).
from p3data.templates.collection import TemplateCollection
from p3data.templates.model import Template

__all__ = ["Template", "TemplateCollection"]
