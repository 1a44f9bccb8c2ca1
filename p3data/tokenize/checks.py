"""What a SentencePiece model allows the memo (`memo.WordMemo`) to do, read from its proto.

Each check returns why the shortcut might not give `SentencePieceProcessor.encode`'s ids, or
None: whether a text's ids are its words' ids (`word_split_refusal`), whether raw text may be
cut after each ". " (`raw_cut_refusal`) and after which other marks (`raw_cut_marks`), whether
printable ASCII may be split by hand (`ascii_refusal`), whether texts joined by a separator
have their parts' ids joined (`join_refusal`); and where a word may be cut because every
segmentation cuts it there (`forced_cuts`). The normalization rules are read from the model's
precompiled charsmap (a darts-clone trie) without running them.
"""

from __future__ import annotations

import functools
import re
import sys
import unicodedata
from array import array
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np
from sentencepiece import sentencepiece_model_pb2 as model_pb2

WORD_START = "\u2581"  # SentencePiece's escaped space: every word but a text's first starts with it
RAW_SENTENCE_END = ". "
PIECE = model_pb2.ModelProto.SentencePiece
# Piece types the encoder can match in text (control, unknown and byte pieces it cannot).
_MATCHABLE = (PIECE.NORMAL, PIECE.USER_DEFINED, PIECE.UNUSED)


@dataclass(frozen=True)
class Pieces:
    """A model's pieces, read from its proto in one pass: each attribute read from the proto
    costs ~0.1 CPU-s over mT5's 250,100 pieces, and the checks and the guard (`segment`) scan
    them several times as a tokenizer starts."""

    texts: list[str]
    types: np.ndarray
    scores: np.ndarray  # float64, as the proto's float32 scores read in Python

    @classmethod
    def of(cls, proto: model_pb2.ModelProto) -> Pieces:
        pieces = proto.pieces  # a pass per field: half the CPU of one pass making triples
        return cls([piece.piece for piece in pieces],
                   np.fromiter((piece.type for piece in pieces), np.int64, len(pieces)),
                   np.fromiter((piece.score for piece in pieces), np.float64, len(pieces)))

    @functools.cached_property
    def mark_followers(self) -> dict[str, set[str]]:
        """The sentence-ending marks that are normal pieces of one character (`forced_cuts`),
        each with the characters a matchable piece holds right after it; none if a matchable
        piece holds `_SEPARATOR`, which the search needs. Two checks read them."""
        matchable = list(self.of_types(*_MATCHABLE))
        single = [piece for piece in self.of_types(PIECE.NORMAL) if len(piece) == 1]
        marks = sorted(piece for piece in single
                       if any(end in unicodedata.name(piece, "") for end in _SENTENCE_ENDS))
        if not marks or any(_SEPARATOR in piece for piece in matchable):
            return {}
        followers: dict[str, set[str]] = {mark: set() for mark in marks}
        pairs = re.compile(f"(?=({_class(marks)})([^{_SEPARATOR}]))")
        for mark, follower in pairs.findall(_SEPARATOR.join(matchable)):
            followers[mark].add(follower)
        return followers

    def of_types(self, *types: int) -> list[str]:
        """The texts of the pieces of these types, in id order."""
        chosen = np.isin(self.types, types)
        if chosen.all():
            return self.texts
        return [self.texts[i] for i in np.flatnonzero(chosen)]


def word_split_refusal(proto: model_pb2.ModelProto, *,
                       pieces: Pieces | None = None) -> str | None:
    """Why a text's ids might not be its words' ids under this model (None: they always are).

    Unigram and BPE segment a normalized text with pieces that start at a ▁ or hold none, so
    no piece crosses the ▁ in front of a word, if the model escapes spaces as ▁, keeps ▁ as a
    prefix, and has no piece with ▁ inside (`split_by_whitespace` false or
    `allow_whitespace_only_pieces` can make them). ▁ must be a piece of its own, so that runs
    of unknown characters, which are merged into one id, never span two words. Other trainer
    options (`split_digits`, `split_by_number`, `byte_fallback`...) only act inside words.
    Unigram scores must not be positive (`WordMemo` bounds score magnitudes by sums).
    `pieces`: the proto's (`Pieces.of`), where the caller has read them.
    """
    pieces = pieces or Pieces.of(proto)
    trainer = proto.trainer_spec
    kind = model_pb2.TrainerSpec.ModelType.Name(trainer.model_type)
    inside = next((text for text in pieces.of_types(*_MATCHABLE) if WORD_START in text[1:]),
                  None)
    own = [int(pieces.types[i]) for i, text in enumerate(pieces.texts) if text == WORD_START]
    reasons = {
        f"a {kind} model (only UNIGRAM and BPE are known)": kind not in ("UNIGRAM", "BPE"),
        "split_by_whitespace is false": not trainer.split_by_whitespace,
        "treat_whitespace_as_suffix is true": trainer.treat_whitespace_as_suffix,
        "escape_whitespaces is false": not proto.normalizer_spec.escape_whitespaces,
        f"piece {inside!r} has ▁ inside": inside is not None,
        "▁ is not a piece of its own": own not in ([PIECE.NORMAL], [PIECE.USER_DEFINED]),
        "a UNIGRAM model with positive scores": kind == "UNIGRAM" and bool(
            (pieces.scores[pieces.types == PIECE.NORMAL] > 0).any()),
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


def raw_cut_refusal(proto: model_pb2.ModelProto, *,
                    pieces: Pieces | None = None) -> str | None:
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
    held = next((text for text in (pieces or Pieces.of(proto)).of_types(PIECE.USER_DEFINED)
                 if "." in text or " " in text), None)
    reasons = {
        "add_dummy_prefix is false": not spec.add_dummy_prefix,
        "remove_extra_whitespaces is false": not spec.remove_extra_whitespaces,
        f"user-defined piece {held!r} holds '.' or ' '": held is not None,
        "a normalization rule reads '.' or ' '": not _rules_skip(spec.precompiled_charsmap,
                                                                  RAW_SENTENCE_END),
    }
    return "; ".join(reason for reason, applies in reasons.items() if applies) or None


def join_refusal(proto: model_pb2.ModelProto, separator: str,
                 normalize: Callable[[list[str]], list[str]], *,
                 pieces: Pieces | None = None) -> str | None:
    """Why `ids(a + separator + b)` might not be `ids(a + separator) + ids(b)` for some texts
    (None: it always is, given the memo's guard on the joined score; `Tokenizer.join`).

    The normalizer matches the longest rule key or user-defined piece at each point. If the
    separator's characters are in no user-defined piece and in no rule key but alone, no match
    crosses into or out of the separator: the whole text normalizes match by match as its
    parts do. If the separator between two words normalizes to spaces only ("a" + separator
    + "a" becomes "▁a▁a"), the whole text has one ▁ there; alone, `a + separator` loses its
    trailing spaces (`remove_extra_whitespaces`) and `b` gains the ▁ in front
    (`add_dummy_prefix`), with leading spaces dropped in both (a space came before): the
    normalized parts join into the normalized whole. Its segmentation is its words' if
    `word_split_refusal` accepts the model, and the joined unigram score is guarded as a text's.
    """
    spec = proto.normalizer_spec
    pieces = pieces or Pieces.of(proto)
    held = next((text for text in pieces.of_types(PIECE.USER_DEFINED)
                 if set(text) & set(separator)), None)
    reasons = {
        "add_dummy_prefix is false": not spec.add_dummy_prefix,
        "remove_extra_whitespaces is false": not spec.remove_extra_whitespaces,
        f"separator {separator!r} is not ASCII": not separator.isascii(),
        f"user-defined piece {held!r} holds a separator character": held is not None,
        f"a normalization rule reads {separator!r} with other characters": not _rules_skip(
            spec.precompiled_charsmap, separator, alone=True),
        f"separator {separator!r} does not normalize to one space between words": normalize(
            ["a" + separator + "a", "a"]) != [f"{WORD_START}a{WORD_START}a", f"{WORD_START}a"],
    }
    refusal = word_split_refusal(proto, pieces=pieces)
    return "; ".join([*(reason for reason, applies in reasons.items() if applies),
                      *([refusal] if refusal else [])]) or None


def forced_cuts(proto: model_pb2.ModelProto, *,
                pieces: Pieces | None = None) -> re.Pattern[str] | None:
    """A pattern whose `findall` on a normalized word gives its parts between the points where
    every segmentation of this model has a piece boundary (then an empty match); None if the
    model has no such points.

    For unigram and BPE models alike, a point is one if no piece can span it: no matchable
    piece holds the two characters around it, in that order. Only points after a sentence's
    end (`_SENTENCE_ENDS`) that is a normal piece of its own are taken: no unknown character
    (merged with unknown neighbours into one id) sits before the cut, and parts are sentences
    (cut after every mark, they would be a few characters each, which cost the memo more than
    SentencePiece spends on them). A word cut there has the ids of its parts, segmented from
    the score before each (as a text's words are: `segment`). Written without spaces, a
    paragraph is one word; cut after its "。", it is sentences again.
    """
    followers = (pieces or Pieces.of(proto)).mark_followers
    if not followers:
        return None
    marks = sorted(followers)
    continued = {mark: after for mark, after in followers.items() if after}
    # A part: characters that are no mark or marks a piece may continue past, up to a cut
    # (a mark no piece continues past, or one not followed by what would continue it) or the end
    within = [f"[^{''.join(map(re.escape, marks))}]",
              *(f"{re.escape(mark)}(?={_class(after)})" for mark, after in continued.items())]
    cut = [_class(followers.keys() - continued.keys()),
           *(f"{re.escape(mark)}(?!{_class(after)})" for mark, after in continued.items()),
           r"\Z"]
    return re.compile(f"(?:{'|'.join(within)})*(?:{'|'.join(cut)})")


def raw_cut_marks(proto: model_pb2.ModelProto, *, pieces: Pieces | None = None) -> str:
    """The marks after which raw text may be cut too (besides ". "), for a model
    `raw_cut_refusal` accepts: where every segmentation has a boundary after the mark whatever
    follows it (`forced_cuts`' marks that no matchable piece continues past), and the
    normalizer copies the mark as it is and no match crosses it (no rule key and no
    user-defined piece holds it). Then the text before the cut, ending in the mark, normalizes
    alone as in the whole text, and the text after it does behind the mark alone (`raw_text`):
    the leading-space removal and the ▁ put in front act on the mark, which they leave."""
    pieces = pieces or Pieces.of(proto)
    charsmap = proto.normalizer_spec.precompiled_charsmap
    user_defined = "".join(pieces.of_types(PIECE.USER_DEFINED))
    return "".join(mark for mark, after in sorted(pieces.mark_followers.items())
                   if not after and mark not in user_defined and not mark.isspace()
                   and not _rules_hold(charsmap, mark.encode()))


def _class(chars: Iterable[str]) -> str:
    """A regular expression character class of these characters (none: matches nothing)."""
    return f"[{''.join(map(re.escape, sorted(chars)))}]" if chars else "(?!)"


# What the Unicode names of the marks that end a sentence hold (Latin's, CJK's, Arabic's,
# Devanagari's, their fullwidth forms).
_SENTENCE_ENDS = ("FULL STOP", "QUESTION MARK", "EXCLAMATION MARK", "DANDA")
_SEPARATOR = "\0"  # between pieces when they are searched as one string


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


def _rules_skip(charsmap: bytes, chars: str, *, alone: bool = False) -> bool:
    """Whether no key of a precompiled normalization rule set holds any of the ASCII `chars`
    (`alone`: but keys that are one of them alone).

    The charsmap's double array holds the keys' UTF-8 bytes (`_trie_units`). A key holding a byte
    passes a unit labeled with it which ends a key or has children (child `c` of unit `i` is
    unit `i ^ base ^ c`, labeled `c`): every such unit must be a dead end (an unused one may
    carry any label: it must be a dead end too), but, if `alone`, the root's child may end one.
    """
    if not charsmap:
        return True
    units = _trie_units(charsmap)
    if units is None:
        return False
    labels = set(chars.encode())
    root = _child_base(units[0])
    for index, unit in enumerate(units):
        if unit & _LABEL in labels:
            ends = unit & _HAS_LEAF and not (alone and index == root ^ (unit & _LABEL))
            if ends or _has_child(units, index):
                return False
    return True


def _has_child(units: array, index: int) -> bool:
    base = index ^ _child_base(units[index])
    return any(base ^ c < len(units) and units[base ^ c] & _LABEL == c for c in range(1, 256))


def _rules_hold(charsmap: bytes, sequence: bytes) -> bool:
    """Whether some key of a precompiled normalization rule set may hold these bytes in a row:
    a unit labeled with the first whose children are labeled with the next ones, the last
    ending a key or going on (unused units, which may carry any label, included: a false yes
    only costs a shortcut)."""
    if not charsmap:
        return False
    units = _trie_units(charsmap)
    if units is None:
        return True
    for index, unit in enumerate(units):
        if unit & _LABEL != sequence[0]:
            continue
        for label in sequence[1:]:
            child = index ^ _child_base(units[index]) ^ label
            if child >= len(units) or units[child] & _LABEL != label:
                break
            index = child
        else:
            if units[index] & _HAS_LEAF or _has_child(units, index):
                return True
    return False


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
