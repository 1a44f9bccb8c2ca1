"""The memo: ids of sentences and words, each segmented once per process (`WordMemo`).

A cache tokenizes each row once per template (~10 of them), so the row's sentences and words
come back again and again. When no piece of the model can cross a word boundary
(`checks.word_split_refusal`), a text's ids are the ids of its normalized sentences and words,
concatenated: the memo segments each distinct word once and looks sentences up whole; when the
normalizer leaves "." and " " alone (`checks.raw_cut_refusal`), it also normalizes each distinct
sentence once, cutting the raw text. It keeps ids packed as varints per sentence: a long text's
packed ids are a join of a few byte strings.
"""

from __future__ import annotations

import math
import re
import struct
from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass
from itertools import accumulate, chain, filterfalse, islice

import numpy as np
import sentencepiece as spm
from sentencepiece import sentencepiece_model_pb2 as model_pb2

from p3data.tokenize.checks import (
    PIECE,
    RAW_SENTENCE_END,
    WORD_START,
    ascii_refusal,
    raw_cut_refusal,
)
from p3data.tokenize.entries import ALWAYS, NEVER, Entry, entry_of, joined
from p3data.varints import unpacked

# Per process, the sentence and word memos hold at most this many characters of text each
# between batches (a batch of 512 news articles is ~2M): a memo over it keeps its newest half.
SENTENCE_MEMO_CHARS = 1 << 23
WORD_MEMO_CHARS = 1 << 20
SENTENCE_END = "." + WORD_START
_CUT = "\0"  # marks where to cut a text into sentences, unless the text holds it
_CUT_SENTENCE_END = "." + _CUT + WORD_START
# SentencePiece scores an unknown character as the lowest piece score minus this (kUnkPenalty).
_UNKNOWN_PENALTY = 10.0
_FLOAT32 = struct.Struct("f")


def _float32(value: float) -> float:
    """`value` rounded to float32, as C++ stores a double in a float."""
    return _FLOAT32.unpack(_FLOAT32.pack(value))[0]


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
        unknown = min((p.score for p in proto.pieces if p.type == PIECE.NORMAL),
                      default=0.0) - _UNKNOWN_PENALTY
        self._max_magnitude = -unknown
        # Scores as the segmentation counts them (`_guard`)
        self._scores = [unknown if p.type == PIECE.UNKNOWN else p.score for p in proto.pieces]
        user_defined = [re.escape(p.piece) for p in proto.pieces if p.type == PIECE.USER_DEFINED]
        self._user_defined = re.compile("|".join(user_defined)) if user_defined else None
        if self._guarded:  # what `_resegmented` reads
            self._normal = {p.piece: i for i, p in enumerate(proto.pieces)
                            if p.type == PIECE.NORMAL}
            self._longest = max(map(len, self._normal), default=0)
            self._foldable = np.array([p.type == PIECE.NORMAL for p in proto.pieces])
            self._scores32 = np.array(self._scores, np.float32)
            self._unknown_id = self._processor.unk_id()
            self._unknown_score = _float32(unknown)

    @property
    def held(self) -> tuple[int, int]:
        """Characters of sentences and of words held."""
        return self._sentences.chars, self._words.chars

    def lookup(self, texts: list[str]) -> list[Entry | None]:
        """Each text's entry, None where it must be encoded plainly."""
        split = (list(map(_raw_pieces, texts)) if self.raw
                 else list(map(_sentences, self._normalize(texts))))
        memo = self._sentences
        missing = set(filterfalse(memo.__contains__, chain.from_iterable(split)))
        if missing:
            self._add_sentences(missing)
        self.stats.pieces += sum(map(len, split))
        self.stats.new_pieces += len(missing)
        found: list[Entry | None] = []
        for sentences in split:
            entry = joined(list(map(memo.__getitem__, sentences)))
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
        entries = [joined(list(map(get, parts))) for parts in split_runs]
        self._sentences.add(runs, entries)

    def _add_single_sentences(self, keys: list[str]) -> None:
        split = self._split_words(keys)
        self.stats.new_words += self._add_words(split)
        get = self._words.__getitem__
        self._sentences.add(keys, [joined(list(map(get, words))) for words in split])
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
                            else list(map(entry_of, encoded)))
        return len(keys)

    def _guard(self, text: str, ids: list[int]) -> Entry:
        """The word's entry, with the largest exponent at which rounding cannot change it."""
        if self._user_defined and self._user_defined.search(text):
            return entry_of(ids, 0.0, NEVER)
        result = self._processor.nbest_encode_as_immutable_proto(text, nbest_size=2)
        nbest = result.nbests  # views into `result`, which must outlive them
        best = nbest[0].score
        if len(nbest) == 1:  # the only segmentation there is
            return entry_of(ids, -best, ALWAYS)
        margin = best - nbest[1].score
        # Any other segmentation scores at most best - margin, so `ids` are best's if they score
        # nearer than that; merged unknown or byte pieces score otherwise: compare the ids.
        if (not abs(sum(map(self._scores.__getitem__, ids)) - best) < margin / 2
                and self._processor.nbest_encode_as_ids(text, nbest_size=1)[0] != ids):
            return entry_of(ids, -best, NEVER)
        # Needed: margin > 2 paths x 2 (text, alone) x length/2 x spacing, x 2 to spare (which
        # also covers NBest's own rounding of the margin). The
        # spacing at exponent e (magnitudes in [2**(e-1), 2**e)) is 2**(e-24); the text's and
        # the word's own parts of the magnitude at most double it: the largest e with
        # 8 x length x spacing below the margin, if the word's own part passes on its own.
        allowed = margin / (8 * len(text))
        own = self._max_magnitude * len(text)
        if math.ldexp(1.0, math.frexp(own)[1] - 24) >= allowed:
            return entry_of(ids, -best, NEVER)
        return entry_of(ids, -best, math.ceil(24 + math.log2(allowed)) - 1)

    def _resegmented(self, keys: list[str], exponent: int) -> Entry | None:
        """The entry of a text (its sentence keys) whose score magnitude has this exponent,
        beyond that of some of its words, or None if it must be encoded plainly.

        Where no piece crosses a word boundary, SentencePiece's Viterbi reaches each word from
        one score: the float32 sum, in order, of the scores of the ids before it. Each
        untrusted word is segmented again from that score as `_segmented` does; the others
        keep their ids (their exponents allow the text's magnitude).
        """
        entries: list[Entry] = []
        before: list[bytes] = []  # varints not yet summed into `score`
        score = 0.0
        for part in self._parts(keys, exponent):
            if isinstance(part, str):
                score = self._summed(score, b"".join(before))
                segmented = None if score is None else self._segmented(part, score)
                if segmented is None:
                    return None
                ids, score = segmented
                part = entry_of(ids)
                before = []
            else:
                before.append(part.varints)
            entries.append(part)
        return joined(entries)

    def _parts(self, keys: list[str], exponent: int) -> list[Entry | str]:
        """Sentence keys as entries that allow the exponent, and the normalized text of each
        word that does not, from runs down to sentences and words."""
        parts: list[Entry | str] = []
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

    def add(self, texts: list[str], entries: list[Entry]) -> None:
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
