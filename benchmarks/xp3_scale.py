"""xP3 at scale, projected: CPU-hours of `p3data cache` for all of xP3's training tasks (and
xP3mt's), from the catalog's sizes per language and rates measured per script.

The sizes: every training task of the collection, its splits at the catalog's sizes capped
as the recipe caps them (`projection.catalog_examples`, as `p3data plan` counts them; a split
of unknown size at the plan's placeholder, 100,000, capped), summed per language folder. Chinese
(`zh`) is xP3's one language written without spaces; every other folder is taken as spaced.
The rates: `xp3_cache.py`'s set (XL-Sum's 9 templates for five spaced languages and both
Chinese ones), built twice per kind, at `--rows` LOW and HIGH rows per language, with
sentences shuffled per row (`write_rows(distinct=True)`) so that they recur within a row
only, as in real text. The line through the two builds' (examples, CPU-s) splits a build's
cost into a fixed part (start-up, both xP3 sets' tasks, plan) and a cost per example; the
projection is one fixed part plus each language's examples at its kind's cost, against the
floor (SentencePiece batch encoding alone of the HIGH build's output text) at the same
examples. What it leaves out: the fixed cost per task split (8,040 of them against these
builds' 63; `p3_scale.py` measures T0's), and prompt lengths other than XL-Sum's.

    .venv/bin/python benchmarks/xp3_scale.py [--rows 250 2000] [--work DIR]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from cache_vs_stock import BenchSet, floor_rate, ours_build
from multilingual_tokenize import mt5_like_vocab
from xp3_cache import bench_set, output_texts, write_rows
from xp3_style_tasks import SPACED, UNSPACED

from p3data.quality.projection import catalog_examples
from p3data.tables import text_table
from p3data.taskset import load_definitions
from p3data.vocab import MT5

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from helpers.scripts import script_sentences  # noqa: E402

UNKNOWN_SPLIT = 100_000  # `p3data plan`'s placeholder for a split of unknown size
UNSPACED_LANGUAGES = {"zh"}  # xP3's folders written without spaces (no ja, no th)


def language_examples(collection: str) -> dict[str, int]:
    """Training examples per language folder of a collection, by the catalog (see above)."""
    examples: dict[str, int] = {}
    for spec in load_definitions([collection]).select(patterns=[".*"]):
        if spec.language is None:
            continue
        count = catalog_examples(spec)
        if count is None:
            cap = spec.split_cap.cap if spec.split_cap else UNKNOWN_SPLIT
            count = sum(min(spec.entry.splits.get(split) or UNKNOWN_SPLIT, cap)
                        for split in spec.split_mapping.values())
        examples[spec.language] = examples.get(spec.language, 0) + count
    return examples


@dataclass
class KindCost:
    """A kind of script's cost line: fixed CPU-s per build and CPU-s per example, and the
    floor's examples per CPU-second."""

    name: str
    fixed: float
    per_example: float
    floor: float


def measure_kind(bench: BenchSet, languages: dict[str, str], *, rows: tuple[int, int],
                 work: Path, vocab: Path, sentences: dict[str, list[str]]) -> KindCost:
    """The cost line through builds at both row counts, and the floor at the larger."""
    runs = []
    for count in rows:
        mirror = work / f"xp3-scale-mirror-{count}"
        write_rows(mirror, languages, count, sentences, distinct=True)
        print(f"== {bench.name}: {count:,} rows of {', '.join(languages)}", flush=True)
        runs.append(ours_build(bench, mirror, work, vocab=vocab))
    (low_examples, low_cpu), (high_examples, high_cpu) = runs
    per_example = (high_cpu - low_cpu) / (high_examples - low_examples)
    floor = floor_rate(output_texts(work / "p3data-cache"), vocab, MT5.extra_ids)
    print(f"{bench.name}: {1e6 * per_example:,.0f} CPU-us per example "
          f"({1 / per_example:,.0f} examples/CPU-s at the margin), fixed "
          f"{low_cpu - per_example * low_examples:,.1f} CPU-s; the floor {floor:,.0f} "
          "examples/CPU-s", flush=True)
    return KindCost(bench.name, low_cpu - per_example * low_examples, per_example, floor)


def projection(collection: str, costs: dict[str, KindCost]) -> tuple[list[str], list[list]]:
    """Per kind of script and in all: examples, p3data's and the floor's CPU-hours."""
    by_kind = {"spaced": 0, "unspaced": 0}
    for language, count in language_examples(collection).items():
        by_kind["unspaced" if language in UNSPACED_LANGUAGES else "spaced"] += count
    fixed = max(cost.fixed for cost in costs.values())  # one build pays it once
    rows, ours_total, floor_total = [], fixed / 3600, 0.0
    for kind, count in by_kind.items():
        ours, floor = count * costs[kind].per_example / 3600, count / costs[kind].floor / 3600
        ours_total, floor_total = ours_total + ours, floor_total + floor
        rows.append([f"{collection} {kind}", f"{count:,}", f"{ours:,.2f}", f"{floor:,.2f}",
                     f"{floor / ours:.2f}x"])
    rows.append([f"{collection} in all (+{fixed:,.0f} CPU-s fixed)",
                 f"{sum(by_kind.values()):,}", f"{ours_total:,.2f}", f"{floor_total:,.2f}",
                 f"{floor_total / ours_total:.2f}x"])
    return ["", "examples", "p3data CPU-h", "floor CPU-h", "p3data vs floor"], rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, nargs=2, default=[250, 2000],
                        help="rows per language of the two builds per kind")
    parser.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "p3data-bench"))
    args = parser.parse_args()
    work = Path(args.work)
    sentences = script_sentences()
    vocab = mt5_like_vocab(work / "xp3-vocab", sentences)
    costs = {kind: measure_kind(bench_set(kind, languages), languages, rows=tuple(args.rows),
                                work=work, vocab=vocab, sentences=sentences)
             for kind, languages in (("spaced", SPACED), ("unspaced", UNSPACED))}
    for collection in ("xp3", "xp3mt"):
        header, rows = projection(collection, costs)
        print(text_table(header, rows))


if __name__ == "__main__":
    main()
