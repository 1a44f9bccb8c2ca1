"""Hugging Face transformers: T5 trained on T0's mixture from a p3data cache, packed as seqio's
EncDecFeatureConverter packs it for T5X, with the masks HF's T5 needs for packed rows.

    pip install 'p3data[hf]'    # PyTorch and transformers
    python examples/hf_t5_t0.py [CACHE]          # default: demo_output/t0_train (make demo)
"""

import sys

import torch
from torch.utils.data import DataLoader
from transformers import T5Config, T5ForConditionalGeneration

from p3data.read import PackedStream, mixture_sampler, open_cache
from p3data.read.adapters import torch_stream
from p3data.read.hf import t5_forward, t5_inputs

cache = open_cache(sys.argv[1] if len(sys.argv) > 1 else "demo_output/t0_train")
lengths = {"inputs": 256, "targets": 64}  # T0 trained at 1024 and 256 (packing.T0_LENGTHS)
stream = PackedStream(mixture_sampler(cache, "t0_train", seed=42), lengths)  # pack=False pads
loader = DataLoader(torch_stream(stream), batch_size=8)

# A tiny T5 1.1 for the demo's sample vocabulary (7,341 ids); T0 started from T5 1.1 + LM XXL.
torch.manual_seed(0)
model = T5ForConditionalGeneration(T5Config(
    vocab_size=7341, d_model=64, d_kv=16, d_ff=128, num_layers=2, num_heads=4,
    feed_forward_proj="gated-gelu", dropout_rate=0.0, pad_token_id=0, eos_token_id=1,
    decoder_start_token_id=0))
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)

for step, batch in enumerate(loader, start=1):  # int32 rows of PackedStream, as T5X gets them
    if step == 1:  # what the model is given: int64 ids, labels (-100: no loss), 4-D masks
        print({name: tuple(tensor.shape) for name, tensor in t5_inputs(batch).items()})
    loss = t5_forward(model, batch).loss  # model(**t5_inputs(batch)) for padded rows
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    if step % 5 == 0 or step == 1:
        print(f"step {step}: loss {loss.item():.3f}")
    if step == 20:
        break
