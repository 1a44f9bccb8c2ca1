"""Memoized tokenization against plain SentencePiece batch encoding, on rendered T0 text.

Generated rows of long-text datasets (default: imdb and cnn_dailymail, lengths from the
catalog) rendered by all their templates and tokenized as the cache builder does: per batch of
rows and template, the inputs and targets in one call. Prints the CPU seconds of both, the
speed-up (ids, and ids packed as varints as the cache asks for them), the memos' hit rates,
the texts still encoded plainly and the memory the memos hold (Python allocations, traced in a
second pass), and checks that the ids are identical.

    .venv/bin/python benchmarks/tokenize_memo.py [--rows 2000] [--prose] [--vocab MODEL]
        [DATASET ...]

--prose: long text fields as English-like prose (`common.Prose`) instead of the samples'
words, tokenized with a vocabulary trained on such prose (`common.prose_vocab`) unless --vocab
is given: the memo finds what it would in real text.
"""

from __future__ import annotations

import argparse
import tempfile
import time
import tracemalloc
from dataclasses import dataclass
from pathlib import Path

import sentencepiece as spm
from common import LONG_DATASETS, bench_rows, prose_vocab

from p3data.batching import batched
from p3data.dataset_key import DatasetKey
from p3data.templates import TemplateCollection
from p3data.templates.render import DatasetRenderer, Rendered
from p3data.tokenize import Tokenizer
from p3data.tokenize.memo import MemoStats
from p3data.tokenize.tokenizer import with_extra_ids
from p3data.varints import packed
from p3data.vocab import EXTRA_IDS, SAMPLE_VOCAB


def rendered_batches(keys: list[DatasetKey], rows: int, *, prose: bool = False
                     ) -> list[list[str]]:
    """Per batch of rows and template: the inputs, then the targets (`rows` generated rows of
    each dataset's train split, the rows `common.write_mirror` writes)."""
    collection = TemplateCollection.default()
    batches = []
    for key in keys:
        renderer = DatasetRenderer(collection[key])
        for chunk in batched(bench_rows(key, rows, prose=prose)):
            for outcomes in renderer.render_batch(chunk).values():
                kept = [o for o in outcomes if isinstance(o, Rendered)]
                batches.append([o.inputs for o in kept] + [o.targets for o in kept])
    return batches


@dataclass
class Figures:
    texts: int
    plain_seconds: float
    memo_seconds: float
    packed_seconds: float
    stats: MemoStats
    memory: int

    def report(self) -> str:
        stats = self.stats
        return "\n".join([
            f"texts: {self.texts:,}",
            f"plain SentencePiece batch encode: {self.plain_seconds:7.2f} CPU-s",
            f"memoized (identical ids):         {self.memo_seconds:7.2f} CPU-s, "
            f"{self.plain_seconds / self.memo_seconds:.2f}x faster",
            f"memoized, packed as varints:      {self.packed_seconds:7.2f} CPU-s, "
            f"{self.plain_seconds / self.packed_seconds:.2f}x faster (what the cache uses)",
            f"sentence memo hits: {1 - stats.new_pieces / max(stats.pieces, 1):6.1%} of "
            f"{stats.pieces:,} lookups (first sentences, runs of sentences, rests); "
            f"{stats.new_sentences:,} sentences segmented",
            f"word memo hits (new sentences): {1 - stats.new_words / max(stats.words, 1):6.1%} "
            f"of {stats.words:,}",
            f"of the {stats.texts:,} texts the memo saw (short texts have a memo of their own): "
            f"{stats.resegmented_texts / max(stats.texts, 1):.2%} with tied words segmented "
            f"again in place, {stats.plain_texts / max(stats.texts, 1):.2%} encoded plainly",
            f"memo memory: {self.memory / 2**20:.1f} MiB of Python objects",
        ])


def measure(batches: list[list[str]], model: bytes) -> Figures:
    processor = spm.SentencePieceProcessor(model_proto=with_extra_ids(model, EXTRA_IDS))
    start = time.process_time()
    plain = [processor.encode(batch, num_threads=1) for batch in batches]
    plain_seconds = time.process_time() - start
    tokenizer = Tokenizer(model, EXTRA_IDS)
    if tokenizer.memo is None:
        raise SystemExit("this model is encoded plainly (see the log): nothing to compare")
    start = time.process_time()
    ours = [tokenizer.encode(batch) for batch in batches]
    memo_seconds = time.process_time() - start
    if ours != plain:
        raise SystemExit("BUG: the memoized ids differ from SentencePiece's")
    packer = Tokenizer(model, EXTRA_IDS)
    start = time.process_time()
    packed_ids = [packer.encode_packed(batch) for batch in batches]
    packed_seconds = time.process_time() - start
    if [[p.varints for p in batch] for batch in packed_ids] != [
            [packed(ids) for ids in batch] for batch in plain]:
        raise SystemExit("BUG: the memoized packed ids differ from SentencePiece's")
    del plain, ours, packed_ids
    tracemalloc.start()
    traced = Tokenizer(model, EXTRA_IDS)
    for batch in batches:
        traced.encode(batch)
    memory = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    return Figures(sum(map(len, batches)), plain_seconds, memo_seconds, packed_seconds,
                   tokenizer.memo.stats, memory)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("datasets", nargs="*", help="DATASET[/SUBSET]; default: imdb, "
                        "cnn_dailymail/3.0.0")
    parser.add_argument("--rows", type=int, default=2000, help="generated rows per dataset")
    parser.add_argument("--prose", action="store_true", help="English-like long texts")
    parser.add_argument("--vocab", type=Path)
    parser.add_argument("--work", type=Path,
                        default=Path(tempfile.gettempdir()) / "p3data-bench")
    args = parser.parse_args()
    keys = [DatasetKey.parse(k) for k in args.datasets] or LONG_DATASETS
    args.vocab = args.vocab or (prose_vocab(args.work) if args.prose else SAMPLE_VOCAB)
    print(f"{args.rows:,} rows of {', '.join(map(str, keys))}, all templates"
          f"{', prose' if args.prose else ''}; vocabulary {args.vocab}")
    batches = rendered_batches(keys, args.rows, prose=args.prose)
    print(measure(batches, args.vocab.read_bytes()).report())


if __name__ == "__main__":
    main()
