"""Keras: keras-hub's tiny T5 (`T5Backbone`, `T5Seq2SeqLM(preprocessor=None)`) trains on the
demo cache, from one task split through `tf_dataset` and from the sampled t0_train mixture
through `from_generator`; padded rows, since keras-hub's T5 takes no segment ids."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pytest
import tensorflow as tf

from p3data.read import PackedStream, mixture_sampler, open_cache
from p3data.read.adapters import tf_dataset

if TYPE_CHECKING:  # imported where used: collecting every test module costs ~5 s less
    import keras
    import keras_hub

ROOT = Path(__file__).resolve().parents[1]
INPUTS, TARGETS = 128, 32
BATCH, STEPS = 8, 50
X = ("encoder_token_ids", "encoder_padding_mask", "decoder_token_ids", "decoder_padding_mask")


def tiny_t5(*, reduction: str = "mean_with_sample_weight") -> keras_hub.models.T5Seq2SeqLM:
    """trainers.md's tiny T5 1.1 in keras-hub, seeded, no dropout; its loss the mean over the
    weighted (target) tokens."""
    import keras
    import keras_hub

    keras.utils.set_random_seed(0)
    backbone = keras_hub.models.T5Backbone(
        vocabulary_size=7341, num_layers=2, num_heads=4, hidden_dim=64, intermediate_dim=128,
        key_value_dim=16, dropout=0.0, activation="gelu", use_gated_activation=True)
    model = keras_hub.models.T5Seq2SeqLM(backbone, preprocessor=None)
    model.compile(optimizer=keras.optimizers.AdamW(1e-2), jit_compile=False,
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True,
                                                                  reduction=reduction))
    return model


def features(length: Callable[[int], object]) -> tuple:
    """(x, y, sample weight) as keras-hub's T5 takes them, of `length(n)` per feature."""
    x = dict(zip(X, (length(INPUTS), length(INPUTS), length(TARGETS), length(TARGETS)),
                 strict=True))
    return x, length(TARGETS), length(TARGETS)


def from_split(example: dict) -> tuple:
    """A cached example (ragged int32 ids): decoder inputs are 0 then the targets but the last."""
    inputs, targets = example["inputs"][:INPUTS], example["targets"][:TARGETS]
    ones = tf.ones_like(targets)
    return (dict(zip(X, (inputs, tf.ones_like(inputs), tf.concat([[0], targets[:-1]], 0), ones),
                     strict=True)), targets, ones)


def from_stream(stream: PackedStream) -> Iterator[tuple]:
    """Padded rows of p3data's packer: real decoder inputs are where the loss weight is 1."""
    for row in stream:
        weights = row["decoder_loss_weights"]
        yield (dict(zip(X, (row["encoder_input_tokens"],
                            (row["encoder_input_tokens"] != 0).astype(np.int32),
                            row["decoder_input_tokens"], weights), strict=True)),
               row["decoder_target_tokens"], weights)


def split_batches(cache: Path) -> tf.data.Dataset:
    split = open_cache(str(cache)).split("gigaword_TLDR", "train")
    return (tf_dataset(split, features=["inputs", "targets"]).map(from_split).repeat()
            .padded_batch(BATCH, padded_shapes=features(lambda n: tf.TensorShape([n]))))


def mixture_batches(cache: Path) -> tf.data.Dataset:
    stream = PackedStream(mixture_sampler(open_cache(str(cache)), "t0_train", seed=42),
                          {"inputs": INPUTS, "targets": TARGETS}, pack=False)
    signature = features(lambda n: tf.TensorSpec([n], tf.int32))
    return tf.data.Dataset.from_generator(lambda: from_stream(stream),
                                          output_signature=signature).batch(BATCH)


def fit(dataset: tf.data.Dataset, name: str) -> list[float]:
    """STEPS steps of `fit`, one a Keras epoch, so the history holds each step's loss (an
    epoch's loss is the mean of its steps'); the dataset's iterator goes on across epochs."""
    losses = tiny_t5().fit(dataset, steps_per_epoch=1, epochs=STEPS, verbose=0).history["loss"]
    print(f"keras {name}: loss {losses[0]:.3f} -> {losses[-1]:.3f}, first 5 "
          f"{np.mean(losses[:5]):.3f}, last 5 {np.mean(losses[-5:]):.3f}")
    return losses


def assert_learns(losses: list[float]) -> None:
    assert len(losses) == STEPS and all(np.isfinite(losses))
    assert np.mean(losses[-5:]) < np.mean(losses[:5]) - 1.0, losses


def test_keras_hub_t5_takes_padding_masks_but_no_segment_ids():
    """Why the rows are padded: packed examples would attend to each other."""
    backbone = tiny_t5().backbone
    assert sorted(backbone.input) == sorted(X)


def loss(model: keras.Model, x: dict, y: tf.Tensor, weights: tf.Tensor) -> float:
    return model.evaluate(x, y, sample_weight=weights, verbose=0, return_dict=True)["loss"]


def test_the_loss_is_the_mean_over_target_tokens(demo_cache):
    """`mean_with_sample_weight` divides by the weighted tokens; Keras' default divides by
    every position, padding included, so a batch's loss would depend on its padding."""
    x, y, weights = next(iter(mixture_batches(demo_cache)))
    model = tiny_t5()
    scores = tf.nn.log_softmax(tf.cast(model(x), tf.float64))
    nll = -tf.gather(scores, tf.cast(y, tf.int32), batch_dims=2).numpy()
    weighted = weights.numpy() == 1
    assert 0 < weighted.sum() < weighted.size
    expected = nll[weighted].mean()
    assert loss(model, x, y, weights) == pytest.approx(expected, rel=1e-5)
    every_position = tiny_t5(reduction="sum_over_batch_size")
    assert loss(every_position, x, y, weights) == pytest.approx(expected * weighted.mean(),
                                                                rel=1e-5)


def test_keras_t5_learns_from_a_task_split(demo_cache):
    assert_learns(fit(split_batches(demo_cache), "tf_dataset(gigaword_TLDR/train)"))


def test_keras_t5_learns_from_the_mixture(demo_cache):
    assert_learns(fit(mixture_batches(demo_cache), "t0_train via from_generator"))
