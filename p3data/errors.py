"""Errors that say what went wrong and where: file, dataset, template, row and field."""

from __future__ import annotations

import contextlib
import difflib
import errno
import re
import traceback
from collections.abc import Collection, Iterator

# What p3data says of an unexpected error, wherever it is reported (the command line, a run's
# summary): it is p3data's, and its traceback is what to report.
BUG = "a bug in p3data, not a mistake of yours: please report it with the traceback"


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

    # Up to this many known names are all listed; more are pointed to (`listed_by`).
    MAX_LISTED = 10

    @classmethod
    def unknown(cls, what: str, name: str, known: Collection[str], *,
                listed_by: str | None = None, setting: str | None = None) -> NotFoundError:
        """The one wording of a name not found: `unknown <what> '<name>'`, the known names
        it may be a typo of, then the known names themselves when they are few, or else
        (without a likely typo) where to find them."""
        close = difflib.get_close_matches(name, list(known), n=3)
        message = f"unknown {what} {name!r}"
        if close:
            message += f"; did you mean {', '.join(close)}?"
        if len(known) <= cls.MAX_LISTED:
            message += f"{'' if close else ';'} known: {', '.join(known)}"
        elif listed_by and not close:
            message += f"; see {listed_by}"
        return cls(message, setting=setting)


# Refusals of the storage itself: no later write would fare better, so a run stops on them.
STORAGE_ERRNOS = {errno.ENOSPC: "no space left on the device",
                  errno.EDQUOT: "disk quota exceeded", errno.EROFS: "the file system is read-only"}
# The same, as a worker's failure reaches the driver from another process: as text.
_ERRNOS = "|".join(map(str, STORAGE_ERRNOS))
_RELAYED = re.compile(rf"\[Errno ({_ERRNOS})\] [^:\]\n]*(?:: '([^'\n]*)')?")


def storage_refusal(err: BaseException) -> str | None:
    """What the storage said, if `err` (or an error it came from, or the text a Beam worker
    relayed it as) is a write refused for want of room or by a read-only file system, with the
    folder written in when known. None for any other error."""
    seen: set[int] = set()
    while err is not None and id(err) not in seen:
        seen.add(id(err))
        if isinstance(err, OSError) and err.errno in STORAGE_ERRNOS:
            return _refused(err.errno, err.filename)
        if match := _RELAYED.search(str(err)):
            return _refused(int(match[1]), match[2])
        err = err.__cause__ or err.__context__
    return None


@contextlib.contextmanager
def writing_in(folder: str) -> Iterator[None]:
    """A write the storage refuses in the block is said to be in `folder` when its error names
    no file, as a `write()` or `close()` call's never does (numpy's and pathlib's writes)."""
    try:
        yield
    except OSError as err:
        if err.errno in STORAGE_ERRNOS and err.filename is None:
            raise OSError(err.errno, err.strerror, f"{folder.rstrip('/')}/") from err
        raise


def _refused(number: int, path: object) -> str:
    """The storage's refusal, in the folder of `path` (a file's temporary name says nothing;
    a path ending in `/` is the folder itself)."""
    folder = str(path).rsplit("/", 1)[0] if path else ""
    return STORAGE_ERRNOS[number] + (f" writing in {folder}" if folder else "")


def describe_bug(err: BaseException) -> tuple[str, str]:
    """(one line for the summary, the traceback to print after it) of an unexpected error."""
    text = "".join(traceback.format_exception(err))
    return f"an unexpected error, {BUG} ({type(err).__name__}: {err})", text
