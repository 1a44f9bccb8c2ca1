"""Long-text and short-text T0-style tasks side by side: `p3data cache` (1 and 2 workers)
against stock `seqio_cache_tasks` (tasks defined as T0 did) and against the floor, SentencePiece
batch encoding of the same rendered text; then the tokenizer memo's figures on the long text.

Long text: every template of imdb and cnn_dailymail (20 training tasks), lengths from the
catalog; short text: `cache_vs_stock.py`'s 13 tasks. Targets (issue 11): at least 50x stock on
both, at least 1.5x the floor on long text. Figures are examples per CPU-second of the whole
process tree.

    .venv/bin/python benchmarks/long_text.py [--rows 20000] [--short-rows 20000] [--skip-stock]
        [--stock-rows N] [--prose]

--stock-rows: stock runs on the first N rows of the same mirror, for a quick look: at 20,000
rows per dataset it runs for about 20 minutes on each set. Its start-up is then a larger share,
so a smaller run flatters p3data (long text: 250 examples/CPU-s at 2,000 rows, 313 at 20,000).
--prose: the long texts are English-like prose (`common.Prose`), words recurring as in real
text and sentences only within a row, tokenized with a 32k vocabulary trained on such prose
(`common.prose_vocab`, as T5's is trained on English): the memo finds what it would in real
data. Generated rows otherwise repeat their samples' sentences and few hundred words.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

from cache_vs_stock import (
    SHORT,
    BenchSet,
    floor_rate,
    ours_rate,
    rendered_texts,
    stock_rate,
    zero_shot,
)
from common import LONG_DATASETS, prose_vocab, write_mirror
from tokenize_memo import measure, rendered_batches

from p3data.vocab import SAMPLE_VOCAB

LONG = BenchSet("long text", LONG_DATASETS, r"imdb_(?!.*score_eval).*|cnn_dailymail_3\.0\.0_.*",
                "t0_style_long_tasks")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=20_000, help="rows per long-text dataset")
    parser.add_argument("--short-rows", type=int, default=20_000, help="0 skips the short set")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--skip-stock", action="store_true")
    parser.add_argument("--stock-rows", type=int, help="rows per dataset for stock (default: all)")
    parser.add_argument("--prose", action="store_true", help="English-like long texts")
    parser.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "p3data-bench"))
    args = parser.parse_args()
    work = Path(args.work)
    lines = []
    for bench, rows in ((LONG, args.rows), (SHORT, args.short_rows)):
        if not rows:
            continue
        prose = args.prose and bench is LONG
        name = f"mirror-{bench.name.replace(' ', '-')}{'-prose' if prose else ''}"
        mirror = work / f"{name}-{rows}"
        write_mirror(mirror, bench.datasets, rows, prose=prose)
        vocab = prose_vocab(work) if prose else SAMPLE_VOCAB
        print(f"== {bench.name}: {rows:,} rows of {', '.join(map(str, bench.datasets))}"
              f"{' (prose)' if prose else ''}; vocabulary {vocab}")
        ours = [ours_rate(zero_shot(bench), mirror, work, workers=n, vocab=vocab)
                for n in args.workers]
        stock = None
        if not args.skip_stock:
            stock_rows = min(args.stock_rows or rows, rows)
            stock_mirror = work / f"{name}-{stock_rows}"  # the same rows' first stock_rows
            write_mirror(stock_mirror, bench.datasets, stock_rows, prose=prose)
            stock = stock_rate(bench, stock_mirror, work, vocab=vocab)
        floor = floor_rate(rendered_texts(mirror, bench.datasets), vocab)
        versus = f"{ours[0] / stock:6.1f}x stock (50x)" if stock else "stock skipped"
        lines.append(f"{bench.name:10} p3data {' / '.join(f'{r:,.0f}' for r in ours)} "
                     f"({' / '.join(map(str, args.workers))} workers); {versus}; "
                     f"floor {floor:,.0f}: {ours[0] / floor:.2f}x the floor (1.5x on long text)")
    print("\n".join(["== side by side (examples per CPU-second)", *lines]))
    print("== tokenizer memo on the long text (one process)")
    batches = rendered_batches(LONG.datasets, args.rows, prose=args.prose)
    vocab = prose_vocab(work) if args.prose else SAMPLE_VOCAB
    print(measure(batches, vocab.read_bytes()).report())


if __name__ == "__main__":
    main()
