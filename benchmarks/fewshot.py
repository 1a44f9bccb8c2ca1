"""Few-shot variants: `p3data cache` against stock seqio doing the same job, and against its
own zero-shot build of the same rows.

Sets: long text (every template of imdb and cnn_dailymail, 20 tasks) and short text (every
template of app_reviews, dbpedia_14 and web_questions, 13 tasks), generated train rows as in
`long_text.py`. For each set, in examples per CPU-second of the whole process tree, one
DirectRunner worker each, the sample vocabulary:
- p3data few-shot: the 1-, 3- and 5-shot variants of the set's tasks (`<task>_<k>shot`), pool
  stage included (each exemplar rendered and tokenized once per template);
- p3data zero-shot: the set's T0 tasks on the same rows;
- stock few-shot: `seqio_cache_tasks` on the same tasks as `fewshot_stock_tasks` defines them
  (seqio's `FewshotDataSource` + `fewshot_preprocessor` over the T0-style rendering of
  `t0_style_tasks`, FLAN's separators), the same k.
Targets (issue 22): p3data few-shot at least 50x stock few-shot; p3data few-shot at least half
of p3data zero-shot.

    .venv/bin/python benchmarks/fewshot.py [--rows 1000] [--short-rows 2000] [--skip-stock]
        [--stock-rows N]

--stock-rows: stock on the first N rows of the same mirror (its start-up is then a larger
share of its time, which flatters p3data). Stock's prompts are not fitted to the input length
and its exemplars may include the query: it does less work per example than p3data.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import tempfile
from pathlib import Path

from cache_vs_stock import SHORT, ours_rate, stock_rate, zero_shot
from common import write_mirror
from long_text import LONG

FEWSHOT = "_[135]shot"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=1_000, help="rows per long-text dataset")
    parser.add_argument("--short-rows", type=int, default=2_000,
                        help="rows per short-text dataset (0 skips the set)")
    parser.add_argument("--skip-stock", action="store_true")
    parser.add_argument("--stock-rows", type=int, help="rows per dataset for stock (default: all)")
    parser.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "p3data-bench"))
    args = parser.parse_args()
    work = Path(args.work)
    lines = []
    for bench, rows in ((LONG, args.rows), (SHORT, args.short_rows)):
        if not rows:
            continue
        mirror = work / f"mirror-{bench.name.replace(' ', '-')}-{rows}"
        write_mirror(mirror, bench.datasets, rows)
        print(f"== {bench.name}: {rows:,} rows of {', '.join(map(str, bench.datasets))}")
        zero_set = zero_shot(bench)
        fewshot = dataclasses.replace(bench, tasks=f"(?:{bench.tasks}){FEWSHOT}",
                                      stock_module="fewshot_stock_tasks")
        ours = ours_rate(fewshot, mirror, work)
        zero = ours_rate(zero_set, mirror, work)
        line = (f"{bench.name:10} p3data few-shot {ours:,.0f}, zero-shot {zero:,.0f}: "
                f"{ours / zero:.2f} of zero-shot (0.5)")
        if not args.skip_stock:
            stock_rows = min(args.stock_rows or rows, rows)
            stock_mirror = work / f"mirror-{bench.name.replace(' ', '-')}-{stock_rows}"
            write_mirror(stock_mirror, bench.datasets, stock_rows)
            stock = stock_rate(fewshot, stock_mirror, work)
            line += f"; stock few-shot {stock:,.1f}: {ours / stock:.1f}x stock (50x)"
        lines.append(line)
    print("\n".join(["== few-shot, examples per CPU-second", *lines]))


if __name__ == "__main__":
    main()
