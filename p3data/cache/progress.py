"""A progress line for long cache runs, read from the markers workers leave as they finish.

Works with any runner whose workers write where the driver can read (local disk, gs://).
"""

from __future__ import annotations

import json
import sys
import threading
import time
from typing import TextIO

from p3data.cache import fs


def _duration(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m" if seconds >= 3600 else (
        f"{seconds // 60}m{seconds % 60:02d}s")


class Progress:
    """Prints `rows done/total (pct) · rows/s · ETA` every `interval` seconds while running."""

    def __init__(self, marker_glob: str, total_rows: int, interval: float = 10.0,
                 stream: TextIO = sys.stderr):
        self.marker_glob, self.total_rows = marker_glob, total_rows
        self.interval, self.stream = interval, stream
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._start = time.monotonic()
        self._seen: dict[str, int] = {}

    def __enter__(self) -> Progress:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.report()

    def rows_done(self) -> int:
        for path in fs.listdir(self.marker_glob):
            if path not in self._seen:
                try:
                    self._seen[path] = json.loads(fs.read_bytes(path))["rows"]
                except (OSError, ValueError, KeyError):
                    continue  # being written; next time
        return sum(self._seen.values())

    def report(self) -> None:
        done, elapsed = self.rows_done(), time.monotonic() - self._start
        rate = done / elapsed if elapsed else 0.0
        left = (self.total_rows - done) / rate if rate else float("nan")
        eta = _duration(left) if rate else "?"
        share = 100 * done / self.total_rows if self.total_rows else 100.0
        print(f"[p3data cache] rows {done:,}/{self.total_rows:,} ({share:.1f}%) · "
              f"{rate:,.0f} rows/s · elapsed {_duration(elapsed)} · ETA {eta}",
              file=self.stream, flush=True)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self.report()
