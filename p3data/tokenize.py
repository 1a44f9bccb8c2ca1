"""Batch tokenization with SentencePiece, giving exactly seqio's ids for T0's vocabularies.

seqio adds the extra ids to the model as user-defined pieces `▁<extra_id_N>` (in reverse
order) before loading it; the same is done here on the model bytes, so the cache and seqio's
on-the-fly tokenization agree without importing seqio or TensorFlow on workers.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import sentencepiece as spm
from sentencepiece import sentencepiece_model_pb2 as model_pb2

EOS_ID = 1
# Short strings (labels, answer choices) repeat across rows and templates: tokenize them once.
MEMO_MAX_CHARS = 64
_MEMO_MAX_ENTRIES = 200_000


def with_extra_ids(model: bytes, extra_ids: int) -> bytes:
    """The model proto seqio's `SentencePieceVocabulary(extra_ids=...)` tokenizes with."""
    proto = model_pb2.ModelProto.FromString(model)
    piece = model_pb2.ModelProto.SentencePiece
    for i in reversed(range(extra_ids)):
        proto.pieces.add(piece=f"▁<extra_id_{i}>", score=0.0, type=piece.USER_DEFINED)
    return proto.SerializeToString()


class Tokenizer:
    """Encodes batches of strings to id lists with one C++ call per batch."""

    def __init__(self, model: bytes, extra_ids: int):
        self.model_sha256 = hashlib.sha256(model).hexdigest()
        self._processor = spm.SentencePieceProcessor(model_proto=with_extra_ids(model, extra_ids))
        self._memo: dict[str, list[int]] = {}

    def encode(self, texts: Sequence[str]) -> list[list[int]]:
        memo = self._memo
        missing = list({t for t in texts if len(t) > MEMO_MAX_CHARS or t not in memo})
        if missing:
            encoded = dict(zip(missing, self._processor.encode(missing, num_threads=1),
                               strict=True))
            if len(memo) < _MEMO_MAX_ENTRIES:
                memo.update((t, ids) for t, ids in encoded.items() if len(t) <= MEMO_MAX_CHARS)
        else:
            encoded = {}
        return [encoded[t] if t in encoded else memo[t] for t in texts]
