"""PyTorch: T0's training mixture from a p3data cache, packed to T0's lengths, in a DataLoader;
and one task split as a map-style dataset. No TensorFlow is imported.

    pip install 'p3data[torch]'
    python examples/pytorch_t0.py [CACHE]        # default: demo_output/t0_train (make demo)
"""

import json
import sys

import torch
from torch.utils.data import DataLoader

from p3data.read import PackedStream, mixture_sampler, open_cache
from p3data.read.adapters import torch_dataset, torch_stream

cache = open_cache(sys.argv[1] if len(sys.argv) > 1 else "demo_output/t0_train")

# The mixture, with T0's rates, packed as seqio's EncDecFeatureConverter(pack=True) packs it.
stream = PackedStream(mixture_sampler(cache, "t0_train", seed=42),
                      {"inputs": 1024, "targets": 256})
loader = DataLoader(torch_stream(stream), batch_size=8)  # num_workers=0: one stream
batch = next(iter(loader))
print({name: tuple(tensor.shape) for name, tensor in batch.items()})
checkpoint = json.dumps(stream.state())  # save beside the model; load_state() resumes exactly
print(f"stream state: {len(checkpoint)} bytes of JSON")

# One task split, map-style: shuffle and worker processes fetch examples by number.
split = cache.split("cos_e_v1.11_description_question_option_id", "validation")
loader = DataLoader(torch_dataset(split), batch_size=None, shuffle=True, num_workers=2,
                    generator=torch.Generator().manual_seed(0))
example = next(iter(loader))
print(split, "->", example["targets_pretokenized"], example["targets"].tolist())
