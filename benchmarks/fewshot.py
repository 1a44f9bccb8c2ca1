"""Few-shot variants: `p3data cache` against its own zero-shot build of the same rows, against
SentencePiece batch-encoding its own output text (the floor), and against stock seqio doing
the same job.

Sets (generated train rows as in `long_text.py`, every template of their datasets):
- long text: imdb and cnn_dailymail (20 tasks), the sample vocabulary: few queries need fitting;
- short text: app_reviews, dbpedia_14 and web_questions (13 tasks), the sample vocabulary;
- fitting: imdb and cnn_dailymail again, under seqio's test vocabulary
  (`seqio/test_data/sentencepiece/sentencepiece.model`): 26 pieces, about a token a character,
  so a 1,300-character review or a 4,000-character article is over the 1,024-token input length
  and nearly every query is fitted (its passage cut at a word boundary), as long documents are
  under T5's vocabulary (cnn_dailymail, multi_news, duorc...), at a size a benchmark can run.
For each set, side by side in one run, examples per CPU-second of the whole process tree and
peak memory per worker (one DirectRunner worker: the process itself):
- p3data few-shot: the 1-, 3- and 5-shot variants of the set's tasks (`<task>_<k>shot`), pool
  stage included (each exemplar rendered and tokenized once per template);
- p3data zero-shot: the set's T0 tasks on the same rows;
- the floor: SentencePiece's batch encode (one thread) of the few-shot build's own output, the
  inputs and targets of every example it wrote;
- stock few-shot: `seqio_cache_tasks` on the same tasks as `fewshot_stock_tasks` defines them
  (seqio's `FewshotDataSource` + `fewshot_preprocessor` over the T0-style rendering of
  `t0_style_tasks`, FLAN's separators), the same k, on the first --stock-rows rows.
Targets (issue 30): few-shot at least half of zero-shot, at least 1.5x the floor, peak memory
per worker at most 1.3x zero-shot's, at least 50x stock on every set. Then, in this process,
how each set's over-long queries were fitted (`QueryShortener.tally`: found in token space or
by the bisection, renders per fitted query) on its first --tally-rows rows.

    .venv/bin/python benchmarks/fewshot.py [--rows 3000] [--short-rows 6000]
        [--fitting-rows 3000] [--skip-stock] [--stock-rows 300] [--tally-rows 500]

--stock-rows: stock on the first N rows of the same mirror (stock runs at ~20 examples per
CPU-second: 300 rows per dataset take it ~15 minutes per set, its start-up a few percent of
that). Stock's prompts are not fitted to the input length and its exemplars may include the
query: it does less work per example than p3data.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import os
import shutil
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from cache_vs_stock import (
    BIN,
    SHORT,
    BenchSet,
    count_examples,
    environment,
    floor_rate,
    stock_rate,
    zero_shot,
)
from common import bench_rows, run_measured, write_mirror
from long_text import LONG

from p3data.datasets.catalog import Catalog
from p3data.fewshot import FewshotSettings
from p3data.fewshot.pool import PoolSource, build_pool
from p3data.fewshot.prompter import FewshotPrompter
from p3data.read import open_cache
from p3data.templates import TemplateCollection
from p3data.templates.render import DatasetRenderer, Rendered
from p3data.tokenize import Tokenizer
from p3data.vocab import EXTRA_IDS, SAMPLE_VOCAB

FEWSHOT = "_[135]shot"
DENSE_VOCAB = Path(os.path.dirname(importlib.util.find_spec("seqio").origin),
                   "test_data", "sentencepiece", "sentencepiece.model")
FITTING = dataclasses.replace(LONG, name="fitting")
SETS = {"long": (LONG, SAMPLE_VOCAB), "short": (SHORT, SAMPLE_VOCAB),
        "fitting": (FITTING, DENSE_VOCAB)}


@dataclass
class Built:
    """A `p3data cache` run: examples, CPU-seconds, peak resident bytes per worker."""

    examples: int
    cpu: float
    peak: int

    @property
    def rate(self) -> float:
        return self.examples / self.cpu


def build(bench: BenchSet, mirror: Path, out: Path, vocab: Path) -> Built:
    """`p3data cache` of the set's tasks over the mirror's train rows, one worker, measured."""
    shutil.rmtree(out, ignore_errors=True)
    run = run_measured([str(BIN / "p3data"), "cache", "--data-dir", str(mirror), "--vocab",
                        str(vocab), "--tasks", bench.tasks, "--splits", "train",
                        "--output-dir", str(out)], environment(mirror, vocab))
    peak = max(run.memory.peak_of("worker"), run.memory.peak_of("driver"))
    built = Built(count_examples(out), run.cpu, peak)
    print(f"  {bench.tasks[:40]:40} {built.examples:9,} examples {run.cpu:7.1f} CPU-s "
          f"{built.rate:8,.0f} examples/CPU-s, peak {peak / 2**20:,.0f} MiB per worker")
    return built


def output_texts(cache: Path) -> list[str]:
    """The inputs and targets of every example the cache holds, in pairs."""
    reader, texts = open_cache(str(cache)), []
    for task in reader.tasks:
        for split in reader.splits(task):
            for example in reader.split(task, split).examples(["inputs_pretokenized",
                                                               "targets_pretokenized"]):
                texts += [example["inputs_pretokenized"], example["targets_pretokenized"]]
    return texts


def fitting_tally(bench: BenchSet, vocab: Path, rows: int) -> Counter:
    """How the set's over-long queries were fitted, in this process, as the cache fits them:
    every template's queries over its first `rows` rows, the pool their own split's."""
    catalog, collection = Catalog.load(), TemplateCollection.default()
    tokenizer, settings, tally = Tokenizer(vocab.read_bytes(), EXTRA_IDS), FewshotSettings(
        shots=(1, 3, 5)), Counter()
    for key in bench.datasets:
        entry, data = catalog[key], list(bench_rows(key, rows))
        renderer = DatasetRenderer(collection[key])
        for name, outcomes in renderer.render_each(data):
            prompter = FewshotPrompter(
                task=name, split="train", template=renderer.templates[name],
                pool=build_pool([outcomes], settings, tokenizer), source=PoolSource("train", True),
                settings=settings, tokenizer=tokenizer, long_fields=entry.text_lengths)
            kept = [(data[o.index], o) for o in outcomes if isinstance(o, Rendered)]
            for start in range(0, len(kept), 512):
                prompter.prompts(kept[start:start + 512])
            tally += prompter.shortener.tally
    return tally


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=3_000, help="rows per long-text dataset")
    parser.add_argument("--short-rows", type=int, default=6_000,
                        help="rows per short-text dataset (0 skips the set)")
    parser.add_argument("--fitting-rows", type=int, default=3_000,
                        help="rows per dataset of the fitting set (0 skips the set)")
    parser.add_argument("--skip-stock", action="store_true")
    parser.add_argument("--stock-rows", type=int, default=300,
                        help="rows per dataset for stock")
    parser.add_argument("--tally-rows", type=int, default=500,
                        help="rows per dataset for the fitting tally (0 skips it)")
    parser.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "p3data-bench"))
    args = parser.parse_args()
    work = Path(args.work)
    lines = []
    sizes = {"long": args.rows, "short": args.short_rows, "fitting": args.fitting_rows}
    for name, (bench, vocab) in SETS.items():
        rows = sizes[name]
        if not rows:
            continue
        mirror = work / f"mirror-{bench.datasets[0].dataset}-{len(bench.datasets)}-{rows}"
        write_mirror(mirror, bench.datasets, rows)
        print(f"== {name}: {rows:,} rows of {', '.join(map(str, bench.datasets))}; "
              f"vocabulary {vocab}")
        fewshot = dataclasses.replace(bench, tasks=f"(?:{bench.tasks}){FEWSHOT}",
                                      stock_module="fewshot_stock_tasks")
        few = build(fewshot, mirror, work / "p3data-fewshot", vocab)
        floor = floor_rate(output_texts(work / "p3data-fewshot"), vocab)
        zero = build(zero_shot(bench), mirror, work / "p3data-zeroshot", vocab)
        line = (f"{name:8} few-shot {few.rate:7,.0f}, zero-shot {zero.rate:7,.0f}: "
                f"{few.rate / zero.rate:.2f}x zero-shot (0.5); floor {floor:7,.0f}: "
                f"{few.rate / floor:.2f}x (1.5); peak {few.peak / 2**20:,.0f} MiB vs "
                f"{zero.peak / 2**20:,.0f}: {few.peak / zero.peak:.2f}x (1.3)")
        if not args.skip_stock:
            stock_rows = min(args.stock_rows, rows)
            stock_mirror = work / f"{mirror.name}-stock-{stock_rows}"
            write_mirror(stock_mirror, bench.datasets, stock_rows)
            stock = stock_rate(fewshot, stock_mirror, work, vocab=vocab)
            line += f"; stock {stock:,.1f}: {few.rate / stock:,.0f}x (50x)"
        lines.append(line)
    print("\n".join(["== few-shot, examples per CPU-second", *lines]))
    for name, (bench, vocab) in SETS.items():
        if args.tally_rows and sizes[name]:
            tally = fitting_tally(bench, vocab, args.tally_rows)
            fitted = tally["estimated"] + tally["bisected"]
            print(f"== {name}, first {args.tally_rows:,} rows per dataset: {fitted:,} queries "
                  f"fitted, {tally['estimated']:,} in token space, {tally['bisected']:,} by the "
                  f"bisection; {tally['renders'] / max(fitted, 1):.2f} renders per fitted query")


if __name__ == "__main__":
    main()
