"""The cache builder against stock `seqio_cache_tasks` on T0-style tasks, and against the floor.

Same tasks (every template of app_reviews, dbpedia_14 and web_questions: 13 training tasks),
same generated rows (--rows per dataset, train split), same vocabulary, one DirectRunner
worker each. Prints examples per CPU-second for both and the ratio (target: 50x), peak memory,
and p3data's throughput against SentencePiece batch tokenization alone of the same text
(the floor; target: at least 50% of it).

    .venv/bin/python benchmarks/cache_vs_stock.py [--rows 20000] [--skip-stock]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import sentencepiece as spm
from common import DATASETS, run_measured, t0_tasks, write_mirror

from p3data.dataset_key import DatasetKey
from p3data.datasets.catalog import Catalog
from p3data.datasets.stores import MirrorStore
from p3data.templates import TemplateCollection
from p3data.templates.render import DatasetRenderer, Rendered
from p3data.tokenize.tokenizer import with_extra_ids
from p3data.vocab import SAMPLE_VOCAB

BIN = Path(sys.executable).parent
TASKS = "app_reviews_(?!.*score_eval).*|dbpedia_14_(?!.*score_eval).*|web_questions_.*"


@dataclass(frozen=True)
class BenchSet:
    """Datasets with all their templates, p3data's task regex for them, and the module that
    defines the same tasks the stock way (`t0style_<task>`: as T0 did)."""

    name: str
    datasets: list[DatasetKey]
    tasks: str
    stock_module: str
    stock_prefix: str = "t0style_"  # the stock module's names: this + p3data's task name


SHORT = BenchSet("short text", DATASETS, TASKS, "t0_style_tasks")


def zero_shot(bench: BenchSet) -> BenchSet:
    """The set with its T0 tasks only: its pattern would also build their few-shot variants."""
    return dataclasses.replace(bench, tasks=t0_tasks(bench.tasks))


def measure(command: list[str], env: dict[str, str]) -> tuple[float, float, int]:
    """(wall seconds, CPU seconds of the whole process tree, peak resident bytes)."""
    run = run_measured(command, env)
    return run.wall, run.cpu, run.memory.peak


def count_examples(cache: Path, split: str = "train") -> int:
    """Examples in the cache's `split` of every task (`split="*"`: of every split)."""
    return count_stats(cache, split, "examples")


def count_tokens(cache: Path, split: str = "train") -> int:
    """Input and target tokens in the cache's `split` of every task: what examples per
    CPU-second mean depends on their length, so sets of other lengths compare by tokens."""
    return count_stats(cache, split, "inputs_tokens", "targets_tokens")


def count_stats(cache: Path, split: str, *keys: str) -> int:
    import json

    return sum(stats.get(key, 0) for path in cache.rglob(f"stats.{split}.json")
               for stats in [json.loads(path.read_text())] for key in keys)


def rendered_texts(mirror: Path, datasets: list[DatasetKey]) -> list[str]:
    catalog, collection = Catalog.load(), TemplateCollection.default()
    texts = []
    for key in datasets:
        entry = catalog[key]
        store = MirrorStore(mirror, entry)
        rows = [row for shard in store.list_shards("train") for row in store.read("train", shard)]
        for outcomes in DatasetRenderer(collection[key]).render_batch(rows).values():
            for outcome in outcomes:
                if isinstance(outcome, Rendered):
                    texts += [outcome.inputs, outcome.targets]
    return texts


def floor_rate(texts: list[str], vocab: Path = SAMPLE_VOCAB, extra_ids: int = 100) -> float:
    """Examples per CPU-second of SentencePiece batch encoding alone (one thread), `extra_ids`
    added to the model as seqio adds them (T5's 100; mT5's model holds its own: 0)."""
    processor = spm.SentencePieceProcessor(
        model_proto=with_extra_ids(vocab.read_bytes(), extra_ids))
    start = time.process_time()
    for i in range(0, len(texts), 1024):
        processor.encode(texts[i:i + 1024], num_threads=1)
    return (len(texts) / 2) / (time.process_time() - start)


def environment(mirror: Path, vocab: Path) -> dict[str, str]:
    return {**os.environ, "P3DATA_VOCAB": str(vocab), "P3DATA_BENCH_MIRROR": str(mirror),
            "PYTHONPATH": str(Path(__file__).parent), "CUDA_VISIBLE_DEVICES": ""}


def ours_rate(bench: BenchSet, mirror: Path, work: Path, *, workers: int = 1,
              vocab: Path = SAMPLE_VOCAB) -> float:
    """`p3data cache` on the set: prints and returns examples per CPU-second."""
    examples, cpu = ours_build(bench, mirror, work, workers=workers, vocab=vocab)
    return examples / cpu


def ours_build(bench: BenchSet, mirror: Path, work: Path, *, workers: int = 1,
               vocab: Path = SAMPLE_VOCAB, options: tuple[str, ...] = (),
               out: Path | None = None) -> tuple[int, float]:
    """`p3data cache` on the set (with `options`) into `out` (default `work`/p3data-cache):
    prints and returns its examples and CPU-seconds."""
    out = out or work / "p3data-cache"
    shutil.rmtree(out, ignore_errors=True)
    beam = ([f"--direct_num_workers={workers}", "--direct_running_mode=multi_processing"]
            if workers > 1 else [])
    wall, cpu, peak = measure([str(BIN / "p3data"), "cache", "--data-dir", str(mirror),
                               "--vocab", str(vocab), "--tasks", bench.tasks, "--splits",
                               "train", "--output-dir", str(out), *options, *beam],
                              environment(mirror, vocab))
    examples = count_examples(out)
    print(f"p3data cache, {workers} worker(s): {examples:,} examples, {wall:7.1f} s wall, "
          f"{cpu:7.1f} CPU-s, {examples / cpu:8,.0f} examples/CPU-s "
          f"({count_tokens(out) / cpu:,.0f} tokens/CPU-s), peak {peak / 2**30:.2f} GiB")
    return examples, cpu


def stock_rate(bench: BenchSet, mirror: Path, work: Path, *, vocab: Path = SAMPLE_VOCAB) -> float:
    """Stock `seqio_cache_tasks` on the same tasks defined the stock way: examples per
    CPU-second."""
    out = work / "stock-cache"
    shutil.rmtree(out, ignore_errors=True)
    wall, cpu, peak = measure([str(BIN / "seqio_cache_tasks"),
                               f"--module_import={bench.stock_module}",
                               f"--tasks={bench.stock_prefix}(?:{bench.tasks})",
                               f"--output_cache_dir={out}", "--min_shards=1",
                               # the runner p3data runs for the DirectRunner (Beam's
                               # own would try to download Prism first)
                               "--pipeline_options=--runner=apache_beam.runners.portability."
                               "fn_api_runner.FnApiRunner"],
                              environment(mirror, vocab))
    examples = count_examples(out)
    print(f"stock seqio:       {examples:,} examples, {wall:7.1f} s wall, {cpu:7.1f} CPU-s, "
          f"{examples / cpu:8,.0f} examples/CPU-s, peak {peak / 2**30:.2f} GiB")
    return examples / cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--skip-stock", action="store_true")
    parser.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "p3data-bench"))
    args = parser.parse_args()
    work = Path(args.work)
    mirror = work / f"mirror-{args.rows}"
    write_mirror(mirror, SHORT.datasets, args.rows)
    print(f"rows: {args.rows:,} per dataset x {len(SHORT.datasets)} datasets (train split)")
    ours = ours_rate(zero_shot(SHORT), mirror, work)
    if not args.skip_stock:
        print(f"speed-up per core: {ours / stock_rate(SHORT, mirror, work):.1f}x (target 50x)")
    floor = floor_rate(rendered_texts(mirror, SHORT.datasets))
    print(f"floor (SentencePiece batch encode of the same text): {floor:,.0f} examples/CPU-s; "
          f"p3data reaches {100 * ours / floor:.0f}% of it (target 50%)")


if __name__ == "__main__":
    main()
