"""A progress line for long cache runs, read from the markers workers leave as they finish.

Works with any runner whose workers write where the driver can read (local disk, gs://).
Only this run's work counts: units an earlier run finished are reported apart, up front.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import TextIO

from p3data import fs


def duration(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m" if seconds >= 3600 else (
        f"{seconds // 60}m{seconds % 60:02d}s")


class Progress:
    """Every `interval` seconds: rows done of this run's rows, rate, ETA; then, once the rows
    are done, the final stage's task splits assembled."""

    def __init__(self, *, unit_markers: str, todo: dict[str, int], assembled_markers: str,
                 splits: int, interval: float = 10.0, stream: TextIO = sys.stderr):
        self.unit_markers, self.todo = unit_markers, todo  # todo: marker path -> rows
        self.assembled_markers, self.splits = assembled_markers, splits
        self.total_rows = sum(todo.values())
        self.interval, self.stream = interval, stream
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._start = time.monotonic()

    def __enter__(self) -> Progress:
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
