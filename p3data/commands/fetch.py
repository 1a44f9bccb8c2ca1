"""`p3data fetch`: verified snapshots of Hub datasets in a mirror, for `--data-dir`.

    p3data fetch (--mixture NAME | --tasks REGEX | DATASET[/SUBSET] ...) --to MIRROR
    p3data fetch --verify MIRROR

Each dataset's catalog splits are read from the parquet files the catalog pins on the Hub (or
under --hub-root), checked against the catalog (a drifted, partial, missing or script-only
dataset fails with the reason), and written as parquet to MIRROR/<dataset>[/<subset>]/ with
snapshot.json, written last, recording what was read and written. MIRROR is a folder or any
fsspec URL (gs://, s3://): a new or empty folder, or a mirror (a folder of catalog datasets'
folders; anything else there is refused). The run holds MIRROR/.p3data-lock: a second fetch
into the same mirror is refused, naming the first. A rerun skips datasets whose snapshot is
intact (--force fetches them again, and takes over the lock of a run that died); one
dataset's failure does not stop the others; exit 1 if any failed. Rows p3data did not write
in a dataset's folder are never replaced: that dataset fails instead.
--verify re-checks every snapshot of a mirror against its record, and finds files of a
fetch that died before its record, and a fetch's lock (one runs, or one died): exit 1 on any
problem.
"""

from __future__ import annotations

import argparse
import os
from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from p3data.commands.extras import require
from p3data.commands.options import add_hub_option
from p3data.datasets.hub import ENV_HUB_ROOT
from p3data.errors import P3DataError

if TYPE_CHECKING:
    from p3data.datasets.catalog import Catalog, DatasetEntry
    from p3data.progress import ProgressBar

KINDS = ("fetched", "already verified", "skipped", "failed")


@dataclass(frozen=True)
class DatasetFetchOutcome:
    """One dataset's line of the summary: its kind (one of KINDS), and why if it has a why."""

    dataset: str
    kind: str
    why: str = ""
    splits: int | None = None
    rows: int | None = None
    size: int | None = None

    @property
    def status(self) -> str:
        return f"{self.kind}: {self.why}" if self.why else self.kind


def run(args: argparse.Namespace) -> int:
    require("huggingface_hub", "pyarrow")
    if args.verify is not None:
        if args.datasets or args.mixture or args.tasks:
            raise P3DataError("--verify checks a whole mirror: name no datasets, mixtures or "
                              "tasks with it")
        return verify(_folder(args.verify, "--verify"))
    from p3data.datasets.catalog import Catalog

    catalog = Catalog.load()
    entries = selection(catalog, args.datasets, args.mixture, args.tasks)
    mirror = _folder(args.to, "--to")
    hub_root = _hub_root(args.hub_root)
    check_target(mirror, {entry.dataset for entry in catalog})
    return fetch(entries, mirror, hub_root=hub_root, force=args.force)


def _folder(path: str, option: str) -> str:
    """A folder given on the command line, without a trailing slash."""
    if not path.strip():
        raise P3DataError(f"{option} names no folder")
    from p3data import fs

    return fs.without_trailing_slash(path)


def _hub_root(given: str | None) -> str | None:
    """--hub-root, else $P3DATA_HUB_ROOT, else None (the Hub itself); one that is no folder
    is refused once, here, rather than by every dataset."""
    from p3data import fs

    root = given or os.environ.get(ENV_HUB_ROOT) or None
    if root and not fs.is_dir(root):
        raise P3DataError(f"{root}: no such Hub root folder; name a copy of the Hub laid out "
                          f"as <owner>/<name>/<revision>/<path> (--hub-root, ${ENV_HUB_ROOT})")
    return root


def check_target(mirror: str, datasets: Collection[str]) -> None:
    """Refuse a `--to` that is a file, or a folder holding anything but datasets' folders (and
    p3data's lock and temporaries): fetch writes only in dataset folders, and a folder of
    other things is a mistyped path more likely than a mirror."""
    from p3data import fs
    from p3data.lock import LOCK

    if not fs.is_dir(mirror):
        if fs.exists(mirror):
            raise P3DataError(f"{mirror}: a file, not a mirror folder; choose an empty folder, "
                              "or a mirror p3data fetch wrote")
        return
    others = [name for name in fs.names_in(mirror) if name not in datasets and name != LOCK
              and not name.startswith(fs.TEMP_PREFIX)]
    if others:
        raise P3DataError(f"{mirror}: not a mirror (it holds {', '.join(others)}, which are no "
                          "catalog dataset's folders); choose an empty folder, or a mirror "
                          "p3data fetch wrote")


def selection(catalog: Catalog, names: Sequence[str], mixtures: Sequence[str],
              patterns: Sequence[str]) -> list[DatasetEntry]:
    """Each dataset once, in the order asked: those named (a dataset with subsets stands for
    all of them), then those of the tasks chosen as `p3data cache` chooses them."""
    from p3data.dataset_key import DatasetKey
    from p3data.taskset import chosen

    entries = []
    for name in names:
        key = DatasetKey.parse(name)
        subsets = [e for e in catalog if key.subset is None and e.dataset == key.dataset]
        entries += [catalog[key]] if key in catalog or not subsets else subsets
    if mixtures or patterns:
        entries += [spec.entry for spec in chosen(mixtures, patterns)]
    if not entries:
        raise P3DataError("nothing to fetch: name datasets (e.g. trec super_glue/copa), "
                          "mixtures or task patterns", setting="tasks")
    return list({entry.key: entry for entry in entries}.values())


def fetch(entries: Sequence[DatasetEntry], mirror: str, *, hub_root: str | None,
          force: bool) -> int:
    """Snapshot every entry into `mirror` under a progress bar, holding the mirror's lock
    (`force` takes over the lock of a run that died); print the summary."""
    from p3data import fs
    from p3data.lock import output_lock
    from p3data.progress import ProgressBar
    from p3data.tables import text_table

    expected = {entry.name: 0 if entry.manual_download else sum(entry.splits.values())
                for entry in entries}
    outcomes = []
    with output_lock(mirror, force=force):
        fs.sweep_temporaries(mirror)  # only now: a live run's temporaries are its own
        with ProgressBar(expected, unit="rows", label="p3data fetch") as progress:
            for entry in entries:
                outcomes.append(_fetch_one(entry, mirror, hub_root=hub_root, force=force,
                                           progress=progress))
                progress.finish(entry.name)
    print(text_table(["dataset", "splits", "rows", "bytes", "status"], [
        [o.dataset, o.splits, o.rows, o.size, o.status] for o in outcomes]))
    counts = Counter(outcome.kind for outcome in outcomes)
    print(f"{len(outcomes)} datasets: " + ", ".join(f"{counts[kind]} {kind}" for kind in KINDS)
          + f"; mirror {fs.canonical(mirror)}")
    return 1 if counts["failed"] else 0


def _fetch_one(entry: DatasetEntry, mirror: str, *, hub_root: str | None, force: bool,
               progress: ProgressBar) -> DatasetFetchOutcome:
    from p3data.datasets.fetch import snapshot

    if entry.manual_download:
        source = entry.manual_download.get("url", "see the catalog")
        where = f"{entry.key.folder(mirror)}/<split>.jsonl"
        why = f"a manual download ({source}); place its rows by hand as {where}"
        return DatasetFetchOutcome(entry.name, "skipped", why)
    try:
        done = snapshot(entry, mirror, hub_root=hub_root, force=force,
                        on_rows=progress.advance)
    except P3DataError as err:
        return DatasetFetchOutcome(entry.name, "failed", str(err))
    record = done.record
    for line in record.drift:
        progress.note(f"{entry.name}: accepted drift from T0's rows: {line}")
    if done.fetched and not record.commit_resolved:
        progress.note(f"{entry.name}: read {record.source} at {record.commit}, a revision "
                      "name, not a commit SHA: the snapshot is unresolved")
    return DatasetFetchOutcome(entry.name, "fetched" if done.fetched else "already verified",
                               splits=len(record.splits), rows=record.rows, size=record.size)


def verify(mirror: str) -> int:
    """Check every snapshot of `mirror`: one line per problem, then a summary."""
    from p3data.datasets.mirror_check import verify_mirror

    check = verify_mirror(mirror)
    problems = [*_unfinished(mirror), *check.problems]
    for line in problems:
        print(line)
    count = len(problems)
    verdict = f"FAILED: {count} problem{'s' * (count != 1)}" if count else "OK"
    print(f"{len(check.records)} snapshots, {check.files} files: {verdict}")
    return 1 if problems else 0


def _unfinished(mirror: str) -> list[str]:
    """The mirror's lock, if a fetch holds it or died holding it: what it wrote so far may be
    consistent, but the fetch asked for is not done."""
    from p3data import fs
    from p3data.lock import LOCK, describe_lock

    path = fs.join(mirror, LOCK)
    try:
        held = describe_lock(fs.read_bytes(path))
    except FileNotFoundError:
        return []
    return [f"{path}: {held}: a fetch is writing this mirror, or died before it ended; once "
            "none runs, rerun it (--force takes over a dead run's lock)"]


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "fetch", help="snapshot Hub datasets into a verified parquet mirror for --data-dir",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("datasets", nargs="*", metavar="DATASET[/SUBSET]",
                        help="catalog datasets to fetch, e.g. trec super_glue/copa")
    parser.add_argument("--mixture", action="append", default=[], metavar="NAME",
                        help="fetch the datasets of this mixture's tasks (repeatable)")
    parser.add_argument("--tasks", action="append", default=[], metavar="REGEX",
                        help="fetch the datasets of tasks whose full name matches (repeatable)")
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--to", metavar="MIRROR",
                        help="the mirror: a folder or any fsspec URL (gs://, s3://)")
    target.add_argument("--verify", metavar="MIRROR",
                        help="check every snapshot of MIRROR against its record instead")
    add_hub_option(parser)
    parser.add_argument("--force", action="store_true",
                        help="fetch datasets again even when their snapshot is intact, and "
                             "take over the mirror's lock from a run that died")
    parser.set_defaults(run=run)
