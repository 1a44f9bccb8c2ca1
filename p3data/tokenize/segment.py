"""The guard a unigram model's memo needs, and the Viterbi that re-segments tied words.

SentencePiece's Viterbi adds float32 scores from the start of the text, so where two
segmentations of a word score nearly alike (exact ties are common: "▁" "==" "=" against "▁" "="
"=="), which one it keeps depends on rounding at the magnitude of the text's score so far.
Rounding moves a path's score by at most half a float32 spacing per piece: in the text, at a
magnitude bounded by the summed magnitudes of the text's words plus the word's own worst case,
and alone (where `NBestEncode` measured the margin), at the word's own: a word's margin over
its runner-up must beat that for both paths, twice over. Each word keeps the largest exponent
of the text's magnitude at which it does (`UnigramGuard.word_entries`). In a text beyond some
of its words' exponents, the memo has those words segmented again where they stand
(`UnigramGuard.segmented`), else the text is encoded plainly. Words holding a user-defined
piece are never trusted (`NBestEncode` scores those pieces by characters, `Encode` by bytes),
nor words whose ids are not NBest's best. BPE merges by single piece scores: nothing to guard.
"""

from __future__ import annotations

import functools
import re
import struct
from itertools import chain

import numpy as np
import sentencepiece as spm
from sentencepiece import sentencepiece_model_pb2 as model_pb2

from p3data.tokenize.checks import PIECE, Pieces
from p3data.tokenize.entries import ALWAYS, NEVER, Entry, entry_of
from p3data.varints import packed_runs, unpacked

# SentencePiece scores an unknown character as the lowest piece score minus this (kUnkPenalty).
_UNKNOWN_PENALTY = 10.0
_FLOAT32 = struct.Struct("f")
# Parts' float32 scores `summed` holds at most (a word, a sentence or a run each: a run of
# ~1,000 ids holds 4 KB, so a few MB; a row batch's parts mostly fit).
PART_SCORES_HELD = 1 << 12
_UNFOLDABLE = np.zeros(0, np.float32)  # a part holding an id that is not a normal piece


def _float32(value: float) -> float:
    """`value` rounded to float32, as C++ stores a double in a float."""
    return _FLOAT32.unpack(_FLOAT32.pack(value))[0]


class UnigramGuard:
    """A unigram model's piece scores, as its Viterbi counts them: how far each word's
    segmentation is from a tie, and the word segmented again from a text's running score."""

    def __init__(self, proto: model_pb2.ModelProto, processor: spm.SentencePieceProcessor, *,
                 pieces: Pieces | None = None):
        """`processor`: the model reading text that is already normalized (the memo's);
        `pieces`: the proto's (`Pieces.of`), where the caller has read them."""
        self._processor = processor
        self._pieces = pieces = pieces or Pieces.of(proto)
        normal = pieces.types == PIECE.NORMAL
        unknown = float(pieces.scores[normal].min() if normal.any() else 0.0) - _UNKNOWN_PENALTY
        self._max_magnitude = -unknown
        # Scores as the segmentation counts them
        self._scores = np.where(pieces.types == PIECE.UNKNOWN, unknown, pieces.scores).tolist()
        user_defined = [re.escape(p) for p in pieces.of_types(PIECE.USER_DEFINED)]
        self._user_defined = re.compile("|".join(user_defined)) if user_defined else None
        self._normal_ids = normal
        self._scores64 = np.array(self._scores)
        self._scores32 = self._scores64.astype(np.float32)
        self._unknown_id = processor.unk_id()
        self._unknown_score = _float32(unknown)
        self._part_scores: dict[bytes, np.ndarray] = {}  # `summed`'s, by varints

    @functools.cached_property
    def _normal(self) -> dict[str, int]:
        """Normal pieces' ids by their text: for `segmented`, which few texts need."""
        pieces = self._pieces
        return {pieces.texts[i]: int(i) for i in np.flatnonzero(pieces.types == PIECE.NORMAL)}

    @functools.cached_property
    def _longest(self) -> int:
        return max(map(len, self._normal), default=0)

    def word_entries(self, texts: list[str]) -> list[Entry]:
        """Normalized words' entries, each with the largest exponent at which rounding cannot
        change its ids (SentencePiece's `encode`'s).

        A word's ids are its best path's from `NBestEncode` where that path and the runner-up
        are made of normal pieces, whose scores are the model's: a word trusted at some
        exponent has a margin over the runner-up that rounding in either Viterbi cannot cross
        from its own magnitude, so `encode` finds the same path; an untrusted word's ids are
        never used (`memo` segments it again). Other words are encoded (`word_entry`). The
        batch is scored and packed in numpy: a text written without spaces brings a word
        (a sentence) per ~20 characters, each new."""
        nbest = self._processor.nbest_encode_as_ids(texts, nbest_size=2)
        paths = list(chain.from_iterable(nbest))  # 1 or 2 per word (empty text: one, empty)
        per_word = np.fromiter(map(len, nbest), np.int64, len(nbest))
        lengths = np.fromiter(map(len, paths), np.int64, len(paths))
        ids = np.fromiter(chain.from_iterable(paths), np.int64, int(lengths.sum()))
        path_of_id = np.repeat(np.arange(len(paths)), lengths)
        # summed in order in double, as `sum` would (bincount adds each bin's weights in order)
        scores = np.bincount(path_of_id, self._scores64[ids], len(paths))
        odd = np.bincount(path_of_id, ~self._normal_ids[ids], len(paths)) > 0
        first = np.cumsum(per_word) - per_word
        two = per_word > 1
        second = np.where(two, first + 1, first)
        refused = odd[first] | odd[second]
        if self._user_defined:
            refused |= np.fromiter(map(bool, map(self._user_defined.search, texts)), bool,
                                   len(texts))
        margins = np.where(two, scores[first] - scores[second], np.nan)
        exponents = self._exponents(margins, np.fromiter(map(len, texts), np.int64, len(texts)))
        is_first = np.zeros(len(paths), bool)
        is_first[first] = True
        best_ids = ids[is_first[path_of_id]]
        counts = lengths[first]
        special = np.bincount(np.repeat(np.arange(len(texts)), counts), best_ids <= 1,
                              len(texts))  # padding and EOS, which `tokens` leaves out
        entries = list(map(Entry, packed_runs(best_ids, counts),
                           (counts - special.astype(np.int64)).tolist(),
                           (-scores[first]).tolist(), exponents.tolist()))
        if refused.any():
            others = np.flatnonzero(refused).tolist()
            encoded = self._processor.encode([texts[i] for i in others], num_threads=1)
            for i, word_ids in zip(others, encoded, strict=True):
                entries[i] = self.word_entry(texts[i], word_ids)
        return entries

    def word_entry(self, text: str, ids: list[int]) -> Entry:
        """The word's entry (`encode`'s `ids`), with the largest exponent at which rounding
        cannot change it."""
        if self._user_defined and self._user_defined.search(text):
            return entry_of(ids, 0.0, NEVER)
        result = self._processor.nbest_encode_as_immutable_proto(text, nbest_size=2)
        nbest = result.nbests  # views into `result`, which must outlive them
        best = nbest[0].score
        margin = best - nbest[1].score if len(nbest) > 1 else None
        # Any other segmentation scores at most best - margin, so `ids` are best's if they score
        # nearer than that; merged unknown or byte pieces score otherwise: compare the ids.
        if margin is not None and (
                not abs(sum(map(self._scores.__getitem__, ids)) - best) < margin / 2
                and self._processor.nbest_encode_as_ids(text, nbest_size=1)[0] != ids):
            return entry_of(ids, -best, NEVER)
        margins = np.array([np.nan if margin is None else margin])
        return entry_of(ids, -best, int(self._exponents(margins, np.array([len(text)]))[0]))

    def _exponents(self, margins: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        """Per word of `lengths` characters whose best path scores `margins` above the
        runner-up (NaN: it has none, the only segmentation there is: `ALWAYS`), the largest
        exponent of a text's magnitude at which rounding cannot change its path.

        Rounding moves each path's score by at most half a spacing per piece (a word of
        length L has at most L pieces), in the text (the Viterbi) and alone (NBest, which
        measured the margin). The spacing at exponent e (magnitudes in [2**(e-1), 2**e)) is
        2**(e-24); in a text of exponent e, the text's and the word's own parts of the
        magnitude at most double it; alone, the word's magnitude is at most its own worst case
        (`own`: every character unknown). Needed, x 2 to spare: margin > 2 x 2 paths x L x
        (spacing(e) + spacing(own) / 2), so spacing(e) < margin / 4L - spacing(own) rounded
        up: the largest such e, if the word's own part passes on its own."""
        with np.errstate(divide="ignore", invalid="ignore"):
            own_spacing = np.ldexp(1.0, np.frexp(self._max_magnitude * lengths)[1] - 24)
            allowed = margins / (4 * lengths) - own_spacing
            exponents = np.ceil(24 + np.log2(allowed)) - 1
        never = ~(allowed > 0) | (own_spacing >= allowed)
        exponents = np.where(never, NEVER, exponents)
        return np.where(np.isnan(margins), ALWAYS, exponents).astype(np.int64)

    def summed(self, score: float, parts: list[bytes]) -> float | None:
        """`score` plus the scores of these parts' ids (each packed as varints), one at a time
        in float32, as the Viterbi sums them along its best path; None if an id is not a
        normal piece (those merged, split into bytes or scored otherwise)."""
        scores = [np.array([score], np.float32)]
        for varints in parts:
            found = self._part_scores.get(varints)
            if found is None:  # a row's templates hold its text: its parts come again
                ids = unpacked(varints)
                found = self._scores32[ids] if self._normal_ids[ids].all() else _UNFOLDABLE
                if len(self._part_scores) >= PART_SCORES_HELD:
                    self._part_scores.clear()
                self._part_scores[varints] = found
            if found is _UNFOLDABLE:
                return None
            scores.append(found)
        return float(np.add.accumulate(np.concatenate(scores, dtype=np.float32))[-1])

    def segmented(self, text: str, score: float) -> tuple[list[int], float] | None:
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
