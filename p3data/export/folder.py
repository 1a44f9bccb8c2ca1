"""An export folder as a whole: which folders p3data export may write into at all, and the run
that exports tasks into one, holding its lock, and writes the card last.

p3data never overwrites or deletes a file it did not write, so `p3data export` writes only
into a folder that is missing, empty, or an export p3data made: its card (README.md, which it
rewrites), its task folders (each holds what its export wrote, said first), its lock and its
temporaries. Anything else there is the user's, and the folder is refused. So is the cache
itself, a folder inside it (its files would be the cache's) or one holding it.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from p3data import fs
from p3data.errors import P3DataError
from p3data.export.card import TITLE, card_text
from p3data.export.exported import ExportSettings, complete_exports
from p3data.export.naming import CARD, EXPORTED
from p3data.export.shapes import P3
from p3data.export.task import ExamplesWritten, TaskExportOutcome, export_task
from p3data.lock import LOCK

if TYPE_CHECKING:
    from p3data.read import CacheReader


def export_tasks(cache: CacheReader, tasks: Sequence[str], out: str, *, settings: ExportSettings,
                 force: bool = False,
                 on_task: Callable[[TaskExportOutcome], None] = lambda outcome: None,
                 on_examples: ExamplesWritten = lambda n: None) -> list[TaskExportOutcome]:
    """Export `tasks` of `cache` into `out` holding its lock (`force` takes a dead run's over),
    then write the card from every task complete in `out`. `out` is refused unless it is
    empty or an export p3data made. A task that fails (a corrupt shard record, a cache that does
    not add up) is an outcome; the others go on, unless a live run (`p3data cache`) has begun
    writing the cache meanwhile: that is one error naming it."""
    from p3data.lock import output_lock, refuse_live_writer

    refuse_unless_ours(out, cache=cache.root)
    with output_lock(out, force=force):
        fs.sweep_temporaries(out)
        _refuse_mixed_formats(out, tasks, settings)
        outcomes = []
        try:
            for task in tasks:
                try:
                    outcome = export_task(cache, task, out, settings=settings,
                                          on_examples=on_examples)
                except (P3DataError, OSError) as err:
                    refuse_live_writer(cache.root)  # a cache run began rewriting it: say so
                    outcome = TaskExportOutcome(task, "failed", reason=_one_line(err))
                on_task(outcome)
                outcomes.append(outcome)
        finally:  # interrupted too: the card lists no task that is being rewritten
            fs.write_bytes(fs.join(out, CARD), card_text(complete_exports(out)).encode())
    return outcomes


def _refuse_mixed_formats(out: str, tasks: Sequence[str], settings: ExportSettings) -> None:
    """One card loads one format of one shape: a folder holding tasks in another (other than
    those this run exports anew) is not one to add to."""
    def kind(s: ExportSettings) -> str:
        return s.format if s.shape == P3 else f"{s.format} of shape {s.shape}"

    other = [r.task for r in complete_exports(out)
             if kind(r.settings) != kind(settings) and r.task not in set(tasks)]
    if other:
        raise P3DataError(f"{out} holds tasks exported as another format or shape (e.g. "
                          f"{other[0]}); export {kind(settings)} to another folder")


def _one_line(err: BaseException) -> str:
    text = str(err) if isinstance(err, P3DataError) else f"{type(err).__name__}: {err}"
    return " ".join(text.split())


# Where to write ----------------------------------------------------------------------------

def refuse_unless_ours(out: str, *, cache: str) -> None:
    """One error line unless `out` is missing, empty or an export p3data made, and apart from
    the cache at `cache`. Checked before the lock is taken, so a refusal creates nothing."""
    target, source = _normal(out), _normal(cache)
    if target == source:
        raise P3DataError(f"{out}: is the cache itself; export to a folder of its own")
    if target.startswith(source + "/"):
        raise P3DataError(f"{out}: is inside the cache {cache} (seqio and p3data would read "
                          "what is written there as the cache's); export to a folder outside it")
    if source.startswith(target + "/"):
        raise P3DataError(f"{out}: holds the cache {cache}; export to a folder of its own")
    if not fs.exists(out):
        return
    if not fs.is_dir(out):
        raise P3DataError(f"{out}: is a file, not a folder; choose another output folder")
    if (foreign := _foreign(out)) is not None:
        raise P3DataError(f"{foreign}: not written by p3data export, so {out} is not an export "
                          "p3data made; export to an empty folder or one p3data export wrote")


def _normal(path: str) -> str:
    """`path` as listings spell it, `..` and `.` resolved, so that paths compare as strings."""
    protocol, _, rest = fs.canonical(path).rpartition("://")
    return f"{protocol}://{posixpath.normpath(rest)}" if protocol else posixpath.normpath(rest)


def _foreign(out: str) -> str | None:
    """The first thing in `out` that p3data export did not write, if any."""
    filesystem, local = fs.resolve(out)
    for entry in sorted(filesystem.ls(local, detail=True), key=lambda entry: entry["name"]):
        name = fs.name_of(entry["name"])
        path = fs.join(out, name)
        if entry["type"] == "directory":
            if not _task_folder(path):
                return path
        elif name == CARD:
            if TITLE not in fs.read_bytes(path).decode("utf-8", "replace"):
                return path
        elif name != LOCK and not fs.is_temporary(name):
            return path
    return None


def _task_folder(path: str) -> bool:
    """A task folder p3data export made: it holds what the task's export says it wrote
    (written first), or at most the temporaries of a run killed before that was in place."""
    names = [file[len(fs.canonical(path)) + 1:] for file in fs.walk_files(path)]
    return EXPORTED in names or all(fs.is_temporary(name) for name in names)
