"""`p3data peek CACHE_DIR TASK`: read a few examples back through stock seqio (an ArrayRecord
cache, which seqio cannot read, through `p3data.read`)."""

from __future__ import annotations

import argparse

from p3data.commands import console
from p3data.commands.options import cache_root, positive_int
from p3data.errors import P3DataError


def run(args: argparse.Namespace) -> int:
    from p3data import fs
    from p3data.format.cache_folder import not_a_cache, task_folders
    from p3data.format.shard_format import seqio_shards
    from p3data.taskset import load_definitions

    root = cache_root(args.cache_dir)
    spec = load_definitions().task(args.task)  # an unknown name fails before any reading
    if not task_folders(root):  # not advice to build a cache into someone's folder
        raise not_a_cache(root)
    folder = cached_task_folder(root, args.task, args.split)
    if not seqio_shards(fs.files_in(folder), args.split, infix="tfrecord"):
        from p3data.read import open_cache

        examples = open_cache(root).split(args.task, args.split)
        for number in range(min(args.n, len(examples))):
            print_example(examples[number], f"--- {args.task} [{args.split}] example {number}")
        return 0
    console.import_tensorflow(args.verbose)
    import seqio
    import tensorflow as tf

    from p3data.registry import register_spec
    from p3data.vocab import set_vocabulary

    if args.vocab:
        set_vocabulary(args.vocab)
    if args.task not in seqio.TaskRegistry.names():  # this task only, of any collection
        register_spec(spec)
    seqio.add_global_cache_dirs([root])
    task = seqio.get_mixture_or_task(args.task)
    dataset = task.get_dataset(None, split=args.split, shuffle=False, use_cached=True,
                               try_in_mem_cache=False)
    try:
        for number, example in enumerate(dataset.take(args.n).as_numpy_iterator()):
            print_example(example, f"--- {args.task} [{args.split}] example {number}")
    except tf.errors.DataLossError:
        damage = first_damage(folder, args.split)
        if damage is None:
            raise
        raise P3DataError(f"{damage}; check the cache with p3data verify {root}") from None
    return 0


def cached_task_folder(root: str, task: str, split: str) -> str:
    """The task's folder in the cache at `root`, or an error saying why seqio could not read
    its `split` there and what to do."""
    from p3data import fs
    from p3data.format import layout
    from p3data.format.cache_folder import is_complete, splits_with_info

    folder = layout.task_dir(root, task)
    names = fs.files_in(folder)
    if not is_complete(names):
        if fs.glob(fs.join(folder, "*")):
            raise P3DataError(f"{folder}: task {task} is incomplete (no {layout.COMPLETED}): "
                              f"rerun the p3data cache command that writes {root} to finish it")
        if fs.exists(fs.join(layout.task_dir(root, task, p3_layout=True), layout.COMPLETED)):
            raise P3DataError(f"{root}: a cache in P3's layout; peek {fs.join(root, 'data')}")
        raise P3DataError(f"{root}: task {task} is not in this cache; build it with "
                          f"p3data cache --output-dir {root} --tasks {task}")
    splits = splits_with_info(names)
    if split not in splits:
        raise P3DataError(f"{folder}: no split {split!r} cached; pass --split with one of: "
                          f"{', '.join(splits) or 'none'}")
    return folder


def first_damage(folder: str, split: str) -> str | None:
    """Where the split's shards are truncated or fail their checks (TensorFlow's error names
    no file), or None when they are sound."""
    from p3data import fs
    from p3data.format.shard_format import read_shard, seqio_shards
    from p3data.format.tfrecord import CorruptRecordError

    for name in seqio_shards(fs.files_in(folder), split):
        path = fs.join(folder, name)
        try:
            with fs.open_read(path) as handle:
                for _ in read_shard(handle, path):
                    pass
        except CorruptRecordError as err:
            return str(err)
    return None


def print_example(example: dict, heading: str) -> None:
    """Every feature on a line: texts quoted, long id lists shortened."""
    print(heading)
    for key in sorted(example):
        value = example[key]
        if key.endswith("_pretokenized"):
            print(f"{key}: {_text(value)!r}")
        elif isinstance(value, list) or getattr(value, "dtype", None) is not None and (
                value.dtype.kind == "O"):
            print(f"{key}: {[_text(v) for v in value]}")
        else:
            shown = value.tolist()
            if isinstance(shown, list) and len(shown) > 12:
                shown = f"{shown[:6]} ... {shown[-3:]} ({len(shown)} ids)"
            print(f"{key}: {shown}")


def _text(value: bytes | str) -> str:
    """A text as seqio reads it (bytes) or as `p3data.read` does (str)."""
    return value.decode() if isinstance(value, bytes) else value


def register(commands: argparse._SubParsersAction) -> None:
    peek = commands.add_parser("peek", help="print a few cached examples, read by stock seqio "
                                  "(ArrayRecord caches: by p3data.read)")
    peek.add_argument("cache_dir", metavar="CACHE_DIR", help="cache root (local or gs://)")
    peek.add_argument("task", metavar="TASK", help="a task name, e.g. super_glue_copa_exercise")
    peek.add_argument("--split", default="train", help="task split to read (default: train)")
    peek.add_argument("-n", type=positive_int, default=2, help="how many examples (default 2)")
    peek.add_argument("--vocab", help="SentencePiece model the cache was built with")
    peek.set_defaults(run=run)
