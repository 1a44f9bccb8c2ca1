"""Plain tf.data (TPU recipes; keras-hub's T5 in examples/keras_t0.py): a cached task split as a
`tf.data.Dataset`, parsed as seqio parses its cache; T0's mixture packed by p3data, fed through
`from_generator`.

    python examples/tfdata_t0.py [CACHE]         # default: demo_output/t0_train (make demo)
"""

import sys

import tensorflow as tf

from p3data.read import PackedStream, mixture_sampler, open_cache
from p3data.read.adapters import tf_dataset

cache = open_cache(sys.argv[1] if len(sys.argv) > 1 else "demo_output/t0_train")
split = cache.split("cos_e_v1.11_description_question_option_id", "validation")
for example in tf_dataset(split, features=["inputs", "targets"]).take(1):
    print(split, {name: value.shape for name, value in example.items()})

lengths = {"inputs": 1024, "targets": 256}
stream = PackedStream(mixture_sampler(cache, "t0_train", seed=42), lengths)
encoder = ["encoder_input_tokens", "encoder_segment_ids", "encoder_positions"]
decoder = ["decoder_target_tokens", "decoder_input_tokens", "decoder_loss_weights",
           "decoder_segment_ids", "decoder_positions"]
signature = {name: tf.TensorSpec([lengths[feature]], tf.int32)
             for feature, names in (("inputs", encoder), ("targets", decoder)) for name in names}
packed = tf.data.Dataset.from_generator(lambda: stream, output_signature=signature).batch(8)
print({name: tuple(value.shape) for name, value in next(iter(packed)).items()})
