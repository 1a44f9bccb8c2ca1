"""`p3data vocab`: train an offline SentencePiece model on the rendered samples."""

from __future__ import annotations

import argparse

from p3data.commands.options import positive_int, writing
from p3data.errors import P3DataError


def run(args: argparse.Namespace) -> int:
    from p3data.datasets.catalog import Catalog
    from p3data.datasets.samples import rendered_texts
    from p3data.templates import TemplateCollection
    from p3data.vocab import train_vocabulary

    texts = rendered_texts(Catalog.load(), TemplateCollection.default())
    try:
        with writing(args.out):
            path = train_vocabulary(texts, args.out, args.size)
    except RuntimeError as err:  # how SentencePiece refuses its settings, e.g. a small size
        raise P3DataError(f"--size {args.size}: SentencePiece cannot train this vocabulary "
                          f"({str(err).strip()})") from None
    print(f"wrote {path}")
    return 0


def register(commands: argparse._SubParsersAction) -> None:
    vocab = commands.add_parser(
        "vocab", help="train an offline SentencePiece model on the rendered samples")
    vocab.add_argument("--out", required=True, help="where to write the .model file")
    vocab.add_argument("--size", type=positive_int, default=8000,
                       help="vocabulary size (before extra ids; default 8000)")
    vocab.set_defaults(run=run)
