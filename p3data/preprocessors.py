"""seqio preprocessors of T0's tasks that the `t5` package used to provide."""

from __future__ import annotations

import functools
from collections.abc import Sequence

import tensorflow as tf


def rank_classification(dataset: tf.data.Dataset, keep: Sequence[str] = ()) -> tf.data.Dataset:
    """One example per answer choice, as T0's `_score_eval` tasks scored them.

    For the i-th example of the split and its j-th choice: `inputs` = the prompt,
    `targets` = the choice, `idx` = [i, j] (int32), `is_correct` = choice == strip(gold),
    `weight` = 1.0, and each feature of `keep` as it is (a few-shot variant's `num_shots`
    and `exemplar_rows`). Other features (e.g. `answer_choices`) are dropped, as in t5's
    `rank_classification(mode="eval")`.
    """
    if keep:
        # Choice by choice: unbatching the zero-shot variants' empty `exemplar_rows`, repeated
        # per choice (shape [choices, 0]), crashes TensorFlow 2.21's tf.data.
        return dataset.enumerate().flat_map(functools.partial(_each_choice, keep=keep))

    def expand(index: tf.Tensor, example: dict[str, tf.Tensor]) -> dict[str, tf.Tensor]:
        choices = example["answer_choices"]
        count = tf.size(choices)
        return {
            "idx": tf.stack(
                [tf.fill([count], tf.cast(index, tf.int32)), tf.range(count, dtype=tf.int32)],
                axis=1,
            ),
            "inputs": tf.fill([count], example["inputs"]),
            "targets": choices,
            "is_correct": tf.equal(choices, tf.strings.strip(example["targets"])),
            "weight": tf.ones([count], tf.float32),
        }

    return dataset.enumerate().map(expand, num_parallel_calls=tf.data.AUTOTUNE).unbatch()


def _each_choice(index: tf.Tensor, example: dict[str, tf.Tensor], *,
                 keep: Sequence[str]) -> tf.data.Dataset:
    """`rank_classification`'s examples of one example, one dataset element per choice."""
    choices = example["answer_choices"]
    gold = tf.strings.strip(example["targets"])

    def choice(j: tf.Tensor) -> dict[str, tf.Tensor]:
        return {
            **{name: example[name] for name in keep},
            "idx": tf.stack([tf.cast(index, tf.int32), tf.cast(j, tf.int32)]),
            "inputs": example["inputs"],
            "targets": choices[j],
            "is_correct": tf.equal(choices[j], gold),
            "weight": tf.constant(1.0, tf.float32),
        }

    return tf.data.Dataset.range(tf.size(choices, out_type=tf.int64)).map(choice)
