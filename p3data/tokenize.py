"""Batch tokenization with SentencePiece, giving exactly seqio's ids for T0's vocabularies.

seqio adds the extra ids to the model as user-defined pieces `▁<extra_id_N>` (in reverse
order) before loading it; the same is done here on the model bytes, so the cache and seqio's
on-the-fly tokenization agree without importing seqio or TensorFlow on workers.

A cache tokenizes each row once per template (~10 of them), so the row's sentences and words
come back again and again. When no piece of the model can cross a word boundary, a text's ids
are the ids of its normalized sentences and words, concatenated: `Tokenizer` then segments each
distinct word once and looks sentences up whole. The contract is identity with
`SentencePieceProcessor.encode`; whatever could break it sends the text, or the whole model,
to plain encoding.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import math
import operator
import re
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain
from typing import NamedTuple

import sentencepiece as spm
from sentencepiece import sentencepiece_model_pb2 as model_pb2

EOS_ID = 1
# Short strings (labels, answer choices) repeat across rows and templates: tokenize them once.
MEMO_MAX_CHARS = 64
_MEMO_MAX_ENTRIES = 200_000
# Per process, the sentence and word memos hold at most this many characters of text each
# between batches (a batch of 512 news articles is ~2M): a memo over it keeps its newest half.
SENTENCE_MEMO_CHARS = 1 << 23
WORD_MEMO_CHARS = 1 << 20

WORD_START = "\u2581"  # SentencePiece's escaped space: every word but a text's first starts with it
SENTENCE_END = "." + WORD_START
_CUT = "\0"  # marks where to cut a text into sentences, unless the text holds it
_CUT_SENTENCE_END = "." + _CUT + WORD_START
_PIECE = model_pb2.ModelProto.SentencePiece
# Piece types the encoder can match in text (control, unknown and byte pieces it cannot).
_MATCHABLE = (_PIECE.NORMAL, _PIECE.USER_DEFINED, _PIECE.UNUSED)
# SentencePiece scores an unknown character as the lowest piece score minus this (kUnkPenalty).
_UNKNOWN_PENALTY = 10.0
# Float32 exponents of a text's score magnitude (see `WordMemo`): beyond any text's, below any.
_ALWAYS, _NEVER = 1 << 20, -(1 << 20)

_LOG = logging.getLogger(__name__)


def with_extra_ids(model: bytes, extra_ids: int) -> bytes:
    """The model proto seqio's `SentencePieceVocabulary(extra_ids=...)` tokenizes with."""
    proto = model_pb2.ModelProto.FromString(model)
    for i in reversed(range(extra_ids)):
        proto.pieces.add(piece=f"▁<extra_id_{i}>", score=0.0, type=_PIECE.USER_DEFINED)
    return proto.SerializeToString()


class Tokenizer:
    """Encodes batches of strings to exactly `SentencePieceProcessor.encode`'s id lists."""

    def __init__(self, model: bytes, extra_ids: int):
        self.model_sha256 = hashlib.sha256(model).hexdigest()
        proto = model_pb2.ModelProto.FromString(with_extra_ids(model, extra_ids))
        self._processor = spm.SentencePieceProcessor(model_proto=proto.SerializeToString())
        refusal = word_split_refusal(proto)
        if refusal:
            _log_plain_encoding(self.model_sha256, refusal)
        self.memo = None if refusal else WordMemo(proto)  # None: plain encoding
        self._texts: dict[str, list[int]] = {}

    def encode(self, texts: Sequence[str]) -> list[list[int]]:
        memo = self._texts
        missing = list({t for t in texts if len(t) > MEMO_MAX_CHARS or t not in memo})
        if missing:
            encoded = dict(zip(missing, self._encode_distinct(missing), strict=True))
            if len(memo) < _MEMO_MAX_ENTRIES:
                memo.update((t, ids) for t, ids in encoded.items() if len(t) <= MEMO_MAX_CHARS)
        else:
            encoded = {}
        return [encoded[t] if t in encoded else memo[t] for t in texts]

    def _encode_distinct(self, texts: list[str]) -> list[list[int]]:
        if self.memo is None:
            return self._processor.encode(texts, num_threads=1)
        found = self.memo.encode(self._processor.normalize(texts))
        plain = [i for i, ids in enumerate(found) if ids is None]
        if plain:
            encoded = self._processor.encode([texts[i] for i in plain], num_threads=1)
            for i, ids in zip(plain, encoded, strict=True):
                found[i] = ids
        return found


def word_split_refusal(proto: model_pb2.ModelProto) -> str | None:
    """Why a text's ids might not be its words' ids under this model (None: they always are).

    Unigram and BPE segment a normalized text with pieces that start at a ▁ or hold none, so
    no piece crosses the ▁ in front of a word, if the model escapes spaces as ▁, keeps ▁ as a
    prefix, and has no piece with ▁ inside (`split_by_whitespace` false or
    `allow_whitespace_only_pieces` can make them). ▁ must be a piece of its own, so that runs
    of unknown characters, which are merged into one id, never span two words. Other trainer
    options (`split_digits`, `split_by_number`, `byte_fallback`...) only act inside words.
    Unigram scores must not be positive (`WordMemo` bounds score magnitudes by sums).
    """
    trainer = proto.trainer_spec
    kind = model_pb2.TrainerSpec.ModelType.Name(trainer.model_type)
    inside = next((p.piece for p in proto.pieces
                   if p.type in _MATCHABLE and WORD_START in p.piece[1:]), None)
    own = [p.type for p in proto.pieces if p.piece == WORD_START]
    reasons = {
        f"a {kind} model (only UNIGRAM and BPE are known)": kind not in ("UNIGRAM", "BPE"),
        "split_by_whitespace is false": not trainer.split_by_whitespace,
        "treat_whitespace_as_suffix is true": trainer.treat_whitespace_as_suffix,
        "escape_whitespaces is false": not proto.normalizer_spec.escape_whitespaces,
        f"piece {inside!r} has ▁ inside": inside is not None,
        "▁ is not a piece of its own": own not in ([_PIECE.NORMAL], [_PIECE.USER_DEFINED]),
        "a UNIGRAM model with positive scores": kind == "UNIGRAM" and any(
            p.score > 0 for p in proto.pieces if p.type == _PIECE.NORMAL),
    }
    return "; ".join(reason for reason, applies in reasons.items() if applies) or None


@functools.cache
def _log_plain_encoding(model_sha256: str, reason: str) -> None:
    """Once per model and process."""
    _LOG.info("SentencePiece model %s…: plain encoding, not word by word (%s)",
              model_sha256[:12], reason)


@dataclass
class MemoStats:
    """What the memos saved, and how many texts still went to plain encoding."""

    texts: int = 0
    plain_texts: int = 0
    sentences: int = 0
    new_sentences: int = 0
    words: int = 0  # words of new sentences
    new_words: int = 0


class _Entry(NamedTuple):
    """A sentence's or word's ids, the magnitude of its score (a bound on how much it adds to a
    text's), and the largest float32 exponent of a text's magnitude it can sit in."""

    ids: list[int]
    magnitude: float
    exponent: int


_IDS, _MAGNITUDE, _EXPONENT = (operator.itemgetter(i) for i in range(3))


class WordMemo:
    """Ids of normalized sentences and words, each segmented once per process.

    A text splits into sentences after ".▁", a sentence into words before each ▁; a text's head
    (its text before the first ▁, empty unless the model adds no dummy prefix) is keyed by its
    text followed by ▁, which no word is.

    Unigram models need a guard. SentencePiece's Viterbi adds float32 scores from the start of
    the text, so where two segmentations of a word score nearly alike (exact ties are common:
    "▁" "==" "=" against "▁" "=" "=="), which one it keeps depends on rounding at the magnitude
    of the text's score so far. Rounding moves a path's score by at most half a float32 spacing
    per piece, in the text and alone, at a magnitude bounded by the summed magnitudes of the
    text's words plus the word's own worst case: a word's margin over its runner-up
    (`NBestEncode`) must beat that for both paths, twice over. Each word keeps the largest
    exponent of the text's magnitude at which it does; a text beyond one of its words'
    exponents is encoded plainly. Words holding a user-defined piece are never trusted
    (`NBestEncode` scores those pieces by characters, `Encode` by bytes), nor words whose ids
    are not NBest's best. BPE merges by single piece scores: nothing to guard.
    """

    def __init__(self, proto: model_pb2.ModelProto):
        words = model_pb2.ModelProto()
        words.CopyFrom(proto)  # the same model, reading text that is already normalized
        words.normalizer_spec.CopyFrom(model_pb2.NormalizerSpec(
            name="identity", add_dummy_prefix=False, remove_extra_whitespaces=False,
            escape_whitespaces=False))
        self._processor = spm.SentencePieceProcessor(model_proto=words.SerializeToString())
        self.stats = MemoStats()
        self._sentences = _Memo()
        self._words = _Memo()
        self._guarded = proto.trainer_spec.model_type == model_pb2.TrainerSpec.UNIGRAM
        unknown = min((p.score for p in proto.pieces if p.type == _PIECE.NORMAL),
                      default=0.0) - _UNKNOWN_PENALTY
        self._max_magnitude = -unknown
        # Scores as the segmentation counts them (`_guard`)
        self._scores = [unknown if p.type == _PIECE.UNKNOWN else p.score for p in proto.pieces]
        user_defined = [re.escape(p.piece) for p in proto.pieces if p.type == _PIECE.USER_DEFINED]
        self._user_defined = re.compile("|".join(user_defined)) if user_defined else None

    @property
    def held(self) -> tuple[int, int]:
        """Characters of sentences and of words held."""
        return self._sentences.chars, self._words.chars

    def encode(self, normalized: list[str]) -> list[list[int] | None]:
        """Each text's ids, None where it must be encoded plainly."""
        split = [_sentences(text) for text in normalized]
        memo = self._sentences
        missing = {s for sentences in split for s in sentences if s not in memo}
        if missing:
            self._add_sentences(missing)
        found: list[list[int] | None] = []
        for sentences in split:
            entries = list(map(memo.__getitem__, sentences))
            if self._guarded and (math.frexp(sum(map(_MAGNITUDE, entries)))[1]
                                  > min(map(_EXPONENT, entries))):
                found.append(None)
            else:
                found.append(list(chain.from_iterable(map(_IDS, entries))))
        self.stats.texts += len(split)
        self.stats.plain_texts += found.count(None)
        self.stats.sentences += sum(map(len, split))
        self.stats.new_sentences += len(missing)
        memo.bound(SENTENCE_MEMO_CHARS)
        return found

    def _add_sentences(self, sentences: set[str]) -> None:
        split = {s: s.split(WORD_START) for s in sentences}
        for words in split.values():
            if words[0]:
                words[0] += WORD_START  # the head's key
            else:
                del words[0]
        memo = self._words
        missing = {w for words in split.values() for w in words if w not in memo}
        if missing:
            self._add_words(missing)
        for sentence, words in split.items():
            entries = list(map(memo.__getitem__, words))
            self._sentences.add(sentence, _Entry(
                list(chain.from_iterable(map(_IDS, entries))), sum(map(_MAGNITUDE, entries)),
                min(map(_EXPONENT, entries), default=_ALWAYS)))
        self.stats.words += sum(map(len, split.values()))
        self.stats.new_words += len(missing)
        memo.bound(WORD_MEMO_CHARS)

    def _add_words(self, keys: set[str]) -> None:
        keys = list(keys)
        texts = [key[:-1] if key.endswith(WORD_START) else WORD_START + key for key in keys]
        encoded = self._processor.encode(texts, num_threads=1)
        for key, text, ids in zip(keys, texts, encoded, strict=True):
            self._words.add(key, self._guard(text, ids) if self._guarded
                            else _Entry(ids, 0.0, _ALWAYS))

    def _guard(self, text: str, ids: list[int]) -> _Entry:
        """The word's entry, with the largest exponent at which rounding cannot change it."""
        if self._user_defined and self._user_defined.search(text):
            return _Entry(ids, 0.0, _NEVER)
        result = self._processor.nbest_encode_as_immutable_proto(text, nbest_size=2)
        nbest = result.nbests  # views into `result`, which must outlive them
        best = nbest[0].score
        if len(nbest) == 1:  # the only segmentation there is
            return _Entry(ids, -best, _ALWAYS)
        margin = best - nbest[1].score
        # Any other segmentation scores at most best - margin, so `ids` are best's if they score
        # nearer than that; merged unknown or byte pieces score otherwise: compare the ids.
        if (not abs(sum(map(self._scores.__getitem__, ids)) - best) < margin / 2
                and self._processor.nbest_encode_as_ids(text, nbest_size=1)[0] != ids):
            return _Entry(ids, -best, _NEVER)
        # Needed: margin > 2 paths x 2 (text, alone) x length/2 x spacing, x 2 to spare (which
        # also covers NBest's own rounding of the margin). The
        # spacing at exponent e (magnitudes in [2**(e-1), 2**e)) is 2**(e-24); the text's and
        # the word's own parts of the magnitude at most double it: the largest e with
        # 8 x length x spacing below the margin, if the word's own part passes on its own.
        allowed = margin / (8 * len(text))
        own = self._max_magnitude * len(text)
        if math.ldexp(1.0, math.frexp(own)[1] - 24) >= allowed:
            return _Entry(ids, -best, _NEVER)
        return _Entry(ids, -best, math.ceil(24 + math.log2(allowed)) - 1)


def _sentences(text: str) -> list[str]:
    """`text` cut after each ".▁": pieces that start at a word and join back to `text`."""
    if _CUT in text:
        return [text]
    return text.replace(SENTENCE_END, _CUT_SENTENCE_END).split(_CUT)


class _Memo(dict):
    """Entries by text, counting the characters of text held."""

    def __init__(self):
        super().__init__()
        self.chars = 0

    def add(self, text: str, entry: _Entry) -> None:
        self[text] = entry
        self.chars += len(text)

    def bound(self, chars: int) -> None:
        """Over `chars`, keep the newest entries that hold at most half of them."""
        if self.chars <= chars:
            return
        kept, self.chars = [], 0
        for text in reversed(self):  # newest first
            if self.chars + len(text) > chars // 2:
                break
            kept.append((text, self[text]))
            self.chars += len(text)
        self.clear()
        self.update(reversed(kept))
