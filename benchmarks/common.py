"""Shared pieces of the benchmarks: generated mirrors and process-tree memory sampling."""

from __future__ import annotations

import functools
import json
import resource
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import psutil

from p3data.dataset_key import DatasetKey
from p3data.datasets.catalog import Catalog
from p3data.datasets.samples import generate_rows

# Three of T0's training datasets, with all their templates (13 tasks): short texts.
DATASETS = [DatasetKey("app_reviews"), DatasetKey("dbpedia_14"), DatasetKey("web_questions")]
# A `--tasks` pattern matches few-shot variants' names (`<task>_<k>shot`) too, as seqio's does:
# this lookahead keeps T0's tasks only (tests/helpers/cache.py's `t0_only`).
T0_ONLY = r"(?!.*_[0-9]+shot$)"


def add_stock_task(name: str, dataset_fn, output_features: dict) -> None:
    """Registers a task the stock way, as the reference runs define theirs: rows rendered by
    `dataset_fn` (a `FunctionDataSource` of one split, `train`), then seqio's own tokenizing
    and EOS steps, cacheable by `seqio_cache_tasks`."""
    import seqio

    seqio.TaskRegistry.add(
        name,
        source=seqio.FunctionDataSource(dataset_fn, splits=["train"]),
        preprocessors=[seqio.preprocessors.tokenize, seqio.preprocessors.append_eos,
                       seqio.CacheDatasetPlaceholder(required=False)],
        output_features=output_features,
    )


def t0_tasks(pattern: str) -> str:
    """A `--tasks` pattern for the T0 tasks `pattern` matches, without their variants."""
    return f"{T0_ONLY}(?:{pattern})"


# Two with long texts (reviews of ~1,300 characters, news articles of ~4,000): 20 tasks.
LONG_DATASETS = [DatasetKey("imdb"), DatasetKey("cnn_dailymail", "3.0.0")]


def bench_rows(key: DatasetKey, rows: int, *, split: str = "train", seed: int = 0,
               prose: bool = False) -> Iterator[dict]:
    """`rows` generated rows of a dataset's `split`; with `prose`, each long free-text field
    is English-like `Prose` of the same length."""
    entry = Catalog.load()[key]
    writer = Prose(seed) if prose else None
    for row in generate_rows(entry, split, rows, seed):
        if writer:
            for name in entry.text_lengths:
                if isinstance(row.get(name), str):
                    row[name] = writer.text(len(row[name]))
        yield row


def write_mirror(root: Path, datasets, rows: int, *, split: str = "train", seed: int = 0,
                 prose: bool = False) -> None:
    """`bench_rows` of each dataset as a local JSON Lines mirror."""
    for key in datasets:
        write_split(root, key, split, rows, seed=seed, prose=prose)


def write_split(root: Path, key: DatasetKey, split: str, rows: int, *, seed: int = 0,
                prose: bool = False) -> None:
    """`bench_rows` of one dataset split into the mirror at `root`, unless it holds them
    already (a mirror is reused across runs: writing prose takes longer than a small build)."""
    folder = Path(key.folder(root))
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{split}.jsonl"
    if path.exists() and sum(1 for _ in path.open()) == rows:
        return
    partial = path.with_suffix(".jsonl.partial")  # a killed write is never taken for rows
    with partial.open("w") as handle:
        for row in bench_rows(key, rows, split=split, seed=seed, prose=prose):
            handle.write(json.dumps(row) + "\n")
    partial.replace(path)


class Prose:
    """Text whose words come as often as in English, for measuring the tokenizer's memo.

    Generated rows lengthen the samples' texts with their own few hundred words, and ten
    samples' sentences recur in every row: a memo finds far more there than in real text. Here
    each sentence is 6 to 30 words drawn by their English frequency (wordfreq's 100,000 most
    common words), so words recur as in real text and a sentence recurs only within a row.
    """

    ENDS, END_SHARES = [".", "?", "!"], [0.9, 0.05, 0.05]

    def __init__(self, seed: int, vocabulary: int = 100_000):
        self.words, self.cumulative = _english_words(vocabulary)
        self.rng = np.random.default_rng(seed)

    def text(self, chars: int) -> str:
        sentences, length = [], 0
        while length < chars:
            draws = self.rng.random(int(self.rng.integers(6, 31))) * self.cumulative[-1]
            words = [self.words[i] for i in np.searchsorted(self.cumulative, draws)]
            end = self.rng.choice(self.ENDS, p=self.END_SHARES)
            sentence = " ".join(words).capitalize() + str(end)
            sentences.append(sentence)
            length += len(sentence) + 1
        return " ".join(sentences)[:chars].rstrip()


@functools.cache
def _english_words(vocabulary: int) -> tuple[list[str], np.ndarray]:
    """English's `vocabulary` most common words and their cumulative frequencies: loaded once
    per process, as a mirror of many splits makes a `Prose` for each."""
    from wordfreq import top_n_list, word_frequency

    words = top_n_list("en", vocabulary)
    return words, np.cumsum([word_frequency(word, "en") for word in words])


def prose_vocab(work: Path) -> Path:
    """A 32,000-piece unigram vocabulary trained on `Prose` with T5's settings (nmt_nfkc, pad
    0, EOS 1, unknown 2), kept in `work`: as T5's is for English, unlike the sample vocabulary
    (7,241 pieces trained on the samples), which cuts most real words into pieces that tie."""
    import sentencepiece as spm

    model = work / "prose-vocab" / "prose32k.model"
    if not model.exists():
        model.parent.mkdir(parents=True, exist_ok=True)
        corpus = model.parent / "prose.txt"
        writer = Prose(seed=1)  # not the rows' seed
        corpus.write_text("".join(writer.text(500) + "\n" for _ in range(60_000)))
        spm.SentencePieceTrainer.train(
            input=str(corpus), model_prefix=str(model.with_suffix("")), vocab_size=32_000,
            model_type="unigram", normalization_rule_name="nmt_nfkc", character_coverage=1.0,
            pad_id=0, eos_id=1, unk_id=2, bos_id=-1, num_threads=1, minloglevel=2)
    return model


class PeakMemory:
    """Highest resident memory of a process and all its children, sampled every 0.2 s: of the
    whole tree (`peak`) and of each process (`peaks`, by pid, with `roles` from their command
    lines, and `peak_times`, seconds from the start to each peak, which tell the stage that
    holds it), since a Beam run's figure that matters is memory per worker process."""

    def __init__(self, pid: int):
        self.process = psutil.Process(pid)
        self.peak = 0
        self.peaks: dict[int, int] = {}
        self.peak_times: dict[int, float] = {}
        self.roles: dict[int, str] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self) -> PeakMemory:
        self._start = time.monotonic()
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def _sample(self) -> None:
        while not self._stop.wait(0.2):
            try:
                family = [self.process, *self.process.children(recursive=True)]
            except psutil.Error:
                continue
            total = 0
            for process in family:
                try:
                    rss = process.memory_info().rss
                    if process.pid not in self.roles:
                        self.roles[process.pid] = _role(process, self.process.pid)
                except psutil.Error:
                    continue
                total += rss
                if rss > self.peaks.get(process.pid, 0):
                    self.peaks[process.pid] = rss
                    self.peak_times[process.pid] = time.monotonic() - self._start
            self.peak = max(self.peak, total)

    def peak_of(self, role: str) -> int:
        """The highest peak of the processes of one role (0 if there was none)."""
        return max((peak for pid, peak in self.peaks.items() if self.roles[pid] == role),
                   default=0)

    def peak_time_of(self, role: str) -> float:
        """Seconds from the start to the highest peak of the processes of one role."""
        pid = max((pid for pid in self.peaks if self.roles[pid] == role),
                  key=self.peaks.__getitem__, default=None)
        return self.peak_times.get(pid, 0.0)


def _role(process: psutil.Process, root: int) -> str:
    """"driver" (the command itself), "worker" (a Beam SDK worker it started) or "other"."""
    if process.pid == root:
        return "driver"
    return "worker" if any("sdk_worker" in part for part in process.cmdline()) else "other"


@dataclass
class Measured:
    """A command's run: wall seconds, user and system CPU-seconds of its whole process tree
    (`getrusage` of waited-for children), memory, and its output lines with the wall time
    since the start at which each arrived (stages are told apart by them)."""

    wall: float
    user: float
    system: float
    memory: PeakMemory
    lines: list[tuple[float, str]]
    started: float  # time.time() at the start, to compare with files' modification times

    @property
    def cpu(self) -> float:
        return self.user + self.system

    def first(self, text: str) -> float | None:
        """Seconds from the start to the first output line holding `text`."""
        return next((at for at, line in self.lines if text in line), None)


def run_measured(command: list[str], env: dict[str, str]) -> Measured:
    """Run `command` to its end, measured; a failure exits with its output's tail."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started, start = time.time(), time.monotonic()
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    lines: list[tuple[float, str]] = []

    def collect(stream) -> None:
        for line in stream:
            lines.append((time.monotonic() - start, line.rstrip("\n")))

    readers = [threading.Thread(target=collect, args=(s,)) for s in (process.stdout,
                                                                      process.stderr)]
    with PeakMemory(process.pid) as memory:
        for reader in readers:
            reader.start()
        for reader in readers:
            reader.join()
        process.wait()
    wall = time.monotonic() - start
    if process.returncode:  # p3data says why on stdout, in its summary
        tail = "\n".join(line for _, line in lines[-60:])
        raise SystemExit(f"{command[0]} failed:\n{tail}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return Measured(wall, after.ru_utime - before.ru_utime, after.ru_stime - before.ru_stime,
                    memory, sorted(lines), started)
