"""Errors that say what went wrong and where: file, dataset, template, row and field."""

from __future__ import annotations


class P3DataError(Exception):
    """Base class of every error p3data raises on purpose.

    `setting` names what the user can change to fix it (e.g. "vocab", "rows", "lock"), so
    that a front end can add its own name for it: the command line adds its option.
    """

    def __init__(self, *args: object, setting: str | None = None):
        super().__init__(*args)
        self.setting = setting


class TemplateFileError(P3DataError):
    """A template file could not be read or does not follow promptsource's YAML format."""

    def __init__(self, path: object, reason: str):
        self.path = str(path)
        self.reason = reason
        super().__init__(f"{self.path}: {reason}")


class TemplateError(P3DataError):
    """A template is broken in itself (Jinja syntax, bad answer_choices)."""

    def __init__(self, where: str, reason: str):
        self.where = where
        self.reason = reason
        super().__init__(f"{where}: {reason}")


class RowError(P3DataError):
    """One row could not be rendered by one template; other rows go on."""

    def __init__(self, where: str, row: int, reason: str, field: str | None = None):
        self.where = where
        self.row = row
        self.field = field
        self.reason = reason
        field_part = f", field {field!r}" if field else ""
        super().__init__(f"{where}, row {row}{field_part}: {reason}")


class RenderLimitError(RowError):
    """One row made a template exceed a limit on work or size (the reason names the limit)."""


class NotFoundError(P3DataError, LookupError):
    """A name (dataset, template, task, mixture) that is not known; says what is."""
