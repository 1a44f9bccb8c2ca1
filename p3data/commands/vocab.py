"""`p3data vocab`: train an offline SentencePiece model on the rendered samples.

T0's by default (`p3data/data/vocab/sample.model`); `--collection xp3|xp3mt` trains one shaped
as that collection's vocabulary is (mT5's: its 100 extra ids inside the model) on what its tasks
make of the bundled samples that exist for its datasets, and on `--text` files, one text a line.
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

from p3data.commands.options import positive_int, writing
from p3data.errors import P3DataError

T0 = "t0"


def collection_texts(name: str) -> Iterator[str]:
    """Every inputs and targets the collection's tasks make of the bundled samples (their
    templates, dataset steps and row rules, as `p3data render --collection` renders)."""
    from p3data.commands.render import render_rows, spec_renderers
    from p3data.datasets.samples import sample_rows, sample_splits
    from p3data.taskset import load_definitions
    from p3data.templates.render import Rendered

    by_dataset = defaultdict(list)
    for spec in load_definitions((name,)).part(name).tasks.values():
        by_dataset[spec.entry.key].append(spec)
    for key, specs in by_dataset.items():
        if not (splits := sample_splits(key)):  # most of xP3's datasets: compile nothing
            continue
        _, renderers = spec_renderers(specs, seed=0)  # compiled once for all its splits
        for split in splits:
            outcomes = render_rows(renderers, sample_rows(key, split), 0)
            for per_row in outcomes:
                for outcome in per_row.values():
                    if isinstance(outcome, Rendered):
                        yield outcome.inputs
                        yield outcome.targets


def _texts(args: argparse.Namespace) -> tuple[list[str], int]:
    """The texts to train on and how many extra ids the model holds itself: T0's samples for
    collections with T5's vocabulary (T0's, its few-shot variants'), else the collection's."""
    from p3data.datasets.catalog import Catalog
    from p3data.datasets.samples import rendered_texts
    from p3data.taskset import load_definitions, one_vocabulary
    from p3data.templates import TemplateCollection
    from p3data.vocab import T5

    given = [line for path in args.text for line in _read(path)]
    tasks = load_definitions((args.collection,)).part(args.collection).tasks.values()
    vocabulary = one_vocabulary(list(tasks))
    if vocabulary == T5:
        return [*rendered_texts(Catalog.load(), TemplateCollection.default()), *given], 0
    texts = [*collection_texts(args.collection), *given]
    if not texts:
        raise P3DataError(f"no sample rows of {args.collection}'s datasets are bundled, and no "
                          "--text given: give text in its languages, one a line")
    return texts, vocabulary.held_extra_ids


def _read(path: Path) -> list[str]:
    try:
        return path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as err:
        raise P3DataError(f"--text {path}: cannot read it as UTF-8 text ({err})") from None


def run(args: argparse.Namespace) -> int:
    from p3data.vocab import train_vocabulary

    texts, held = _texts(args)
    try:
        with writing(args.out):
            path = train_vocabulary(texts, args.out, args.size, extra_ids=held)
    except RuntimeError as err:  # how SentencePiece refuses its settings, e.g. a small size
        raise P3DataError(f"--size {args.size}: SentencePiece cannot train this vocabulary "
                          f"({str(err).strip()})") from None
    held_note = f" (its {held} extra ids inside)" if held else ""
    print(f"wrote {path}{held_note}")
    return 0


def register(commands: argparse._SubParsersAction) -> None:
    vocab = commands.add_parser(
        "vocab", help="train an offline SentencePiece model on the rendered samples")
    vocab.add_argument("--out", required=True, help="where to write the .model file")
    vocab.add_argument("--size", type=positive_int, default=8000,
                       help="vocabulary size (before extra ids; default 8000)")
    vocab.add_argument("--collection", default=T0,
                       help="whose samples and vocabulary shape: t0 (the default), xp3, xp3mt")
    vocab.add_argument("--text", type=Path, action="append", default=[], metavar="FILE",
                       help="more text to train on, one text a line (repeatable)")
    vocab.set_defaults(run=run)
