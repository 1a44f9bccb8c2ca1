"""p3data's tokenizer against SentencePiece batch encoding, per script, on xP3-like examples.

Rows of each script are paragraphs of a few to a dozen sentences drawn (seeded) from a file of
sentences in that script (default: `tests/data/scripts/*.txt`), joined by a space, or by nothing
in scripts written without spaces (Chinese, Japanese, Thai). Each row is rendered by eight
English prompts around it, as xP3's templates wrap a row's text, its target a sentence of the
same script; per batch of rows and prompt, the inputs and targets go in one call, as the cache
builder tokenizes them. Prints examples (an inputs and a targets text each) per CPU-second of
SentencePiece's batch `encode` and of p3data's `encode_packed` (what the cache asks for), and
checks that the ids are identical.

    .venv/bin/python benchmarks/multilingual_tokenize.py [--rows 2000] [--vocab MODEL]
        [--scripts DIR]

Without --vocab, a multilingual model is trained from the sentence files (as `p3data vocab
--text` does) with mT5's shape (extra ids inside the model, none added) and mT5's size: filler
pieces no text matches fill it to 250,100 pieces after its 500 most likely, so that most ids
of the rarer pieces are above 65,535, as mT5's are (their varints take three bytes).
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

import sentencepiece as spm

from p3data.tokenize import Tokenizer
from p3data.varints import packed
from p3data.vocab import MT5, train_vocabulary

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from helpers.scripts import SCRIPTS_DIR, UNSPACED, mt5_sized, script_sentences  # noqa: E402

BATCH = 500  # rows per call, per prompt
PROMPTS = [
    "{text}\nSummarize the text above in one sentence.",
    "Translate the following into English: {text}",
    "Text: {text}\nQuestion: what is this text about? Answer:",
    "{text} Is this sentence grammatical? Yes or no?",
    "Read the passage and write a title for it. {text}",
    "Passage: {text}\n\nContinue the story.",
    "{text}\nWhich language is this written in?",
    "Rewrite the text in simpler words. Text: {text}",
]


def script_rows(sentences: list[str], rows: int, *, unspaced: bool, seed: int = 0
                ) -> list[tuple[str, str]]:
    """(passage, target) per row: a seeded paragraph of the script's sentences, and one of them."""
    rng = random.Random(seed)
    joiner = "" if unspaced else " "
    return [(joiner.join(rng.choices(sentences, k=rng.randint(3, 12))), rng.choice(sentences))
            for _ in range(rows)]


def mt5_like_vocab(folder: Path, sentences: dict[str, list[str]]) -> Path:
    """The module's multilingual model (see its docstring) in `folder`, trained unless there."""
    model = folder / "scripts.model"
    if not model.exists():
        folder.mkdir(parents=True, exist_ok=True)
        train_vocabulary((line for lines in sentences.values() for line in lines), model,
                         vocab_size=4000, extra_ids=100)
        model.write_bytes(mt5_sized(model.read_bytes()))
    return model


def batches(rows: list[tuple[str, str]]) -> list[list[str]]:
    """Per batch of rows and prompt: the inputs, then the targets."""
    found = []
    for start in range(0, len(rows), BATCH):
        chunk = rows[start:start + BATCH]
        for prompt in PROMPTS:
            found.append([prompt.format(text=text) for text, _ in chunk]
                         + [target for _, target in chunk])
    return found


def measure(texts: list[list[str]], model: bytes, extra_ids: int) -> tuple[float, float]:
    """CPU seconds of SentencePiece's batch encode and of p3data's, having checked the ids."""
    from p3data.tokenize.tokenizer import with_extra_ids

    processor = spm.SentencePieceProcessor(model_proto=with_extra_ids(model, extra_ids))
    start = time.process_time()
    plain = [processor.encode(batch, num_threads=1) for batch in texts]
    plain_seconds = time.process_time() - start
    tokenizer = Tokenizer(model, extra_ids)
    start = time.process_time()
    ours = [tokenizer.encode_packed(batch) for batch in texts]
    ours_seconds = time.process_time() - start
    if [[entry.varints for entry in batch] for batch in ours] != [
            [packed(ids) for ids in batch] for batch in plain]:
        raise SystemExit("BUG: p3data's ids differ from SentencePiece's")
    return plain_seconds, ours_seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=2000, help="rows per script")
    parser.add_argument("--vocab", type=Path, help="SentencePiece model (its extra ids inside)")
    parser.add_argument("--scripts", type=Path, default=SCRIPTS_DIR,
                        help="a folder of <script>.txt files, one sentence a line")
    args = parser.parse_args()
    sentences = script_sentences(args.scripts)
    if args.vocab is None:
        args.vocab = mt5_like_vocab(Path(tempfile.mkdtemp(prefix="p3data-bench-")), sentences)
    model = args.vocab.read_bytes()
    print(f"{args.rows:,} rows per script x {len(PROMPTS)} prompts; vocabulary {args.vocab}")
    print(f"{'script':<11} {'spaced':<7} {'SentencePiece':>14} {'p3data':>10} {'ratio':>7}"
          "   (examples per CPU-second)")
    for name, lines in sentences.items():
        unspaced = name in UNSPACED
        texts = batches(script_rows(lines, args.rows, unspaced=unspaced))
        examples = sum(map(len, texts)) // 2
        plain, ours = measure(texts, model, MT5.extra_ids)
        print(f"{name:<11} {'no' if unspaced else 'yes':<7} {examples / plain:>14,.0f} "
              f"{examples / ours:>10,.0f} {plain / ours:>6.2f}x")


if __name__ == "__main__":
    main()
