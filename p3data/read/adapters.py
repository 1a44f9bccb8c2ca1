"""Thin bridges from the reader to training stacks: PyTorch, grain and tf.data.

Each imports its framework only when called, so reading a cache never needs any of them.
grain needs no bridge: a `TaskSplit` already is a random-access data source (`len`, `[i]`,
picklable), so `grain.MapDataset.source(split)` takes it as it is.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from p3data.errors import P3DataError
from p3data.format.features import FEATURES, INPUTS, INPUTS_TEXT, TARGETS, TARGETS_TEXT
from p3data.read.reader import Example, TaskSplit

if TYPE_CHECKING:
    import tensorflow as tf
    import torch.utils.data


def torch_dataset(split: TaskSplit) -> torch.utils.data.Dataset:
    """A map-style `torch.utils.data.Dataset` over a task split: `DataLoader` may shuffle and
    use worker processes (each fetches its examples by number, through the record index)."""
    from torch.utils.data import Dataset

    class TaskSplitDataset(Dataset):
        def __init__(self, split: TaskSplit):
            self.split = split

        def __len__(self) -> int:
            return len(self.split)

        def __getitem__(self, number: int) -> Example:
            return self.split[number]

    return TaskSplitDataset(split)


def torch_stream(examples: Iterable[Example]) -> torch.utils.data.IterableDataset:
    """An `IterableDataset` over one deterministic stream, such as `pack(mixture_sampler(...))`.
    The stream is one sequence with one checkpointable position, so it is read in the main
    process: a `DataLoader` with worker processes would repeat it in every worker."""
    from torch.utils.data import IterableDataset, get_worker_info

    class StreamDataset(IterableDataset):
        def __init__(self, examples: Iterable[Example]):
            self.examples = examples

        def __iter__(self):
            if get_worker_info() is not None:
                raise P3DataError("a p3data stream is read in the main process: give the "
                                  "DataLoader num_workers=0 (each worker would repeat it)")
            return iter(self.examples)

    return StreamDataset(examples)


def tf_dataset(split: TaskSplit, *, features: Sequence[str] | None = None,
               shard: tuple[int, int] | None = None) -> tf.data.Dataset:
    """A `tf.data.Dataset` of a task split's examples as seqio reads them from its cache (token
    ids int32, `is_correct` bool, strings as tf.string), in the reader's order: for Keras and
    TPU recipes that read TFRecords with plain tf.data."""
    import tensorflow as tf

    if not split.features and not len(split):  # an empty split's info is `{}`
        return _no_examples(tf, features)
    wanted = {name: info for name, info in split.features.items()
              if features is None or name in features}
    paths = split.shards if shard is None else split.shards[shard[0]::shard[1]]
    spec = {name: _parse_spec(tf, info.dtype, info.shape) for name, info in wanted.items()}

    def parse(record: Any) -> dict[str, Any]:
        parsed = tf.io.parse_single_example(record, spec)
        return {name: tf.cast(value, wanted[name].dtype) for name, value in parsed.items()}

    return tf.data.TFRecordDataset(paths).map(parse, num_parallel_calls=tf.data.AUTOTUNE,
                                              deterministic=True)


def _no_examples(tf: Any, features: Sequence[str] | None) -> tf.data.Dataset:
    """An empty dataset typed as T0's feature table says, so a pipeline over every split
    (batching, packing, mixing) builds on it as on the others."""
    names = features or [INPUTS, TARGETS, INPUTS_TEXT, TARGETS_TEXT]
    if unknown := [name for name in names if name not in FEATURES]:
        raise P3DataError(f"no feature {unknown[0]!r}; T0's features are {', '.join(FEATURES)}")
    signature = {name: tf.TensorSpec(FEATURES[name].shape, FEATURES[name].dtype)
                 for name in names}
    return tf.data.Dataset.from_generator(lambda: iter(()), output_signature=signature)


def _parse_spec(tf: Any, dtype: str, shape: tuple) -> Any:
    """How `tf.io` parses a feature stored as `info.<split>.json` describes it: ints and bools
    are stored as int64 lists, floats as float lists, strings as bytes lists."""
    stored = {"string": tf.string, "float32": tf.float32}.get(dtype, tf.int64)
    if shape:
        return tf.io.FixedLenSequenceFeature([], stored, allow_missing=True)
    return tf.io.FixedLenFeature([], stored)
