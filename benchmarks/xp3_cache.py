"""`p3data cache` on xP3 tasks against stock `seqio_cache_tasks` (the same tasks defined the
stock way: `xp3_style_tasks`) and against the floor, SentencePiece batch encoding of the cache's
own output text; written with spaces and without, side by side.

Tasks: every template of XL-Sum's prompt folder (xP3: English prompts, 9) for the languages of
`xp3_style_tasks` (spaced: Arabic, Bengali, Hindi, Swahili, Tamil; unspaced: Chinese,
simplified and traditional), their one `train` split (XL-Sum's train and test). Rows:
XL-Sum's fields, the article a paragraph of 8 to 30 sentences of its script
(`tests/data/scripts/`, joined by a space, or by nothing in Chinese), title and summary one
sentence each. Vocabulary: `multilingual_tokenize`'s, trained
on those sentences and grown to mT5's 250,100 pieces. Targets (issue 32): at least 50x stock;
at least 1x the floor unspaced, 1.5x spaced. Needs xP3's templates installed (`P3DATA_HOME`)
and the fork's archive (`tests/helpers/template_sets.py`). Examples per CPU-second of the whole
process tree, one DirectRunner worker.

    .venv/bin/python benchmarks/xp3_cache.py [--rows 4000] [--stock-rows 1000] [--skip-stock]

--stock-rows: stock runs on the first N rows of each language (its start-up is then a larger
share, which flatters p3data; see `long_text.py`).
"""

from __future__ import annotations

import argparse
import functools
import itertools
import json
import os
import random
import sys
import tempfile
from pathlib import Path

from cache_vs_stock import BenchSet, floor_rate, ours_rate, stock_rate
from multilingual_tokenize import mt5_like_vocab
from xp3_style_tasks import DATASET, PREFIX, SPACED, UNSPACED

from p3data.dataset_key import DatasetKey
from p3data.read import open_cache
from p3data.vocab import MT5

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from helpers.scripts import script_sentences  # noqa: E402


def bench_set(name: str, languages: dict[str, str]) -> BenchSet:
    configs = "|".join(languages)
    return BenchSet(name, [DatasetKey(DATASET, config) for config in languages],
                    rf"xp3_GEM_xlsum_(?:{configs})_.*", "xp3_style_tasks", PREFIX)


# xP3's `train` task split reads XL-Sum's train and test splits, one after the other; XL-Sum's
# test split is about a tenth of its train split.
TEST_SHARE = 10


def write_rows(mirror: Path, languages: dict[str, str], rows: int,
               sentences: dict[str, list[str]], *, distinct: bool = False) -> None:
    """XL-Sum-shaped rows per language, `rows` in its train split and a tenth of that in its
    test split (see the module's docstring), seeded; kept if there.
    `distinct`: each sentence shuffled (`_scrambled`), so that sentences recur within a row
    only, as in real text, not across rows from the scripts' few sentences."""
    for (config, script), (split, count) in itertools.product(
            languages.items(), (("train", rows), ("test", rows // TEST_SHARE))):
        path = Path(DatasetKey(DATASET, config).folder(mirror)) / f"{split}.jsonl"
        if path.exists() and sum(1 for _ in path.open()) == count:
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        rng, lines = random.Random(f"{config}/{split}"), sentences[script]
        joiner = "" if script == "chinese" else " "
        pick = functools.partial(_scrambled, rng) if distinct else str
        with path.open("w") as handle:
            for i in range(count):
                target = pick(rng.choice(lines))
                handle.write(json.dumps({
                    "gem_id": f"{config}-{split}-{i}", "url": f"https://example.org/{i}",
                    "title": pick(rng.choice(lines)), "target": target, "references": [target],
                    "text": joiner.join(map(pick, rng.choices(lines, k=rng.randint(8, 30))))},
                    ensure_ascii=False) + "\n")


def _scrambled(rng: random.Random, line: str) -> str:
    """The line's words shuffled, or its characters where it has no spaces (its last, a full
    stop, kept last): words recur as in the script, sentences do not."""
    spaced = " " in line
    units = line[:-1].split(" ") if spaced else list(line[:-1])
    rng.shuffle(units)
    return (" " if spaced else "").join(units) + line[-1]


def output_texts(cache: Path) -> list[str]:
    """The inputs and targets of every example of a cache, as written."""
    texts, reader = [], open_cache(str(cache))
    for task in reader.tasks:
        for example in reader.split(task, "train"):
            texts += [example["inputs_pretokenized"], example["targets_pretokenized"]]
    return texts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=4000, help="rows per language")
    parser.add_argument("--stock-rows", type=int, default=1000)
    parser.add_argument("--skip-stock", action="store_true")
    parser.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "p3data-bench"))
    args = parser.parse_args()
    work = Path(args.work)
    sentences = script_sentences()
    vocab = mt5_like_vocab(work / "xp3-vocab", sentences)
    lines = []
    for bench, languages, floor_target in ((bench_set("spaced", SPACED), SPACED, 1.5),
                                           (bench_set("unspaced", UNSPACED), UNSPACED, 1.0)):
        mirror = work / f"xp3-mirror-{args.rows}"
        write_rows(mirror, languages, args.rows, sentences)
        print(f"== {bench.name}: {args.rows:,} rows of {', '.join(languages)}; vocabulary {vocab}")
        ours = ours_rate(bench, mirror, work, vocab=vocab)
        floor = floor_rate(output_texts(work / "p3data-cache"), vocab, MT5.extra_ids)
        print(f"the floor (SentencePiece batch encode of that cache's text): {floor:,.0f} "
              "examples/CPU-s")
        stock = None
        if not args.skip_stock:
            stock_mirror = work / f"xp3-mirror-{args.stock_rows}"
            write_rows(stock_mirror, languages, args.stock_rows, sentences)
            stock = stock_rate(bench, stock_mirror, work, vocab=vocab)
        versus = f"{ours / stock:6.1f}x stock (50x)" if stock else "stock skipped"
        lines.append(f"{bench.name:9} p3data {ours:,.0f}; {versus}; floor {floor:,.0f}: "
                     f"{ours / floor:.2f}x the floor ({floor_target:g}x)")
    print("\n".join(["== side by side (examples per CPU-second)", *lines]))


if __name__ == "__main__":
    main()
