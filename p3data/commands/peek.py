"""`p3data peek CACHE_DIR TASK`: read a few examples back through stock seqio."""

from __future__ import annotations

import argparse


def run(args: argparse.Namespace) -> int:
    import seqio

    import p3data.tasks  # noqa: F401 - registers the tasks
    from p3data.vocab import set_vocabulary

    if args.vocab:
        set_vocabulary(args.vocab)
    seqio.add_global_cache_dirs([args.cache_dir])
    task = seqio.get_mixture_or_task(args.task)
    dataset = task.get_dataset(None, split=args.split, shuffle=False, use_cached=True,
                               try_in_mem_cache=False)
    for number, example in enumerate(dataset.take(args.n).as_numpy_iterator()):
        print(f"--- {args.task} [{args.split}] example {number}")
        for key in sorted(example):
            value = example[key]
            if key.endswith("_pretokenized"):
                print(f"{key}: {value.decode()!r}")
            elif getattr(value, "dtype", None) is not None and value.dtype.kind == "O":
                print(f"{key}: {[v.decode() for v in value]}")
            else:
                shown = value.tolist()
                if isinstance(shown, list) and len(shown) > 12:
                    shown = f"{shown[:6]} ... {shown[-3:]} ({len(shown)} ids)"
                print(f"{key}: {shown}")
    return 0


def register(commands: argparse._SubParsersAction) -> None:
    peek = commands.add_parser("peek", help="print a few cached examples, read by stock seqio")
    peek.add_argument("cache_dir")
    peek.add_argument("task")
    peek.add_argument("--split", default="train")
    peek.add_argument("-n", type=int, default=2, help="how many examples")
    peek.add_argument("--vocab", help="SentencePiece model the cache was built with")
    peek.set_defaults(run=run)
