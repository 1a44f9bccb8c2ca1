"""Progress of long runs, on stderr: a bar for work this process counts against a total it
knows (`p3data export`, `fetch`), a line every few seconds for work it counts without one
(`compare`, `index`), and a line every few seconds for work other processes do, read from the
markers they leave as they finish (`p3data cache`'s workers, on any runner whose workers write
where the driver can read: local disk, gs://). `duration` is how every progress line and
summary shows elapsed time.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Mapping
from typing import TextIO

from p3data import fs


def duration(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m" if seconds >= 3600 else (
        f"{seconds // 60}m{seconds % 60:02d}s")


class ProgressBar:
    """Work done of the work to do, named by the item in hand (a task, a dataset), on stderr: a
    terminal's, so a log gets the summary only. Each item is expected to do an amount of work;
    what it does not do after all (already done, skipped, failed) leaves the total, which keeps
    the ETA honest."""

    def __init__(self, expected: Mapping[str, int], *, unit: str, label: str):
        from tqdm import tqdm

        self.expected, self.items, self.label = dict(expected), list(expected), label
        self.bar = tqdm(total=sum(self.expected.values()), unit=f" {unit}", unit_scale=True,
                        file=sys.stderr, disable=None, dynamic_ncols=True,
                        desc=self.items[0] if self.items else None)
        self.in_item = 0
        self.size = 0

    def __enter__(self) -> ProgressBar:
        return self

    def __exit__(self, *exc) -> None:
        self.bar.close()

    def advance(self, amount: int, size: int | None = None) -> None:
        """`amount` more work done in the item in hand; `size`, when given, the bytes that
        wrote (their running total is shown)."""
        self.in_item += amount
        if size is not None:
            self.size += size
            self.bar.set_postfix_str(f"{self.bar.format_sizeof(self.size, 'B', 1024)} written",
                                     refresh=False)
        self.bar.update(amount)

    def finish(self, item: str) -> None:
        """`item` is over: the work it did not do leaves the total; the bar names the next."""
        self.bar.total -= self.expected[item] - self.in_item
        self.in_item = 0
        following = self.items.index(item) + 1
        if following < len(self.items):
            self.bar.set_description(self.items[following], refresh=False)
        self.bar.refresh()

    def note(self, line: str) -> None:
        """A line above the bar."""
        from tqdm import tqdm

        tqdm.write(f"[{self.label}] {line}", file=sys.stderr)


class ProgressLine:
    """Work this process counts with no total worth a bar: a line on `stream` at most every
    `every` seconds (0: at every update), with how much is done, its rate, what else the caller
    says (its `status`) and the time elapsed."""

    def __init__(self, label: str, *, unit: str, every: float, stream: TextIO = sys.stderr,
                 status: str = ""):
        self.label, self.unit, self.every, self.stream = label, unit, every, stream
        self.status, self.done = status, 0
        self.start = self.last = time.monotonic()

    def update(self, amount: int = 1, *, status: str | None = None) -> None:
        """`amount` more done (0: only the status changed); a line if one is due."""
        self.done += amount
        if status is not None:
            self.status = status
        now = time.monotonic()
        if now - self.last >= self.every:
            self.last = now
            elapsed = now - self.start
            rate = self.done / elapsed if elapsed else 0.0
            parts = [f"{self.done:,} {self.unit}", f"{rate:,.0f}/s", self.status,
                     f"elapsed {duration(elapsed)}"]
            print(f"[{self.label}] " + " · ".join(part for part in parts if part),
                  file=self.stream, flush=True)


class MarkerProgress:
    """Every `interval` seconds: rows done of this run's rows, rate, ETA; then, once the rows
    are done, the final stage's task splits assembled. Only this run's work counts: units an
    earlier run finished are reported apart, up front."""

    def __init__(self, *, unit_markers: str, todo: dict[str, int], assembled_markers: str,
                 splits: int, interval: float = 10.0, stream: TextIO = sys.stderr):
        self.unit_markers, self.todo = unit_markers, todo  # todo: marker path -> rows
        self.assembled_markers, self.splits = assembled_markers, splits
        self.total_rows = sum(todo.values())
        self.interval, self.stream = interval, stream
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._start = time.monotonic()

    def __enter__(self) -> MarkerProgress:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.report()

    def rows_done(self) -> int:
        return sum(self.todo.get(path, 0) for path in fs.glob(self.unit_markers))

    def report(self) -> None:
        done, elapsed = self.rows_done(), time.monotonic() - self._start
        assembled = len(fs.glob(self.assembled_markers))
        if done < self.total_rows or not self.total_rows and not assembled:
            rate = done / elapsed if elapsed else 0.0
            eta = duration((self.total_rows - done) / rate) if rate else "?"
            share = 100 * done / self.total_rows if self.total_rows else 100.0
            line = (f"rows {done:,}/{self.total_rows:,} ({share:.1f}%) · {rate:,.0f} rows/s · "
                    f"elapsed {duration(elapsed)} · ETA {eta}")
        else:
            line = (f"rows {done:,}/{self.total_rows:,} done · task splits assembled "
                    f"{assembled:,}/{self.splits:,} · elapsed {duration(elapsed)}")
        print(f"[p3data cache] {line}", file=self.stream, flush=True)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self.report()
