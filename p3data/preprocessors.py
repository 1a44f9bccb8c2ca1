"""seqio preprocessors of T0's tasks that the `t5` package used to provide."""

from __future__ import annotations

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

    def expand(index: tf.Tensor, example: dict[str, tf.Tensor]) -> dict[str, tf.Tensor]:
        choices = example["answer_choices"]
        count = tf.size(choices)
        kept = {name: tf.repeat(example[name][tf.newaxis], count, axis=0) for name in keep}
        return {
            **kept,
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
