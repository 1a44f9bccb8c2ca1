"""`p3data fetch`: verified snapshots of Hub datasets in a mirror, for `--data-dir`.

    p3data fetch (--mixture NAME | --tasks REGEX | DATASET[/SUBSET] ...) --to MIRROR
    p3data fetch --verify MIRROR

Each dataset's catalog splits are read from the parquet files the catalog pins on the Hub (or
under --hub-root), checked against the catalog (a drifted, partial, missing or script-only
dataset fails with the reason), and written as parquet to MIRROR/<dataset>[/<subset>]/ with
snapshot.json, written last, recording what was read and written. MIRROR is a folder or any
fsspec URL (gs://, s3://). A rerun skips datasets whose snapshot is intact (--force fetches
them again); one dataset's failure does not stop the others; exit 1 if any failed.
--verify re-checks every snapshot of a mirror against its record: exit 1 on any problem.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from p3data.commands.extras import require
from p3data.commands.options import add_hub_option
from p3data.errors import P3DataError

if TYPE_CHECKING:
    from p3data.datasets.catalog import Catalog, DatasetEntry

KINDS = ("fetched", "already verified", "skipped", "failed")


@dataclass(frozen=True)
class Outcome:
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


class Progress:
    """Rows written of the rows to write, bytes written and the ETA, on stderr (a terminal's:
    a log gets the summary only)."""

    def __init__(self, rows: int):
        from tqdm import tqdm

        self.bar = tqdm(total=rows, unit=" rows", unit_scale=True, file=sys.stderr,
                        disable=None, dynamic_ncols=True)
        self.rows = self.size = 0

    def written(self, rows: int, size: int) -> None:
        self.rows += rows
        self.size += size
        self.bar.set_postfix_str(f"{self.bar.format_sizeof(self.size, 'B', 1024)} written",
                                 refresh=False)
        self.bar.update(rows)

    def unwritten(self, rows: int) -> None:
        """`rows` will not be written after all (already there, skipped or failed)."""
        self.bar.total -= rows
        self.bar.refresh()

    @staticmethod
    def note(line: str) -> None:
        from tqdm import tqdm

        tqdm.write(f"[p3data fetch] {line}", file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    require("huggingface_hub", "pyarrow")
    if args.verify:
        if args.datasets or args.mixture or args.tasks:
            raise P3DataError("--verify checks a whole mirror: name no datasets, mixtures or "
                              "tasks with it")
        return verify(args.verify.rstrip("/") or args.verify)
    from p3data.datasets.catalog import Catalog

    entries = selection(Catalog.load(), args.datasets, args.mixture, args.tasks)
    return fetch(entries, args.to.rstrip("/") or args.to, hub_root=args.hub_root,
                 force=args.force)


def selection(catalog: Catalog, names: Sequence[str], mixtures: Sequence[str],
              patterns: Sequence[str]) -> list[DatasetEntry]:
    """Each dataset once, in the order asked: those named (a dataset with subsets stands for
    all of them), then those of the tasks chosen as `p3data cache` chooses them."""
    from p3data import t0
    from p3data.dataset_key import DatasetKey

    entries = []
    for name in names:
        key = DatasetKey.parse(name)
        subsets = [e for e in catalog if key.subset is None and e.dataset == key.dataset]
        entries += [catalog[key]] if key in catalog or not subsets else subsets
    if mixtures or patterns:
        entries += [spec.entry for spec in t0.select(t0.load_definitions(), mixtures, patterns)]
    if not entries:
        raise P3DataError("nothing to fetch: name datasets (e.g. trec super_glue/copa), "
                          "mixtures or task patterns", setting="tasks")
    return list({entry.key: entry for entry in entries}.values())


def fetch(entries: Sequence[DatasetEntry], mirror: str, *, hub_root: str | None,
          force: bool) -> int:
    """Snapshot every entry into `mirror` under a progress bar; print the summary."""
    from p3data import fs
    from p3data.tables import text_table

    asked = {entry.key: 0 if entry.manual_download else sum(entry.splits.values())
             for entry in entries}
    progress = Progress(sum(asked.values()))
    outcomes = []
    with progress.bar:
        for entry in entries:
            progress.bar.set_description(entry.name)
            before = progress.rows
            outcomes.append(_fetch_one(entry, mirror, hub_root=hub_root, force=force,
                                       progress=progress))
            progress.unwritten(asked[entry.key] - (progress.rows - before))
    print(text_table(["dataset", "splits", "rows", "bytes", "status"], [
        [o.dataset, o.splits, o.rows, o.size, o.status] for o in outcomes]))
    counts = Counter(outcome.kind for outcome in outcomes)
    print(f"{len(outcomes)} datasets: " + ", ".join(f"{counts[kind]} {kind}" for kind in KINDS)
          + f"; mirror {fs.canonical(mirror)}")
    return 1 if counts["failed"] else 0


def _fetch_one(entry: DatasetEntry, mirror: str, *, hub_root: str | None, force: bool,
               progress: Progress) -> Outcome:
    from p3data.datasets.fetch import snapshot

    if entry.manual_download:
        source = entry.manual_download.get("url", "see the catalog")
        where = f"{entry.key.folder(mirror)}/<split>.jsonl"
        return Outcome(entry.name, "skipped",
                       f"a manual download ({source}); place its rows by hand as {where}")
    try:
        done = snapshot(entry, mirror, hub_root=hub_root, force=force,
                        on_rows=progress.written)
    except P3DataError as err:
        return Outcome(entry.name, "failed", str(err))
    record = done.record
    for line in record.drift:
        progress.note(f"{entry.name}: accepted drift from T0's rows: {line}")
    if done.fetched and not record.commit_resolved:
        progress.note(f"{entry.name}: read {record.source} at {record.commit}, a revision "
                      "name, not a commit SHA: the snapshot is unresolved")
    return Outcome(entry.name, "fetched" if done.fetched else "already verified",
                   splits=len(record.splits), rows=record.rows, size=record.size)


def verify(mirror: str) -> int:
    """Check every snapshot of `mirror`: one line per problem, then a summary."""
    from p3data.datasets.fetch import verify_mirror

    check = verify_mirror(mirror)
    for line in check.problems:
        print(line)
    count = len(check.problems)
    verdict = f"FAILED: {count} problem{'s' * (count != 1)}" if count else "OK"
    print(f"{len(check.records)} snapshots, {check.files} files: {verdict}")
    return 1 if check.problems else 0


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
                        help="fetch datasets again even when their snapshot is intact")
    parser.set_defaults(run=run)
