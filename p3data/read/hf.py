"""Hugging Face transformers' T5 (`T5ForConditionalGeneration`) fed from `pack`/`PackedStream`.

`t5_inputs` turns a row or batch of rows (int32, numpy or torch) into the model's keyword
arguments: int64 ids, `labels` with -100 where the loss weight is 0, and the decoder inputs
p3data made (each segment starts with 0, which HF's `_shift_right` cannot do for packed rows).

HF T5 takes no segment ids. A packed row is masked instead with 4-D masks, which HF passes to
the attention as they are; eager attention *adds* them to the scores, so they are additive
(0 where attended, the dtype's minimum elsewhere; SDPA takes such masks too):
- encoder self-attention: same segment, not padding;
- decoder self-attention: same segment, causal;
- cross-attention (`encoder_attention_mask`): the decoder's segment equals the encoder's.
`T5ForConditionalGeneration.forward` gives its one `attention_mask` to the encoder and to the
cross-attention alike, so `t5_forward` runs the encoder with its own mask first. T5's relative
position buckets depend on distances only, so within a segment they equal an unpacked row's:
a packed row's loss equals its examples' padded loss.

torch is imported when called: reading a cache never needs it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from p3data.errors import P3DataError

if TYPE_CHECKING:
    import torch

PACKED = ("encoder_segment_ids", "decoder_segment_ids")
NEEDED = ("encoder_input_tokens", "decoder_target_tokens", "decoder_input_tokens",
          "decoder_loss_weights")
IGNORED = -100  # HF's label for a position without loss (CrossEntropyLoss's ignore_index)


def t5_inputs(batch: Mapping[str, Any], *, dtype: torch.dtype | None = None,
              device: torch.device | str | None = None) -> dict[str, torch.Tensor]:
    """Keyword arguments of `T5ForConditionalGeneration` for a row or batch of `pack` output.

    Padded rows: `input_ids`, `attention_mask` (2-D, 1 on tokens), `decoder_input_ids`,
    `labels`: `model(**t5_inputs(batch))`. Packed rows (with segment ids) add 4-D additive
    `attention_mask` and `decoder_attention_mask` of `dtype` (the model's: float32 by default)
    and the cross-attention's `encoder_attention_mask`, which `t5_forward` passes where it
    belongs."""
    import torch

    if missing := [name for name in NEEDED if name not in batch]:
        raise P3DataError(f"a T5 batch needs {', '.join(NEEDED)}; it lacks {', '.join(missing)}"
                          " (give it rows of p3data.read.pack or PackedStream)")
    rows = {name: torch.atleast_2d(torch.as_tensor(value, device=device)).long()
            for name, value in batch.items() if name in (*NEEDED, *PACKED)}
    labels = rows["decoder_target_tokens"].masked_fill(rows["decoder_loss_weights"] == 0,
                                                       IGNORED)
    inputs = {"input_ids": rows["encoder_input_tokens"],
              "decoder_input_ids": rows["decoder_input_tokens"], "labels": labels}
    if not all(name in rows for name in PACKED):
        return inputs | {"attention_mask": (rows["encoder_input_tokens"] != 0).long()}
    encoder, decoder = rows["encoder_segment_ids"], rows["decoder_segment_ids"]
    length = decoder.shape[1]
    causal = torch.ones(length, length, dtype=torch.bool, device=decoder.device).tril()
    masks = {"attention_mask": _same_segment(encoder, encoder),
             "decoder_attention_mask": _same_segment(decoder, decoder) & causal,
             "encoder_attention_mask": _same_segment(decoder, encoder)}
    dtype = dtype or torch.float32
    return inputs | {name: torch.zeros(mask.shape, dtype=dtype, device=mask.device).masked_fill_(
        ~mask, torch.finfo(dtype).min)[:, None] for name, mask in masks.items()}  # 1 head dim


def t5_forward(model: Any, batch: Mapping[str, Any], **kwargs: Any) -> Any:
    """`model`'s output (`.loss`, `.logits`) on a batch of `pack` output, padded or packed, its
    tensors on the model's device and masks in its dtype; `kwargs` go to the model's call.

    For packed rows the encoder runs first with its self-attention mask, then the model with
    the cross-attention mask as `attention_mask` (what the decoder's cross-attention gets)."""
    inputs = t5_inputs(batch, dtype=model.dtype, device=model.device)
    cross = inputs.pop("encoder_attention_mask", None)
    if cross is None:
        return model(**inputs, **kwargs)
    encoded = model.get_encoder()(input_ids=inputs.pop("input_ids"),
                                  attention_mask=inputs.pop("attention_mask"))
    return model(**inputs, attention_mask=cross, encoder_outputs=encoded, **kwargs)


def _same_segment(queries: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
    """[batch, queries, keys]: True where a query may attend a key: both in one segment (and
    the key not padding, whose segment id is 0)."""
    return (queries[:, :, None] == keys[:, None, :]) & (keys[:, None, :] != 0)
