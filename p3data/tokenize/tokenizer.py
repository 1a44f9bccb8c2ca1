"""Batch tokenization with SentencePiece, giving exactly seqio's ids for T0's vocabularies.

seqio adds the extra ids to the model as user-defined pieces `▁<extra_id_N>` (in reverse
order) before loading it; the same is done here on the model bytes, so the cache and seqio's
on-the-fly tokenization agree without importing seqio or TensorFlow on workers.

Short texts (labels, answer choices) are looked up whole; longer ones go to the memo
(`memo.WordMemo`), which segments each distinct sentence and word once. The contract is identity
with `SentencePieceProcessor.encode`; whatever could break it sends the text, or the whole
model, to plain encoding. The cache asks for ids packed as varints (`encode_packed`), which is
how the memo keeps them, and joins the ids of texts joined by a separator where the model makes
them the whole text's (`join`: a few-shot prompt from its exemplars' ids and its query's).
Texts that will not come again (`encode_packed(once=True)`: a passage cut to fit) leave their
sentences and words in the memo, not themselves; `word_lengths` says how many of a text's ids
each of its words has.
`P3DATA_TOKENIZER_MEMO=0` (or `Tokenizer(memo=False)`) sends every text to plain encoding, and
turns joining off: the same ids, for anyone who needs to rule the shortcuts out (joining also
needs the memo's score magnitudes to guard unigram ties).
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
from collections.abc import Sequence
from typing import Protocol

import numpy as np
import sentencepiece as spm
from sentencepiece import sentencepiece_model_pb2 as model_pb2

from p3data.errors import P3DataError
from p3data.gc_policy import collection_paused
from p3data.tokenize.checks import (
    PIECE,
    WORD_START,
    Pieces,
    join_refusal,
    word_split_refusal,
)
from p3data.tokenize.entries import NEVER, Entry, entry_of, joined, trusted
from p3data.tokenize.memo import BoundedMemo, WordMemo
from p3data.varints import unpacked

EOS_ID = 1
# Short strings (labels, answer choices) repeat across rows and templates: tokenize them once.
MEMO_MAX_CHARS = 64
# Bytes of them held between calls (`BoundedMemo`): labels and answer choices recur, a
# dataset's one-off short texts (titles, summaries) make way for them.
TEXT_MEMO_BYTES = 4 << 20
# "0" turns the memos off: every text goes to `SentencePieceProcessor.encode` as it is.
ENV_MEMO = "P3DATA_TOKENIZER_MEMO"
_OFF, _ON = ("0", "false", "no", "off"), ("", "1", "true", "yes", "on")

_LOG = logging.getLogger(__name__)


def with_extra_ids(model: bytes, extra_ids: int) -> bytes:
    """The model proto seqio's `SentencePieceVocabulary(extra_ids=...)` tokenizes with."""
    proto = model_pb2.ModelProto.FromString(model)
    for i in reversed(range(extra_ids)):
        proto.pieces.add(piece=f"▁<extra_id_{i}>", score=0.0, type=PIECE.USER_DEFINED)
    return proto.SerializeToString()


@functools.lru_cache(maxsize=2)
def loaded(model: bytes) -> spm.SentencePieceProcessor:
    """The model loaded once per process (its encoding is thread-safe): `read_vocabulary`
    checks a model by loading it, and a DirectRunner's workers, in the same process, tokenize
    with that load (mT5's 250,100 pieces take ~0.4 CPU-s)."""
    return spm.SentencePieceProcessor(model_proto=model)


def memo_setting() -> bool:
    """Whether `ENV_MEMO` leaves the memo on (it is, unless set to 0, false, no or off)."""
    value = os.environ.get(ENV_MEMO, "")
    if value.strip().lower() not in _OFF + _ON:
        raise P3DataError(f"{ENV_MEMO}={value!r}: 1 uses the memo (the default), 0 encodes "
                          "every text plainly")
    return value.strip().lower() not in _OFF


class Packed(Protocol):
    """A text's ids as one packed run of varints (as a `tf.train.Example` holds them), and how
    many of them are neither 0 nor 1 (padding and EOS, which seqio's statistics leave out)."""

    @property
    def varints(self) -> bytes: ...

    @property
    def tokens(self) -> int: ...


class Tokenizer:
    """Encodes batches of strings to exactly `SentencePieceProcessor.encode`'s id lists."""

    def __init__(self, model: bytes, extra_ids: int, *, memo: bool | None = None):
        """`memo`: whether to memoize texts, sentences and words (None: `memo_setting()`);
        without, each text goes to `SentencePieceProcessor.encode`, for the same ids."""
        self.model_sha256 = hashlib.sha256(model).hexdigest()
        seqio_model = with_extra_ids(model, extra_ids)
        self._proto = model_pb2.ModelProto.FromString(seqio_model)
        self._processor = loaded(seqio_model)
        self._memoized = memo_setting() if memo is None else memo
        self._off = None if self._memoized else "turned off by " + (
            "memo=False" if memo is False else ENV_MEMO)
        self._pieces = Pieces.of(self._proto)
        refusal = self._off or word_split_refusal(self._proto, pieces=self._pieces)
        if refusal:
            _log_shortcut(self.model_sha256, "plain encoding, not word by word", refusal)
        self.memo = None if refusal else WordMemo(self._proto, self._processor.normalize,
                                                  pieces=self._pieces)
        self._texts = BoundedMemo(TEXT_MEMO_BYTES)  # short texts
        self._joins: dict[str, bool] = {}

    def encode(self, texts: Sequence[str]) -> list[list[int]]:
        return [unpacked(entry.varints).tolist() for entry in self._entries(texts)]

    def encode_packed(self, texts: Sequence[str], *, once: bool = False) -> list[Entry]:
        """`encode`'s ids, packed: as the memo keeps them (nothing per id). `once`: texts that
        will not come again (a passage cut to fit): the memo keeps their sentences and words,
        not the texts themselves, so that they push nothing that recurs out of it."""
        return self._entries(texts, once=once)

    def joins(self, separator: str) -> bool:
        """Whether `join` may join the ids of texts that `separator` joins (`join_refusal`)."""
        if separator not in self._joins:
            refusal = self._off or join_refusal(self._proto, separator,
                                                self._processor.normalize, pieces=self._pieces)
            if refusal:
                _log_shortcut(self.model_sha256, f"texts joined by {separator!r} are encoded "
                              "whole", refusal)
            self._joins[separator] = refusal is None
        return self._joins[separator]

    def join(self, parts: Sequence[Entry], *, separator: str) -> Entry | None:
        """The ids of the text `a + separator + b + ... + z` from those of `a + separator`,
        `b + separator`, ..., `z` (`encode_packed`'s entries); None if the model does not
        allow it (`joins`) or a unigram tie might go another way: encode that text whole."""
        if len(parts) == 1:  # the text itself
            return parts[0]
        if not self.joins(separator):
            return None
        entry = joined(list(parts))
        return entry if trusted(entry) else None

    def word_lengths(self, ids: Packed) -> np.ndarray | None:
        """How many ids each word of a text has, in order (`encode_packed`'s ids of it; a word
        begins at each piece that starts with ▁, a text's head before the first), where the
        model splits texts into words (`word_split_refusal`, the memo on); else None. Where raw
        whitespace makes the words, it tells what cutting a text at a word costs in tokens."""
        if self.memo is None:
            return None
        varints = ids.varints
        if varints.isascii():  # every id below 128, a byte each: marked by table, in C
            initial = np.frombuffer(varints.translate(self._word_initial_bytes), np.bool_)
        else:
            initial = self._word_initial[unpacked(varints)]
        if not initial.size:
            return np.zeros(0, np.int64)
        starts = np.flatnonzero(initial)
        if not starts.size or starts[0]:  # a text's head, before its first ▁, is a word too
            starts = np.concatenate(([0], starts))
        bounds = np.concatenate((starts, [len(initial)]))
        return bounds[1:] - bounds[:-1]

    @functools.cached_property
    def _word_initial(self) -> np.ndarray:
        """Per id, whether its piece starts with ▁ (begins a word)."""
        return np.array([text.startswith(WORD_START) for text in self._pieces.texts])

    @functools.cached_property
    def _word_initial_bytes(self) -> bytes:
        """`_word_initial` of the ids below 128, as a `bytes.translate` table (1: a word's)."""
        table = bytearray(256)
        first = self._word_initial[:128]
        table[:len(first)] = first.astype(np.uint8).tobytes()
        return bytes(table)

    def _entries(self, texts: Sequence[str], *, once: bool = False) -> list[Entry]:
        # the memos hold ~10^5 entries, which every older collection walks: a batch's many
        # small objects (acyclic) would trigger some (~15% of the CPU on new text)
        with collection_paused():
            return self._found_entries(texts, once=once)

    def _found_entries(self, texts: Sequence[str], *, once: bool) -> list[Entry]:
        if not self._memoized:
            return list(map(_plain, self._processor.encode(list(texts), num_threads=1)))
        memo = self._texts
        distinct = set(texts)
        missing = [t for t in distinct if len(t) > MEMO_MAX_CHARS or t not in memo]
        memo.touch(distinct)
        if not missing:
            return list(map(memo.__getitem__, texts))
        encoded = dict(zip(missing, self._encode_distinct(missing, once=once), strict=True))
        found = [encoded[t] if t in encoded else memo[t] for t in texts]
        short = [t for t in encoded if len(t) <= MEMO_MAX_CHARS and not once]
        memo.add(short, [encoded[t] for t in short])
        memo.bound()
        return found

    def _encode_distinct(self, texts: list[str], *, once: bool) -> list[Entry]:
        found = (self.memo.lookup(texts, once=once) if self.memo is not None
                 else [None] * len(texts))
        plain = [i for i, entry in enumerate(found) if entry is None]
        if plain:
            encoded = self._processor.encode([texts[i] for i in plain], num_threads=1)
            for i, ids in zip(plain, encoded, strict=True):
                found[i] = _plain(ids)
        return found


def _plain(ids: list[int]) -> Entry:
    """A plainly encoded text's entry: no score magnitude known, so never `join`ed."""
    return entry_of(ids, 0.0, NEVER)


@functools.cache
def _log_shortcut(model_sha256: str, what: str, reason: str) -> None:
    """Once per model, shortcut and process."""
    _LOG.info("SentencePiece model %s…: %s (%s)", model_sha256[:12], what, reason)
