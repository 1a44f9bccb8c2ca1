"""Keras: keras-hub's T5 trained from a p3data cache: one task split through `tf_dataset`, then
T0's mixture (sampled and padded by p3data) through `from_generator`. keras-hub's T5 takes
padding masks but no segment ids, so rows are padded, not packed.

    pip install p3data keras-hub
    python examples/keras_t0.py [CACHE]          # default: demo_output/t0_train (make demo)
"""

import sys

import keras
import keras_hub
import numpy as np
import tensorflow as tf

from p3data.read import PackedStream, mixture_sampler, open_cache
from p3data.read.adapters import tf_dataset

cache = open_cache(sys.argv[1] if len(sys.argv) > 1 else "demo_output/t0_train")
INPUTS, TARGETS = 256, 64  # T0 trained at 1024 and 256

keras.utils.set_random_seed(0)
backbone = keras_hub.models.T5Backbone(  # tiny, for the demo's sample vocabulary (7,341 ids)
    vocabulary_size=7341, num_layers=2, num_heads=4, hidden_dim=64, intermediate_dim=128,
    key_value_dim=16, dropout=0.0, activation="gelu", use_gated_activation=True)
model = keras_hub.models.T5Seq2SeqLM(backbone, preprocessor=None)
# the mean over the target tokens (sample weight 1), not over every padded position
loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True,
                                                  reduction="mean_with_sample_weight")
model.compile(optimizer=keras.optimizers.AdamW(1e-2), loss=loss, jit_compile=False)


def from_split(example):
    """A cached example (int32 ids, ragged) as keras-hub's T5 takes it: (x, y, sample weight)."""
    inputs, targets = example["inputs"][:INPUTS], example["targets"][:TARGETS]
    ones = tf.ones_like(targets)
    return ({"encoder_token_ids": inputs, "encoder_padding_mask": tf.ones_like(inputs),
             "decoder_token_ids": tf.concat([[0], targets[:-1]], 0),  # 0 starts the decoder
             "decoder_padding_mask": ones}, targets, ones)


def features(length):
    """(x, y, sample weight) of keras-hub's T5, made of `length(n)` for each feature's length."""
    return ({"encoder_token_ids": length(INPUTS), "encoder_padding_mask": length(INPUTS),
             "decoder_token_ids": length(TARGETS), "decoder_padding_mask": length(TARGETS)},
            length(TARGETS), length(TARGETS))


split = cache.split("gigaword_TLDR", "train")
shapes = features(lambda n: tf.TensorShape([n]))
dataset = (tf_dataset(split, features=["inputs", "targets"]).map(from_split).repeat()
           .padded_batch(8, padded_shapes=shapes))
history = model.fit(dataset, steps_per_epoch=10, epochs=2, verbose=0)
print(f"{split}: loss by epoch", [round(value, 3) for value in history.history["loss"]])

# T0's mixture: PackedStream(pack=False) pads rows as seqio's EncDecFeatureConverter(pack=False)
stream = PackedStream(mixture_sampler(cache, "t0_train", seed=42),
                      {"inputs": INPUTS, "targets": TARGETS}, pack=False)


def from_stream():
    for row in stream:
        weights = row["decoder_loss_weights"]  # 1 on the targets: where decoder inputs are real
        yield ({"encoder_token_ids": row["encoder_input_tokens"],
                "encoder_padding_mask": (row["encoder_input_tokens"] != 0).astype(np.int32),
                "decoder_token_ids": row["decoder_input_tokens"],
                "decoder_padding_mask": weights}, row["decoder_target_tokens"], weights)


signature = features(lambda n: tf.TensorSpec([n], tf.int32))
mixture = tf.data.Dataset.from_generator(from_stream, output_signature=signature).batch(8)
history = model.fit(mixture, steps_per_epoch=10, epochs=2, verbose=0)
print("t0_train: loss by epoch", [round(value, 3) for value in history.history["loss"]])
