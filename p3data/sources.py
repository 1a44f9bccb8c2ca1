"""seqio data sources that render prompted examples from a dataset's rows.

Unlike T0's one-shard `FunctionDataSource`, a `PromptedSource` lists one shard per row range
of its store, so seqio's Beam caching (and T5X's per-host reading) can spread a task over many
workers. It never reads data when it is built: split names and sizes come from the catalog.
"""

from __future__ import annotations

import os
import random
from collections.abc import Iterator, Sequence
from functools import cached_property

import seqio
import tensorflow as tf
from absl import logging

from p3data.datasets.catalog import DatasetEntry
from p3data.datasets.shards import RowStore, Shard
from p3data.datasets.stores import open_store
from p3data.format.features import ANSWER_CHOICES, INPUTS, TARGETS, Feature, source_features
from p3data.templates import CompiledTemplate, Rendered, Template, prepare_row


def tf_dtype(feature: Feature) -> tf.DType:
    """TensorFlow's type for a feature of the table (which names dtypes as TensorFlow does)."""
    return tf.as_dtype(feature.dtype)


class PromptedSource(seqio.DataSource):
    """Rows of one dataset, rendered by one template with T0's row rule."""

    def __init__(
        self,
        entry: DatasetEntry,
        template: Template,
        split_mapping: dict[str, str],
        *,
        data_dir: str | os.PathLike | None = None,
        seed: int = 0,
    ):
        super().__init__(
            splits=list(split_mapping),
            num_input_examples={s: entry.splits[src] for s, src in split_mapping.items()},
        )
        self.entry = entry
        self.template = template
        self.split_mapping = dict(split_mapping)
        self.data_dir = data_dir
        self.seed = seed

    @property
    def supports_arbitrary_sharding(self) -> bool:
        return False

    @cached_property
    def compiled(self) -> CompiledTemplate:
        return CompiledTemplate(self.template, self.seed)

    def store(self) -> RowStore:
        """Resolved on use, so `P3DATA_DATA_DIR` may be set after the tasks are registered."""
        return open_store(self.entry, self.data_dir)

    def list_shards(self, split: str) -> Sequence[str]:
        return [shard.name for shard in self.store().list_shards(self.split_mapping[split])]

    @property
    def output_signature(self) -> dict[str, tf.TensorSpec]:
        features = source_features(with_choices=self.template.answer_choices is not None)
        return {name: tf.TensorSpec(feature.shape, tf_dtype(feature))
                for name, feature in features.items()}

    def get_dataset(
        self,
        split: str = "train",
        shuffle: bool = True,
        seed: int | None = None,
        shard_info: seqio.ShardInfo | None = None,
        *,
        sequence_length=None,
        use_cached: bool = False,
        num_epochs: int | None = 1,
    ) -> tf.data.Dataset:
        del sequence_length, use_cached, num_epochs  # unused, as for every seqio source
        store = self.store()
        shards = store.list_shards(self.split_mapping[split])
        by_examples = shard_info is not None and len(shards) < shard_info.num_shards
        if shard_info is not None and not by_examples:
            shards = shards[shard_info.index :: shard_info.num_shards]
        if shuffle:
            random.Random(seed).shuffle(shards)
        source_split = self.split_mapping[split]
        dataset = tf.data.Dataset.from_generator(
            lambda: self._examples(store, source_split, shards),
            output_signature=self.output_signature,
        )
        if by_examples:
            dataset = dataset.shard(shard_info.num_shards, shard_info.index)
        return dataset

    def _examples(self, store: RowStore, split: str, shards: list[Shard]) -> Iterator[dict]:
        with_choices = self.template.answer_choices is not None
        errors = 0
        for shard in shards:
            for index, row in enumerate(store.read(split, shard), start=shard.start):
                outcome = self.compiled.render_prepared(prepare_row(row), index)
                if isinstance(outcome, Rendered):
                    example = {INPUTS: outcome.inputs, TARGETS: outcome.targets}
                    if with_choices:
                        example[ANSWER_CHOICES] = outcome.answer_choices or []
                    yield example
                elif outcome.error is not None:
                    errors += 1
                    if errors <= 5:
                        logging.warning("%s: %s", self.entry.name, outcome.error)
        if errors:
            logging.warning("%s/%s: %d rows failed to render and were skipped",
                            self.entry.name, self.template.name, errors)
