"""seqio data sources that render prompted examples from a dataset's rows.

Unlike T0's one-shard `FunctionDataSource`, a `PromptedSource` lists one shard per row range
of its store, so seqio's Beam caching (and T5X's per-host reading) can spread a task over many
workers. It never reads data when it is built: split names and sizes come from the catalog.
A `FewshotSource` is a few-shot variant's: its task's renders made prompts by the
`FewshotPrompter` the cache builder runs, over the same pool, so seqio on the fly, stock
`seqio_cache_tasks` and `p3data cache` give the same examples.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import os
import random
import threading
from collections.abc import Iterator, Sequence
from functools import cached_property

import numpy as np
import seqio
import tensorflow as tf
from absl import logging

from p3data.batching import batched
from p3data.datasets.catalog import DatasetEntry
from p3data.datasets.shards import RowStore, Shard
from p3data.datasets.stores import open_store
from p3data.fewshot import FewshotSettings, VariantSpec
from p3data.fewshot.pool import ExemplarPool, build_pool, pool_source
from p3data.fewshot.prompter import FewshotPrompter
from p3data.format.features import (
    ANSWER_CHOICES,
    EXEMPLAR_ROWS,
    FEATURES,
    INPUTS,
    NUM_SHOTS,
    TARGETS,
    Feature,
    carries_choices,
    source_features,
)
from p3data.taskset import SourceSplits, source_splits
from p3data.templates import Template
from p3data.templates.render import (
    STEP_DROPPED,
    T0_RULE,
    CompiledTemplate,
    Dropped,
    Outcome,
    Rendered,
    RowRule,
    RowStep,
    prepare_row,
    stepped,
)
from p3data.tokenize import Tokenizer
from p3data.vocab import EXTRA_IDS, read_vocabulary, vocabulary_path


def tf_dtype(feature: Feature) -> tf.DType:
    """TensorFlow's type for a feature of the table (which names dtypes as TensorFlow does)."""
    return tf.as_dtype(feature.dtype)


def _rows(entry: DatasetEntry, sources: SourceSplits) -> int | None:
    """The catalog's rows of the source splits a task split reads (None: a size unknown)."""
    sizes = [entry.splits[source] for source in source_splits(sources)]
    return None if None in sizes else sum(sizes)  # type: ignore[arg-type]


class PromptedSource(seqio.DataSource):
    """Rows of one dataset, rendered by one template with a row rule (T0's, or xP3's with
    its dataset step first)."""

    def __init__(
        self,
        entry: DatasetEntry,
        template: Template,
        split_mapping: dict[str, SourceSplits],
        *,
        data_dir: str | os.PathLike | None = None,
        seed: int = 0,
        rule: RowRule = T0_RULE,
        step: RowStep | None = None,
    ):
        super().__init__(
            splits=list(split_mapping),
            num_input_examples={s: _rows(entry, sources) for s, sources in split_mapping.items()},
        )
        self.entry = entry
        self.template = template
        self.split_mapping = dict(split_mapping)
        self.data_dir = data_dir
        self.seed = seed
        self.rule = rule
        self.step = step

    @property
    def supports_arbitrary_sharding(self) -> bool:
        return False

    @property
    def with_choices(self) -> bool:
        return carries_choices(self.template, self.rule)

    @cached_property
    def compiled(self) -> CompiledTemplate:
        return CompiledTemplate(self.template, self.seed, rule=self.rule)

    def store(self) -> RowStore:
        """Resolved on use, so `P3DATA_DATA_DIR` may be set after the tasks are registered."""
        return open_store(self.entry, self.data_dir)

    def list_shards(self, split: str) -> Sequence[str]:
        return [shard.name for _, shard in self._shards(self.store(), split)]

    def _shards(self, store: RowStore, split: str) -> list[tuple[str, Shard]]:
        """(source split, shard) of every source split `split` reads, in order."""
        return [(source, shard) for source in source_splits(self.split_mapping[split])
                for shard in store.list_shards(source)]

    @property
    def output_signature(self) -> dict[str, tf.TensorSpec]:
        features = source_features(with_choices=self.with_choices)
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
        shards = self._shards(store, split)
        by_examples = shard_info is not None and len(shards) < shard_info.num_shards
        if shard_info is not None and not by_examples:
            shards = shards[shard_info.index :: shard_info.num_shards]
        if shuffle:
            random.Random(seed).shuffle(shards)
        dataset = tf.data.Dataset.from_generator(
            lambda: self._examples(store, split, shards),
            output_signature=self.output_signature,
        )
        if by_examples:
            dataset = dataset.shard(shard_info.num_shards, shard_info.index)
        return dataset

    def _examples(self, store: RowStore, split: str,
                  shards: list[tuple[str, Shard]]) -> Iterator[dict]:
        """The examples of task split `split` from its source `shards`."""
        with_choices = self.with_choices
        for _, outcome in self._renders(store, shards):
            example = {INPUTS: outcome.inputs, TARGETS: outcome.targets}
            if with_choices:
                example[ANSWER_CHOICES] = outcome.answer_choices or []
            yield example

    def _outcome(self, row: dict, index: int) -> Outcome | None:
        """The row's render; None for a row the dataset step drops."""
        kept = stepped(row, self.step, config=self.entry.subset, index=index, seed=self.seed)
        if isinstance(kept, Dropped):
            return None if kept.reason == STEP_DROPPED else kept
        return self.compiled.render_prepared(prepare_row(kept), index)

    def _renders(self, store: RowStore,
                 shards: list[tuple[str, Shard]]) -> Iterator[tuple[dict, Rendered]]:
        """(row, render) of the rows of (source split, shard)s the dataset step and the row
        rule keep, in order; failures are logged."""
        errors = 0
        for source, shard in shards:
            for index, row in enumerate(store.read(source, shard), start=shard.start):
                outcome = self._outcome(row, index)
                if outcome is None:
                    continue
                if isinstance(outcome, Rendered):
                    yield row, outcome
                elif outcome.error is not None:
                    errors += 1
                    if errors <= 5:
                        logging.warning("%s: %s", self.entry.name, outcome.error)
        if errors:
            logging.warning("%s/%s: %d rows failed to render and were skipped",
                            self.entry.name, self.template.name, errors)


class FewshotSource(PromptedSource):
    """A few-shot variant's examples: its task's kept renders, each the query of a prompt whose
    exemplars come from the task's pool (built once per process, `exemplar_pool`)."""

    def __init__(self, variant: VariantSpec, *, data_dir: str | os.PathLike | None = None):
        base = variant.base
        super().__init__(base.entry, base.template, base.split_mapping, data_dir=data_dir)
        self.variant = variant

    @property
    def output_signature(self) -> dict[str, tf.TensorSpec]:
        features = source_features(with_choices=self.with_choices,
                                   fewshot=True)
        return {name: tf.TensorSpec(feature.shape, tf_dtype(feature))
                for name, feature in features.items()}

    def _examples(self, store: RowStore, split: str,
                  shards: list[tuple[str, Shard]]) -> Iterator[dict]:
        variant = self.variant
        # Step i of a query's draws is the same at any shot count: asking for k alone gives
        # the exemplars the builder's k-shot prompts show.
        settings = dataclasses.replace(variant.settings, shots=(variant.shots,), ratio=None)
        vocabulary = vocabulary_path()
        tokenizer = _tokenizer(vocabulary)[1]
        source = pool_source(variant.base, split)
        pool = (exemplar_pool(self, store, source.split, settings=settings,
                              vocabulary=vocabulary) if variant.shots
                else build_pool([], settings, tokenizer))
        prompter = FewshotPrompter(task=variant.draw_task, split=split, template=self.compiled,
                                   pool=pool, source=source, settings=settings,
                                   tokenizer=tokenizer, long_fields=self.entry.text_lengths)
        with_choices = self.with_choices
        rows_dtype = FEATURES[EXEMPLAR_ROWS].dtype
        for queries in batched(self._renders(store, shards)):
            for example in prompter.prompts(queries)[variant.shots]:
                fields = {INPUTS: example.inputs, TARGETS: example.targets,
                          NUM_SHOTS: example.num_shots,
                          EXEMPLAR_ROWS: np.array(example.exemplar_rows, dtype=rows_dtype)}
                if with_choices:
                    fields[ANSWER_CHOICES] = example.answer_choices or []
                yield fields


_POOLS: dict[str, ExemplarPool] = {}
_POOLS_LOCK = threading.Lock()


@functools.cache
def _tokenizer(path: str) -> tuple[str, Tokenizer]:
    """(the model's sha256, p3data's tokenizer of it: seqio's ids, as the cache has them)."""
    model = read_vocabulary(path)
    return hashlib.sha256(model).hexdigest(), Tokenizer(model, EXTRA_IDS)


def exemplar_pool(source: PromptedSource, store: RowStore, split: str, *,
                  settings: FewshotSettings, vocabulary: str) -> ExemplarPool:
    """The pool of `source`'s template over the rows of `split`, built once per process for
    the same rows, template, separators and vocabulary (a SentencePiece model's path)."""
    template = source.template
    model, tokenizer = _tokenizer(vocabulary)
    key = json.dumps([source.entry.name, split, template.id, template.jinja,
                      template.answer_choices, source.seed, settings.exemplar_separator,
                      settings.example_separator, model, store.identity(split)],
                     sort_keys=True, default=str)
    with _POOLS_LOCK:
        if key not in _POOLS:
            renders = (
                [source.compiled.render_prepared(prepare_row(row), index)
                 for index, row in batch]
                for shard in store.list_shards(split)
                for batch in batched(enumerate(store.read(split, shard), start=shard.start)))
            _POOLS[key] = build_pool(renders, settings, tokenizer)
        return _POOLS[key]
