"""PyTorch + Hugging Face transformers: a tiny T5 trains on the demo cache's t0_train mixture
through `torch_stream(PackedStream(mixture_sampler(...)))` and `p3data.read.hf`, padded and
packed; the packed rows' masks give the same loss as the same examples padded."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pytest

from p3data.errors import P3DataError
from p3data.read import PackedStream, mixture_sampler, open_cache, pack
from p3data.read.adapters import torch_stream
from p3data.read.hf import IGNORED, t5_forward, t5_inputs

if TYPE_CHECKING:  # torch and transformers are imported where used: collecting costs ~13 s
    from transformers import T5ForConditionalGeneration

ROOT = Path(__file__).resolve().parents[1]
LENGTHS = {"inputs": 256, "targets": 32}
BATCH, STEPS = 8, 50
PADDED = ("encoder_input_tokens", "decoder_target_tokens", "decoder_input_tokens",
          "decoder_loss_weights")
PACKED = (*PADDED, "encoder_segment_ids", "decoder_segment_ids", "encoder_positions",
          "decoder_positions")


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """torch on one thread: on a shared CPU its second thread spins waiting for the first (10
    steps took 8x the CPU time and 7x the time on 2 busy cores, measured)."""
    import torch
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def tiny_t5(attention: str = "eager") -> T5ForConditionalGeneration:
    """trainers.md's tiny T5 1.1 for the sample vocabulary, seeded; no dropout (a test's
    losses are then the same on every run)."""
    import torch
    from transformers import T5Config, T5ForConditionalGeneration
    torch.manual_seed(0)
    return T5ForConditionalGeneration(T5Config(
        vocab_size=7341, d_model=64, d_kv=16, d_ff=128, num_layers=2, num_heads=4,
        feed_forward_proj="gated-gelu", dropout_rate=0.0, pad_token_id=0, eos_token_id=1,
        decoder_start_token_id=0, attn_implementation=attention))


def train(cache: Path, *, packed: bool) -> tuple[list[float], dict, T5ForConditionalGeneration]:
    """STEPS steps of AdamW on the mixture; the losses, the first batch and the model."""
    import torch
    from torch.utils.data import DataLoader
    stream = PackedStream(mixture_sampler(open_cache(str(cache)), "t0_train", seed=42), LENGTHS,
                          pack=packed)
    model = tiny_t5()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    losses, first = [], None
    batches = DataLoader(torch_stream(stream), batch_size=BATCH)
    for batch in itertools.islice(batches, STEPS):
        first = first or batch
        loss = t5_forward(model, batch).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.item())
    print(f"{'packed' if packed else 'padded'}: loss {losses[0]:.3f} -> {losses[-1]:.3f}, "
          f"first 5 {np.mean(losses[:5]):.3f}, last 5 {np.mean(losses[-5:]):.3f}")
    return losses, first, model


def assert_learns(losses: list[float]) -> None:
    assert len(losses) == STEPS and all(np.isfinite(losses))
    assert np.mean(losses[-5:]) < np.mean(losses[:5]) - 1.0, losses


def assert_user_batch(batch: dict, names: tuple[str, ...]) -> None:
    """What a DataLoader over the stream gives: int32 tensors, [batch, length]."""
    import torch
    assert tuple(batch) == names
    for name, tensor in batch.items():
        length = LENGTHS["inputs" if name.startswith("encoder") else "targets"]
        assert tensor.dtype == torch.int32 and tuple(tensor.shape) == (BATCH, length), name


def test_a_tiny_t5_learns_from_padded_rows(demo_cache):
    import torch
    losses, batch, model = train(demo_cache, packed=False)
    assert_learns(losses)
    assert_user_batch(batch, PADDED)
    inputs = t5_inputs(batch)
    assert set(inputs) == {"input_ids", "attention_mask", "decoder_input_ids", "labels"}
    assert all(tensor.dtype == torch.int64 for tensor in inputs.values())
    assert torch.equal(inputs["attention_mask"], (batch["encoder_input_tokens"] != 0).long())
    weighted = batch["decoder_loss_weights"] == 1
    assert (~weighted).any() and (inputs["labels"][~weighted] == IGNORED).all()
    assert torch.equal(inputs["labels"][weighted], batch["decoder_target_tokens"][weighted].long())
    # p3data's decoder inputs are what HF makes of the labels by itself
    assert torch.equal(model._shift_right(inputs["labels"]), inputs["decoder_input_ids"])


def test_a_tiny_t5_learns_from_packed_rows(demo_cache):
    import torch
    losses, batch, _ = train(demo_cache, packed=True)
    assert_learns(losses)
    assert_user_batch(batch, PACKED)
    segments = batch["decoder_segment_ids"]
    assert segments.max(dim=1).values.float().mean() > 1.5  # rows hold several examples
    inputs = t5_inputs(batch)
    encoder, decoder = LENGTHS["inputs"], LENGTHS["targets"]
    shapes = {"input_ids": (BATCH, encoder), "decoder_input_ids": (BATCH, decoder),
              "labels": (BATCH, decoder), "attention_mask": (BATCH, 1, encoder, encoder),
              "decoder_attention_mask": (BATCH, 1, decoder, decoder),
              "encoder_attention_mask": (BATCH, 1, decoder, encoder)}
    assert {name: tuple(tensor.shape) for name, tensor in inputs.items()} == shapes
    for name in ("attention_mask", "decoder_attention_mask", "encoder_attention_mask"):
        mask = inputs[name]
        assert mask.dtype == torch.float32, name
        assert set(mask.unique().tolist()) == {0.0, torch.finfo(torch.float32).min}, name
    starts = (batch["decoder_positions"] == 0) & (segments != 0)
    assert starts.sum() > BATCH and (inputs["decoder_input_ids"][starts] == 0).all()


def token_nll(model: T5ForConditionalGeneration, rows: list[dict]) -> np.ndarray:
    """The negative log-likelihood of each weighted target token of the rows, in stream order
    (packed rows keep their examples' order)."""
    import torch
    batch = {name: np.stack([row[name] for row in rows]) for name in rows[0]}
    with torch.no_grad():
        logits = t5_forward(model, batch).logits
    labels = t5_inputs(batch)["labels"]
    scores = torch.log_softmax(logits.double(), dim=-1)
    nll = -scores.gather(-1, labels.clamp(min=0)[..., None])[..., 0]
    return nll[labels != IGNORED].numpy()


@pytest.mark.parametrize("attention", ["eager", "sdpa"])
def test_packed_rows_score_their_examples_as_padded_rows_do(demo_cache, attention):
    """The 4-D masks keep each example to itself: the same examples give the same loss."""
    sampler = mixture_sampler(open_cache(str(demo_cache)), "t0_train", seed=7)
    examples = [next(sampler) for _ in range(64)]
    padded, packed = list(pack(examples, LENGTHS, pack=False)), list(pack(examples, LENGTHS))
    assert len(packed) < len(padded) == len(examples)
    model = tiny_t5(attention).eval()
    nll_padded, nll_packed = token_nll(model, padded), token_nll(model, packed)
    print(f"{attention}: summed NLL padded {nll_padded.sum():.4f} ({len(padded)} rows), packed "
          f"{nll_packed.sum():.4f} ({len(packed)} rows), {len(nll_packed)} tokens, largest "
          f"difference of a token {np.abs(nll_packed - nll_padded).max():.2e}")
    assert len(nll_packed) == len(nll_padded) > 0
    assert nll_packed.sum() == pytest.approx(nll_padded.sum(), rel=1e-4)
    np.testing.assert_allclose(nll_packed, nll_padded, rtol=1e-4, atol=1e-5)
    # without the segment masks the packed examples see each other: tokens score otherwise
    unmasked = token_nll(model, [{name: row[name] for name in PADDED} for row in packed])
    assert np.abs(unmasked - nll_padded).max() > 1e-2


def test_masks_of_one_packed_row():
    """Two examples in one row: who attends whom, entry by entry."""
    import torch
    examples = [{"inputs": [5, 6, 1], "targets": [7, 1]}, {"inputs": [8, 1], "targets": [9, 4, 1]}]
    (row,) = pack(examples, {"inputs": 6, "targets": 6})  # one row of 2, then padding
    inputs = t5_inputs(row)  # a single row: a batch of one
    attends = {name: inputs[name][0, 0] == 0 for name in
               ("attention_mask", "decoder_attention_mask", "encoder_attention_mask")}
    assert torch.equal(attends["attention_mask"][:, :5], torch.tensor(
        [[1, 1, 1, 0, 0]] * 3 + [[0, 0, 0, 1, 1]] * 2 + [[0, 0, 0, 0, 0]], dtype=torch.bool))
    assert not attends["attention_mask"][:, 5].any()  # nobody attends the padding
    assert torch.equal(attends["decoder_attention_mask"][:5, :5], torch.tensor(
        [[1, 0, 0, 0, 0], [1, 1, 0, 0, 0], [0, 0, 1, 0, 0], [0, 0, 1, 1, 0], [0, 0, 1, 1, 1]],
        dtype=torch.bool))
    assert torch.equal(attends["encoder_attention_mask"][:5, :5], torch.tensor(
        [[1, 1, 1, 0, 0]] * 2 + [[0, 0, 0, 1, 1]] * 3, dtype=torch.bool))
    assert inputs["decoder_input_ids"].tolist() == [[0, 7, 0, 9, 4, 0]]
    assert inputs["labels"].tolist() == [[7, 1, 9, 4, 1, IGNORED]]
    with pytest.raises(P3DataError, match="lacks decoder_loss_weights"):
        t5_inputs({name: value for name, value in row.items() if name != "decoder_loss_weights"})
