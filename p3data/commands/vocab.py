"""`p3data vocab`: train an offline SentencePiece model on the rendered samples."""

from __future__ import annotations

import argparse


def run(args: argparse.Namespace) -> int:
    from p3data.catalog import Catalog
    from p3data.samples import rendered_texts
    from p3data.templates import TemplateCollection
    from p3data.vocab import train_vocabulary

    path = train_vocabulary(rendered_texts(Catalog.load(), TemplateCollection.default()),
                            args.out, args.size)
    print(f"wrote {path}")
    return 0


def register(commands: argparse._SubParsersAction) -> None:
    vocab = commands.add_parser(
        "vocab", help="train an offline SentencePiece model on the rendered samples")
    vocab.add_argument("--out", required=True, help="where to write the .model file")
    vocab.add_argument("--size", type=int, default=8000, help="vocabulary size (before extra ids)")
    vocab.set_defaults(run=run)
