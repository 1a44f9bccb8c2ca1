"""Shared pieces of the benchmarks: generated mirrors and process-tree memory sampling."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import psutil

from p3data.dataset_key import DatasetKey
from p3data.datasets.catalog import Catalog
from p3data.datasets.samples import generate_rows

# Three of T0's training datasets, with all their templates (13 tasks): short texts.
DATASETS = [DatasetKey("app_reviews"), DatasetKey("dbpedia_14"), DatasetKey("web_questions")]
# Two with long texts (reviews of ~1,300 characters, news articles of ~4,000): 20 tasks.
LONG_DATASETS = [DatasetKey("imdb"), DatasetKey("cnn_dailymail", "3.0.0")]


def write_mirror(root: Path, datasets, rows: int, *, split: str = "train", seed: int = 0) -> None:
    """`rows` generated rows of `split` for each dataset, as a local JSON Lines mirror."""
    catalog = Catalog.load()
    for key in datasets:
        folder = Path(key.folder(root))
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{split}.jsonl"
        if path.exists() and sum(1 for _ in path.open()) == rows:
            continue
        with path.open("w") as handle:
            for row in generate_rows(catalog[key], split, rows, seed):
                handle.write(json.dumps(row) + "\n")


class PeakMemory:
    """Highest resident memory of a process and all its children, sampled every 0.2 s."""

    def __init__(self, pid: int):
        self.process = psutil.Process(pid)
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self) -> PeakMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def _sample(self) -> None:
        while not self._stop.wait(0.2):
            try:
                family = [self.process, *self.process.children(recursive=True)]
                self.peak = max(self.peak, sum(p.memory_info().rss for p in family))
            except psutil.Error:
                continue
