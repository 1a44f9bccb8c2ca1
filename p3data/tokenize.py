"""Batch tokenization with SentencePiece, giving exactly seqio's ids for T0's vocabularies.

seqio adds the extra ids to the model as user-defined pieces `▁<extra_id_N>` (in reverse
order) before loading it; the same is done here on the model bytes, so the cache and seqio's
on-the-fly tokenization agree without importing seqio or TensorFlow on workers.

A cache tokenizes each row once per template (~10 of them), so the row's sentences and words
come back again and again. When no piece of the model can cross a word boundary, a text's ids
are the ids of its normalized sentences and words, concatenated: `Tokenizer` then segments each
distinct word once and looks sentences up whole; when the normalizer leaves "." and " " alone,
it also normalizes each distinct sentence once, cutting the raw text. The contract is identity
with `SentencePieceProcessor.encode`; whatever could break it sends the text, or the whole
model, to plain encoding. The cache asks for ids packed as varints (`encode_packed`), which the
memo keeps per sentence: a long text's packed ids are a join of a few byte strings.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import math
import re
import struct
import sys
from array import array
from bisect import bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import accumulate, chain, filterfalse, islice
from typing import NamedTuple, Protocol

import numpy as np
import sentencepiece as spm
from sentencepiece import sentencepiece_model_pb2 as model_pb2

from p3data.varints import packed, unpacked

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
RAW_SENTENCE_END = ". "
_CUT = "\0"  # marks where to cut a text into sentences, unless the text holds it
_CUT_SENTENCE_END = "." + _CUT + WORD_START
_PIECE = model_pb2.ModelProto.SentencePiece
# Piece types the encoder can match in text (control, unknown and byte pieces it cannot).
_MATCHABLE = (_PIECE.NORMAL, _PIECE.USER_DEFINED, _PIECE.UNUSED)
# SentencePiece scores an unknown character as the lowest piece score minus this (kUnkPenalty).
_UNKNOWN_PENALTY = 10.0
# Float32 exponents of a text's score magnitude (see `WordMemo`): beyond any text's, below any.
_ALWAYS, _NEVER = 1 << 20, -(1 << 20)
_FLOAT32 = struct.Struct("f")

_LOG = logging.getLogger(__name__)


def _float32(value: float) -> float:
    """`value` rounded to float32, as C++ stores a double in a float."""
    return _FLOAT32.unpack(_FLOAT32.pack(value))[0]


def with_extra_ids(model: bytes, extra_ids: int) -> bytes:
    """The model proto seqio's `SentencePieceVocabulary(extra_ids=...)` tokenizes with."""
    proto = model_pb2.ModelProto.FromString(model)
    for i in reversed(range(extra_ids)):
        proto.pieces.add(piece=f"▁<extra_id_{i}>", score=0.0, type=_PIECE.USER_DEFINED)
    return proto.SerializeToString()


class Packed(Protocol):
    """A text's ids as one packed run of varints (as a `tf.train.Example` holds them), and how
    many of them are neither 0 nor 1 (padding and EOS, which seqio's statistics leave out)."""

    @property
    def varints(self) -> bytes: ...

    @property
    def tokens(self) -> int: ...


class Tokenizer:
    """Encodes batches of strings to exactly `SentencePieceProcessor.encode`'s id lists."""

    def __init__(self, model: bytes, extra_ids: int):
        self.model_sha256 = hashlib.sha256(model).hexdigest()
        proto = model_pb2.ModelProto.FromString(with_extra_ids(model, extra_ids))
        self._processor = spm.SentencePieceProcessor(model_proto=proto.SerializeToString())
        refusal = word_split_refusal(proto)
        if refusal:
            _log_plain_encoding(self.model_sha256, refusal)
        self.memo = None if refusal else WordMemo(proto, self._processor.normalize)
        self._texts: dict[str, _Entry] = {}  # short texts

    def encode(self, texts: Sequence[str]) -> list[list[int]]:
        return [unpacked(entry.varints).tolist() for entry in self._entries(texts)]

    def encode_packed(self, texts: Sequence[str]) -> list[Packed]:
        """`encode`'s ids, packed: as the memo keeps them (nothing per id)."""
        return self._entries(texts)

    def _entries(self, texts: Sequence[str]) -> list[_Entry]:
        memo = self._texts
        missing = list({t for t in texts if len(t) > MEMO_MAX_CHARS or t not in memo})
        if not missing:
            return list(map(memo.__getitem__, texts))
        encoded = dict(zip(missing, self._encode_distinct(missing), strict=True))
        if len(memo) < _MEMO_MAX_ENTRIES:
            memo.update((t, entry) for t, entry in encoded.items() if len(t) <= MEMO_MAX_CHARS)
        return [encoded[t] if t in encoded else memo[t] for t in texts]

    def _encode_distinct(self, texts: list[str]) -> list[_Entry]:
        found = self.memo.lookup(texts) if self.memo is not None else [None] * len(texts)
        plain = [i for i, entry in enumerate(found) if entry is None]
        if plain:
            encoded = self._processor.encode([texts[i] for i in plain], num_threads=1)
            for i, ids in zip(plain, encoded, strict=True):
                found[i] = _entry(ids)
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


def ascii_refusal(proto: model_pb2.ModelProto) -> str | None:
    """Why a sentence of printable ASCII, without leading, trailing or repeated spaces, might
    not normalize to "▁" and itself with "▁" for each space (None: it always does).

    Each character is copied as it is unless a rule key matches there; in such a sentence only
    keys made of printable ASCII can (user-defined pieces are copied as they are too), and no
    space is dropped."""
    spec = proto.normalizer_spec
    reasons = {
        "add_dummy_prefix is false": not spec.add_dummy_prefix,
        "escape_whitespaces is false": not spec.escape_whitespaces,
        "a normalization rule rewrites printable ASCII": _rules_hold_only(
            spec.precompiled_charsmap, _PRINTABLE_ASCII),
    }
    return "; ".join(reason for reason, applies in reasons.items() if applies) or None


def raw_cut_refusal(proto: model_pb2.ModelProto) -> str | None:
    """Why raw text cut after each ". " might not normalize piece by piece into the normalized
    text (None: it always does, for a model `word_split_refusal` accepts).

    The normalizer replaces the longest rule key or user-defined piece that matches at each
    point, drops leading, trailing and repeated spaces and puts a ▁ in front. If no rule key
    and no user-defined piece holds "." or " ", both are copied as they are, one match each,
    so the cut is where two matches meet. The piece before it ends in ".", which no space
    removal touches; the piece after it starts with " ": alone, that space is dropped and the ▁
    put in front stands for it, and the normalizer goes on as in the whole text, after a space.
    """
    spec = proto.normalizer_spec
    held = next((p.piece for p in proto.pieces if p.type == _PIECE.USER_DEFINED
                 and ("." in p.piece or " " in p.piece)), None)
    reasons = {
        "add_dummy_prefix is false": not spec.add_dummy_prefix,
        "remove_extra_whitespaces is false": not spec.remove_extra_whitespaces,
        f"user-defined piece {held!r} holds '.' or ' '": held is not None,
        "a normalization rule reads '.' or ' '": not _rules_skip(spec.precompiled_charsmap,
                                                                  RAW_SENTENCE_END),
    }
    return "; ".join(reason for reason, applies in reasons.items() if applies) or None


# A unit of a darts-clone double array (SentencePiece's rule trie): its label byte (with a bit
# that no byte has), whether a key ends at it, and where its children are.
_LABEL = (1 << 31) | 0xFF
_HAS_LEAF = 1 << 8


def _child_base(unit: int) -> int:
    return (unit >> 10) << ((unit & (1 << 9)) >> 6)


def _trie_units(charsmap: bytes) -> array | None:
    """The darts-clone double array of a precompiled charsmap (a 4-byte size, the array of
    32-bit units, then the rules' outputs); None if the size does not fit."""
    size = int.from_bytes(charsmap[:4], "little")
    if size % 4 or size > len(charsmap) - 4:
        return None
    units = array("I", charsmap[4:4 + size])
    if sys.byteorder == "big":
        units.byteswap()
    return units


def _rules_skip(charsmap: bytes, chars: str) -> bool:
    """Whether no key of a precompiled normalization rule set holds any of the ASCII `chars`.

    The charsmap's double array holds the keys' UTF-8 bytes (`_trie_units`). A key holding a byte
    passes a unit labeled with it which ends a key or has children (child `c` of unit `i` is
    unit `i ^ base ^ c`, labeled `c`): every such unit must be a dead end (an unused one may
    carry any label: it must be a dead end too).
    """
    if not charsmap:
        return True
    units = _trie_units(charsmap)
    if units is None:
        return False
    labels = set(chars.encode())
    for index, unit in enumerate(units):
        if unit & _LABEL in labels:
            base = index ^ _child_base(unit)
            if unit & _HAS_LEAF or any(base ^ c < len(units) and units[base ^ c] & _LABEL == c
                                       for c in range(1, 256)):
                return False
    return True


_PRINTABLE_ASCII = frozenset(range(0x20, 0x7F))


def _rules_hold_only(charsmap: bytes, labels: frozenset[int]) -> bool:
    """Whether some key of a precompiled normalization rule set is made of these bytes only:
    a walk from the trie's root along units labeled with them reaches a key's end."""
    if not charsmap:
        return False
    units = _trie_units(charsmap)
    if units is None:
        return True
    pending = [0]
    while pending:
        base = pending.pop()
        base ^= _child_base(units[base])
        for label in labels:
            child = base ^ label
            if child < len(units) and units[child] & _LABEL == label:
                if units[child] & _HAS_LEAF:
                    return True
                pending.append(child)
    return False


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
    resegmented_texts: int = 0  # texts with words segmented again in place (`_resegmented`)
    pieces: int = 0  # memo keys looked up: sentences, or (raw text) first sentences, runs, rests
    new_pieces: int = 0
    new_sentences: int = 0  # sentences segmented (new pieces, and the new sentences of runs)
    words: int = 0  # words of new sentences
    new_words: int = 0


class _Entry(NamedTuple):
    """A word's, sentence's or text's ids packed as varints, how many are neither 0 nor 1, the
    magnitude of its score (a bound on how much it adds to a text's), and the largest float32
    exponent of a text's magnitude it can sit in."""

    varints: bytes
    tokens: int
    magnitude: float
    exponent: int


def _entry(ids: list[int], magnitude: float = 0.0, exponent: int = _ALWAYS) -> _Entry:
    """A word's entry."""
    return _Entry(packed(ids), len(ids) - ids.count(0) - ids.count(1), magnitude, exponent)


_EMPTY = _Entry(b"", 0, 0.0, _ALWAYS)


def _joined(parts: list[_Entry]) -> _Entry:
    """The entry of a sentence or a text made of these (their magnitudes' sum bounds its)."""
    if len(parts) == 1:
        return parts[0]
    if not parts:
        return _EMPTY
    varints, tokens, magnitudes, exponents = zip(*parts, strict=False)  # 4 fields each
    return _Entry(b"".join(varints), sum(tokens), sum(magnitudes), min(exponents))


class WordMemo:
    """Ids of sentences and words, each segmented once per process.

    Normalized text splits into sentences after ".▁", a sentence into words before each ▁; a
    text's head (its text before the first ▁, empty unless the model adds no dummy prefix) is
    keyed by its text followed by ▁, which no word is. If the model allows (`raw_cut_refusal`),
    the raw text is cut instead, after ". ", and each new sentence normalized alone: a text is
    its first sentence, the run of sentences up to its last cut and the rest (`_raw_pieces`),
    and a run is looked up whole, so that the templates of a row, which differ around the
    row's text, find its sentences in one lookup.

    Unigram models need a guard. SentencePiece's Viterbi adds float32 scores from the start of
    the text, so where two segmentations of a word score nearly alike (exact ties are common:
    "▁" "==" "=" against "▁" "=" "=="), which one it keeps depends on rounding at the magnitude
    of the text's score so far. Rounding moves a path's score by at most half a float32 spacing
    per piece, in the text and alone, at a magnitude bounded by the summed magnitudes of the
    text's words plus the word's own worst case: a word's margin over its runner-up
    (`NBestEncode`) must beat that for both paths, twice over. Each word keeps the largest
    exponent of the text's magnitude at which it does. In a text beyond some of its words'
    exponents, those words are segmented again where they stand (`_resegmented`), else the text
    is encoded plainly. Words holding a user-defined piece are never trusted
    (`NBestEncode` scores those pieces by characters, `Encode` by bytes), nor words whose ids
    are not NBest's best. BPE merges by single piece scores: nothing to guard.
    """

    def __init__(self, proto: model_pb2.ModelProto, normalize: Callable[[list[str]], list[str]]):
        words = model_pb2.ModelProto()
        words.CopyFrom(proto)  # the same model, reading text that is already normalized
        words.normalizer_spec.CopyFrom(model_pb2.NormalizerSpec(
            name="identity", add_dummy_prefix=False, remove_extra_whitespaces=False,
            escape_whitespaces=False))
        self._processor = spm.SentencePieceProcessor(model_proto=words.SerializeToString())
        self._normalize = normalize
        self.raw = raw_cut_refusal(proto) is None  # cuts raw text
        self.ascii = self.raw and ascii_refusal(proto) is None  # splits ASCII sentences itself
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
        if self._guarded:  # what `_resegmented` reads
            self._normal = {p.piece: i for i, p in enumerate(proto.pieces)
                            if p.type == _PIECE.NORMAL}
            self._longest = max(map(len, self._normal), default=0)
            self._foldable = np.array([p.type == _PIECE.NORMAL for p in proto.pieces])
            self._scores32 = np.array(self._scores, np.float32)
            self._unknown_id = self._processor.unk_id()
            self._unknown_score = _float32(unknown)

    @property
    def held(self) -> tuple[int, int]:
        """Characters of sentences and of words held."""
        return self._sentences.chars, self._words.chars

    def lookup(self, texts: list[str]) -> list[_Entry | None]:
        """Each text's entry, None where it must be encoded plainly."""
        split = (list(map(_raw_pieces, texts)) if self.raw
                 else list(map(_sentences, self._normalize(texts))))
        memo = self._sentences
        missing = set(filterfalse(memo.__contains__, chain.from_iterable(split)))
        if missing:
            self._add_sentences(missing)
        self.stats.pieces += sum(map(len, split))
        self.stats.new_pieces += len(missing)
        found: list[_Entry | None] = []
        for sentences in split:
            entry = _joined(list(map(memo.__getitem__, sentences)))
            if self._guarded:
                exponent = math.frexp(entry.magnitude)[1]
                if exponent > entry.exponent:
                    entry = self._resegmented(sentences, exponent)
                    self.stats.resegmented_texts += entry is not None
            found.append(entry)
        self.stats.texts += len(split)
        self.stats.plain_texts += found.count(None)
        memo.bound(SENTENCE_MEMO_CHARS)  # both memos, once a batch
        self._words.bound(WORD_MEMO_CHARS)
        return found

    def _add_sentences(self, keys: set[str]) -> None:
        """Add sentences and runs of them (raw text), a run joined from its sentences: each
        sentence is normalized and segmented once, whichever run it comes in."""
        runs = [key for key in keys if _is_run(key)] if self.raw else []
        split_runs = [run.split(RAW_SENTENCE_END) for run in runs]
        sentences = keys.difference(runs).union(
            filterfalse(self._sentences.__contains__, chain.from_iterable(split_runs)))
        if sentences:
            self._add_single_sentences(list(sentences))
        get = self._sentences.__getitem__
        joined = [_joined(list(map(get, parts))) for parts in split_runs]
        self._sentences.add(runs, joined)

    def _add_single_sentences(self, keys: list[str]) -> None:
        split = self._split_words(keys)
        self.stats.new_words += self._add_words(split)
        get = self._words.__getitem__
        self._sentences.add(keys, [_joined(list(map(get, words))) for words in split])
        self.stats.new_sentences += len(keys)
        self.stats.words += sum(map(len, split))

    def _split_words(self, keys: list[str]) -> list[list[str]]:
        """The word keys of sentence keys."""
        if self.raw:  # a raw piece's key stands for it (`_raw_pieces`); normalized, it starts
            # with the dummy prefix's ▁ unless it is empty: it has no head
            texts = [k[:-1] if k.endswith(_CUT) else k + "." for k in keys]
            split = [text.split(" ") if self.ascii and _plain_ascii(text) else None
                     for text in texts]
            others = [i for i, words in enumerate(split) if words is None]
            for i, text in zip(others, self._normalize([texts[i] for i in others]), strict=True):
                split[i] = text[1:].split(WORD_START) if text else []
            return split
        split = [text.split(WORD_START) for text in keys]
        for words in split:
            if words[0]:
                words[0] += WORD_START  # the head's key
            else:
                del words[0]
        return split

    def _add_words(self, split: list[list[str]]) -> int:
        """Segment the words of these sentences not held yet; how many there were."""
        keys = list(set(filterfalse(self._words.__contains__, chain.from_iterable(split))))
        if keys:
            texts = list(map(_word_text, keys))
            encoded = self._processor.encode(texts, num_threads=1)
            self._words.add(keys, list(map(self._guard, texts, encoded)) if self._guarded
                            else list(map(_entry, encoded)))
        return len(keys)

    def _guard(self, text: str, ids: list[int]) -> _Entry:
        """The word's entry, with the largest exponent at which rounding cannot change it."""
        if self._user_defined and self._user_defined.search(text):
            return _entry(ids, 0.0, _NEVER)
        result = self._processor.nbest_encode_as_immutable_proto(text, nbest_size=2)
        nbest = result.nbests  # views into `result`, which must outlive them
        best = nbest[0].score
        if len(nbest) == 1:  # the only segmentation there is
            return _entry(ids, -best, _ALWAYS)
        margin = best - nbest[1].score
        # Any other segmentation scores at most best - margin, so `ids` are best's if they score
        # nearer than that; merged unknown or byte pieces score otherwise: compare the ids.
        if (not abs(sum(map(self._scores.__getitem__, ids)) - best) < margin / 2
                and self._processor.nbest_encode_as_ids(text, nbest_size=1)[0] != ids):
            return _entry(ids, -best, _NEVER)
        # Needed: margin > 2 paths x 2 (text, alone) x length/2 x spacing, x 2 to spare (which
        # also covers NBest's own rounding of the margin). The
        # spacing at exponent e (magnitudes in [2**(e-1), 2**e)) is 2**(e-24); the text's and
        # the word's own parts of the magnitude at most double it: the largest e with
        # 8 x length x spacing below the margin, if the word's own part passes on its own.
        allowed = margin / (8 * len(text))
        own = self._max_magnitude * len(text)
        if math.ldexp(1.0, math.frexp(own)[1] - 24) >= allowed:
            return _entry(ids, -best, _NEVER)
        return _entry(ids, -best, math.ceil(24 + math.log2(allowed)) - 1)

    def _resegmented(self, keys: list[str], exponent: int) -> _Entry | None:
        """The entry of a text (its sentence keys) whose score magnitude has this exponent,
        beyond that of some of its words, or None if it must be encoded plainly.

        Where no piece crosses a word boundary, SentencePiece's Viterbi reaches each word from
        one score: the float32 sum, in order, of the scores of the ids before it. Each
        untrusted word is segmented again from that score as `_segmented` does; the others
        keep their ids (their exponents allow the text's magnitude).
        """
        entries: list[_Entry] = []
        before: list[bytes] = []  # varints not yet summed into `score`
        score = 0.0
        for part in self._parts(keys, exponent):
            if isinstance(part, str):
                score = self._summed(score, b"".join(before))
                segmented = None if score is None else self._segmented(part, score)
                if segmented is None:
                    return None
                ids, score = segmented
                part = _entry(ids)
                before = []
            else:
                before.append(part.varints)
            entries.append(part)
        return _joined(entries)

    def _parts(self, keys: list[str], exponent: int) -> list[_Entry | str]:
        """Sentence keys as entries that allow the exponent, and the normalized text of each
        word that does not, from runs down to sentences and words."""
        parts: list[_Entry | str] = []
        for key in keys:
            if key not in self._sentences:  # dropped by `bound` since
                self._add_sentences({key})
            entry = self._sentences[key]
            if entry.exponent >= exponent:
                parts.append(entry)
            elif self.raw and _is_run(key):
                parts += self._parts(key.split(RAW_SENTENCE_END), exponent)
            else:
                split = self._split_words([key])
                self._add_words(split)
                for word in split[0]:
                    entry = self._words[word]
                    parts.append(entry if entry.exponent >= exponent else _word_text(word))
        return parts

    def _summed(self, score: float, varints: bytes) -> float | None:
        """`score` plus the scores of these ids, one at a time in float32, as the Viterbi sums
        them along its best path; None if an id is not a normal piece (those merged, split
        into bytes or scored otherwise)."""
        ids = unpacked(varints)
        if not self._foldable[ids].all():
            return None
        sums = np.add.accumulate(np.append(np.float32(score), self._scores32[ids]))
        return float(sums[-1])

    def _segmented(self, text: str, score: float) -> tuple[list[int], float] | None:
        """A normalized word's ids and the score after it, reached from `score`, as
        SentencePiece's optimized Viterbi finds them; None if they hold an unknown character or
        a user-defined piece matches (scored otherwise).

        At each end the best candidate so far is kept: a piece's score plus the score at its
        start, added and compared in double precision, kept as float32. Starts are tried in
        order and only a greater score replaces a kept one, so of equal scores the earliest
        start wins.
        """
        if self._user_defined and self._user_defined.search(text):
            return None
        normal, scores = self._normal, self._scores
        best: list[tuple[float, int, int] | None] = [None] * (len(text) + 1)
        best[0] = (score, 0, 0)
        for start in range(len(text)):
            reached = best[start][0]
            for end in range(start + 1, min(len(text), start + self._longest) + 1):
                piece = normal.get(text[start:end])
                if piece is not None:
                    candidate = scores[piece] + reached
                    kept = best[end]
                    if kept is None or candidate > kept[0]:
                        best[end] = (_float32(candidate), start, piece)
            if text[start] not in normal:  # an unknown character, added in float32
                candidate = _float32(self._unknown_score + reached)
                kept = best[start + 1]
                if kept is None or candidate > kept[0]:
                    best[start + 1] = (candidate, start, self._unknown_id)
        ids = []
        end = len(text)
        while end:
            _, end, piece = best[end]
            ids.append(piece)
        if self._unknown_id in ids:
            return None  # merged with its neighbours, or split into bytes
        ids.reverse()
        return ids, best[-1][0]


def _word_text(key: str) -> str:
    """The normalized text of a word key: ▁ and the word, or a head without its ▁."""
    return key[:-1] if key.endswith(WORD_START) else WORD_START + key


def _plain_ascii(text: str) -> bool:
    """Printable ASCII without leading, trailing or repeated spaces (see `ascii_refusal`)."""
    return (text.isascii() and text.isprintable() and text[:1] not in ("", " ")
            and text[-1] != " " and "  " not in text)


def _sentences(text: str) -> list[str]:
    """`text` cut after each ".▁": pieces that start at a word and join back to `text`."""
    if _CUT in text:
        return [text]
    return text.replace(SENTENCE_END, _CUT_SENTENCE_END).split(_CUT)


def _is_run(key: str) -> bool:
    """Whether a key of `_raw_pieces` is a run of sentences."""
    return RAW_SENTENCE_END in key and not key.endswith(_CUT)


def _raw_pieces(text: str) -> list[str]:
    """Keys of raw `text` cut after its first and its last ". " (before the space): its first
    sentence and the run of sentences between the cuts, each of which stands for itself and
    the "." after it (the space before it normalizes away), and the rest followed by \0, which
    stands for itself alone. The templates of a row share the run, their text being around it."""
    first = text.find(RAW_SENTENCE_END)
    if first < 0 or _CUT in text:
        return [text + _CUT]
    last = text.rfind(RAW_SENTENCE_END)
    rest = text[last + 2:] + _CUT
    if last == first:
        return [text[:first], rest]
    return [text[:first], text[first + 2:last], rest]


class _Memo(dict):
    """Entries by text, counting the characters of text held."""

    def __init__(self):
        super().__init__()
        self.chars = 0

    def add(self, texts: list[str], entries: list[_Entry]) -> None:
        self.update(zip(texts, entries, strict=True))
        self.chars += sum(map(len, texts))

    def bound(self, chars: int) -> None:
        """Over `chars`, keep the newest entries that hold at most half of them."""
        if self.chars <= chars:
            return
        held = list(accumulate(map(len, reversed(self))))  # by the newest so far
        kept = bisect_right(held, chars // 2)
        newest = list(islice(reversed(self.items()), kept))
        self.clear()
        self.update(reversed(newest))
        self.chars = held[kept - 1] if kept else 0
