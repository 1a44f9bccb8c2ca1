"""The memo: ids of sentences and words, each segmented once per process (`WordMemo`).

A cache tokenizes each row once per template (~10 of them), so the row's sentences and words
come back again and again. When no piece of the model can cross a word boundary
(`checks.word_split_refusal`), a text's ids are the ids of its normalized sentences and words,
concatenated: the memo segments each distinct word once and looks sentences up whole; when the
normalizer leaves "." and " " alone (`checks.raw_cut_refusal`), it also normalizes each distinct
sentence once, cutting the raw text (`raw_text`). It keeps ids packed as varints per sentence: a
long text's packed ids are a join of a few byte strings.
"""

from __future__ import annotations

import math
import re
from bisect import bisect_right
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from itertools import accumulate, chain, filterfalse, islice, repeat
from operator import add, itemgetter

import sentencepiece as spm
from sentencepiece import sentencepiece_model_pb2 as model_pb2

from p3data.tokenize.checks import (
    WORD_START,
    Pieces,
    ascii_refusal,
    forced_cuts,
    raw_cut_marks,
    raw_cut_refusal,
)
from p3data.tokenize.entries import NEVER, Entry, entry_of, joined, trusted
from p3data.tokenize.raw_text import UNSPACED_MIN_CHARS, RawCuts
from p3data.tokenize.segment import UnigramGuard

# Per process, the sentence and word memos hold at most this many bytes each between batches
# (`BoundedMemo`): the sentences of the rows in hand, which their templates share, and the words
# that recur (English's ~80,000 most used). A row batch's text (`batching.CHARS_PER_BATCH`) comes
# back in each of its ~10 templates with runs and rests of its own: the sentences of the rows
# in hand must outlast a batch's templates (at 8 MB they did not: XL-Sum's news in five
# scripts tokenized at 1.2x the CPU).
SENTENCE_MEMO_BYTES = 32 << 20
WORD_MEMO_BYTES = 16 << 20
# What an entry costs a process beyond its text and its ids: a dict slot, the key's and the
# entry's headers (~210 bytes, measured on words).
ENTRY_OVERHEAD_BYTES = 200
SENTENCE_END = "." + WORD_START
# SentencePiece encodes a whole text's characters ~60 times as fast as `UnigramGuard.segmented`
# segments a word's in Python (0.35 against 20 µs a character, measured on Japanese): a text
# whose words to segment again hold more than this share of its characters is encoded plainly.
RESEGMENTED_SHARE = 1 / 64
# Runs and sentences decomposed for `_resegmented` held at most (a row batch's, a few MB).
DECOMPOSITIONS_HELD = 4096
_CUT = "\0"  # marks where to cut a text into sentences, unless the text holds it
_CUT_SENTENCE_END = "." + _CUT + WORD_START


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
    the raw text is cut instead (`raw_text.RawCuts`), and each new piece normalized alone: a
    text is its first piece, the run of pieces up to its last cut and the rest, and a run is
    looked up whole, so that the templates of a row, which differ around the row's text, find
    its sentences in one lookup.

    Unigram models need a guard (`segment`): where a word's segmentation is near a tie, which
    one SentencePiece keeps depends on rounding at the magnitude of the text's score so far. In
    a text beyond some of its words' exponents, those words are segmented again where they
    stand (`_resegmented`), else the text is encoded plainly.
    """

    def __init__(self, proto: model_pb2.ModelProto, normalize: Callable[[list[str]], list[str]],
                 *, pieces: Pieces | None = None):
        """`pieces`: the proto's (`Pieces.of`), where the caller has read them."""
        pieces = pieces or Pieces.of(proto)
        words = model_pb2.ModelProto()
        words.CopyFrom(proto)  # the same model, reading text that is already normalized
        words.normalizer_spec.CopyFrom(model_pb2.NormalizerSpec(
            name="identity", add_dummy_prefix=False, remove_extra_whitespaces=False,
            escape_whitespaces=False))
        self._processor = spm.SentencePieceProcessor(model_proto=words.SerializeToString())
        self._normalize = normalize
        self.raw = raw_cut_refusal(proto, pieces=pieces) is None  # cuts raw text
        # where the raw text is cut, and whether it splits ASCII sentences itself
        marks = raw_cut_marks(proto, pieces=pieces) if self.raw else ""
        self.raw_cuts = RawCuts(marks, normalize,
                                ascii_sentences=self.raw and ascii_refusal(proto) is None)
        self.stats = MemoStats()
        self._sentences = BoundedMemo(SENTENCE_MEMO_BYTES)
        self._words = BoundedMemo(WORD_MEMO_BYTES)
        self._decompositions: dict[tuple[str, int], list[Entry | str]] = {}
        self._cuts = forced_cuts(proto, pieces=pieces)
        # whether a sentence holds a mark before its end: where `_cuts` may cut a word of it
        marks = "".join(pieces.mark_followers)
        self._mark_inside = (re.compile(f"[{re.escape(marks)}].", re.DOTALL).search if marks
                             else None)
        self._guard = (UnigramGuard(proto, self._processor, pieces=pieces)
                       if proto.trainer_spec.model_type == model_pb2.TrainerSpec.UNIGRAM else None)

    @property
    def held(self) -> tuple[int, int]:
        """Bytes of sentences and of words held (`BoundedMemo`)."""
        return self._sentences.bytes, self._words.bytes

    def lookup(self, texts: list[str], *, once: bool = False) -> list[Entry | None]:
        """Each text's entry, None where it must be encoded plainly. `once`: the texts will not
        come again (a passage cut to fit): their sentences are kept, their runs and rests
        (raw text) not, so that they push nothing that recurs out of the memo."""
        split = (list(map(self.raw_cuts.pieces, texts)) if self.raw
                 else list(map(_sentences, self._normalize(texts))))
        memo = self._sentences
        missing = set(filterfalse(memo.__contains__, chain.from_iterable(split)))
        # `once`: the rests of raw text (what only these texts have) are not kept
        rests = {pieces[-1] for pieces in split} if once and self.raw else set()
        unkept = self._add_sentences(missing, once=once, rests=rests) if missing else {}
        get = memo.__getitem__ if not unkept else lambda key: unkept.get(key) or memo[key]
        self.stats.pieces += sum(map(len, split))
        self.stats.new_pieces += len(missing)
        found: list[Entry | None] = []
        for sentences in split:
            entry = joined(list(map(get, sentences)))
            if self._guard is not None and not trusted(entry):
                entry = self._resegmented(sentences, math.frexp(entry.magnitude)[1], unkept)
                self.stats.resegmented_texts += entry is not None
            found.append(entry)
        self.stats.texts += len(split)
        self.stats.plain_texts += found.count(None)
        memo.bound()  # both memos, once a batch
        self._words.bound()
        return found

    def _add_sentences(self, keys: set[str], *, once: bool = False,
                       rests: set[str] | None = None) -> dict[str, Entry]:
        """Add sentences and runs of them (raw text), a run joined from its sentences: each
        sentence is normalized and segmented once, whichever run it comes in. `once`: runs and
        `rests` are returned instead (what only these texts have)."""
        runs = [key for key in keys if self.raw_cuts.is_run(key)] if self.raw else []
        split_runs = list(map(self.raw_cuts.sentences, runs))
        sentences = keys.difference(runs).union(
            filterfalse(self._sentences.__contains__, chain.from_iterable(split_runs)))
        rests = list(sentences.intersection(rests or ()))
        if kept := list(sentences.difference(rests)):
            self._sentences.add(kept, self._segmented(kept))
        get = self._sentences.__getitem__
        entries = [joined(list(map(get, parts))) for parts in split_runs]
        if not once:
            self._sentences.add(runs, entries)
            return {}
        return dict(zip(runs + rests, entries + self._segmented(rests), strict=True))

    def _segmented(self, keys: list[str]) -> list[Entry]:
        """Single sentences' entries, from their words'."""
        split = self._split_words(keys)
        self.stats.new_words += self._add_words(split)
        self.stats.new_sentences += len(keys)
        self.stats.words += sum(map(len, split))
        get = self._words.__getitem__
        return [joined(list(map(get, words))) for words in split]

    def _split_words(self, keys: list[str]) -> list[list[str]]:
        """The word keys of sentence keys, long words cut where the model forces a cut (only
        a sentence with a mark before its end may have one: one C search each)."""
        texts = self.raw_cuts.normalized(keys) if self.raw else keys
        split = list(map(_word_keys, texts))
        if self._cuts is None:
            return split
        inside, cut = self._mark_inside, self._cut
        return [list(chain.from_iterable(map(cut, words))) if inside(text) else words
                for text, words in zip(texts, split, strict=True)]

    def _cut(self, key: str) -> list[str]:
        """A word key's parts' keys (`checks.forced_cuts`): each part after the first is keyed
        as a head is (its text followed by ▁), which is what it is to the model."""
        if len(key) <= UNSPACED_MIN_CHARS:  # not text written without spaces
            return [key]
        head = key.endswith(WORD_START)
        parts = self._cuts.findall(key[:-1] if head else key)
        if len(parts) <= 2:  # the word and the empty match at its end
            return [key]
        first = parts[0] + WORD_START if head else parts[0]
        return [first, *(part + WORD_START for part in parts[1:] if part)]

    def _add_words(self, split: list[list[str]]) -> int:
        """Segment the words of these sentences not held yet; how many there were."""
        used = set(chain.from_iterable(split))
        keys = list(filterfalse(self._words.__contains__, used))
        self._words.touch(used)
        if keys:
            texts = list(map(_word_text, keys))
            self._words.add(keys, self._guard.word_entries(texts) if self._guard is not None
                            else list(map(entry_of, self._processor.encode(texts, num_threads=1))))
        return len(keys)

    def _resegmented(self, keys: list[str], exponent: int,
                     unkept: dict[str, Entry]) -> Entry | None:
        """The entry of a text (its sentence keys) whose score magnitude has this exponent,
        beyond that of some of its words, or None if it must be encoded plainly. Its words were
        segmented from this text's scores: it is never `trusted` joined to other text.

        Where no piece crosses a word boundary, SentencePiece's Viterbi reaches each word from
        one score: the float32 sum, in order, of the scores of the ids before it. Each
        untrusted word is segmented again from that score (`UnigramGuard.segmented`); the others
        keep their ids (their exponents allow the text's magnitude). Where those words hold more
        than `RESEGMENTED_SHARE` of the text, SentencePiece is faster on the whole text: None.
        `unkept`: the entries of keys a text read `once` has, not in the memo.
        """
        parts = self._parts(keys, exponent, unkept)
        words = sum(len(part) for part in parts if isinstance(part, str))
        if words > RESEGMENTED_SHARE * sum(map(len, keys)):
            return None  # cheaper encoded whole, in C++
        entries: list[Entry] = []
        before: list[bytes] = []  # varints not yet summed into `score`
        score = 0.0
        for part in parts:
            if isinstance(part, str):
                score = self._guard.summed(score, before)
                segmented = None if score is None else self._guard.segmented(part, score)
                if segmented is None:
                    return None
                ids, score = segmented
                part = entry_of(ids)
                before = []
            else:
                before.append(part.varints)
            entries.append(part)
        return joined(entries)._replace(exponent=NEVER)

    def _parts(self, keys: list[str], exponent: int,
               unkept: dict[str, Entry]) -> list[Entry | str]:
        """Sentence keys as entries that allow the exponent, and the normalized text of each
        word that does not, from runs down to sentences and words."""
        parts: list[Entry | str] = []
        for key in keys:
            entry = unkept.get(key)
            if entry is None:
                if key not in self._sentences:  # dropped by `bound` since
                    self._add_sentences({key})
                entry = self._sentences[key]
            if entry.exponent >= exponent:
                parts.append(entry)
            else:
                parts += self._decomposed(key, exponent, unkept)
        return parts

    def _decomposed(self, key: str, exponent: int,
                    unkept: dict[str, Entry]) -> list[Entry | str]:
        """`_parts` of a run or sentence that does not allow the exponent: kept a while, since
        a row's templates hold its text, and their texts' magnitudes mostly share exponents."""
        found = self._decompositions.get((key, exponent))
        if found is not None:
            return found
        if self.raw and self.raw_cuts.is_run(key):
            found = self._parts(self.raw_cuts.sentences(key), exponent, unkept)
        else:
            split = self._split_words([key])
            self._add_words(split)
            found = []
            for word in split[0]:
                entry = self._words[word]
                found.append(entry if entry.exponent >= exponent else _word_text(word))
        if len(self._decompositions) >= DECOMPOSITIONS_HELD:
            self._decompositions.clear()
        self._decompositions[key, exponent] = found
        return found


def _word_keys(text: str) -> list[str]:
    """The word keys of a normalized sentence: its head's (if any) is its text followed by ▁."""
    words = text.split(WORD_START)
    if words[0]:
        words[0] += WORD_START
    else:
        del words[0]
    return words


def _word_text(key: str) -> str:
    """The normalized text of a word key: ▁ and the word, or a head without its ▁."""
    return key[:-1] if key.endswith(WORD_START) else WORD_START + key


def _sentences(text: str) -> list[str]:
    """`text` cut after each ".▁": pieces that start at a word and join back to `text`."""
    if _CUT in text:
        return [text]
    return text.replace(SENTENCE_END, _CUT_SENTENCE_END).split(_CUT)


class BoundedMemo(dict):
    """Entries by text, the least recently used first, and about how many bytes they hold: a
    memo over its limit keeps its most recently used half, so a worker's memory is bounded
    and what recurs (labels, common words, a row's article) stays."""

    def __init__(self, limit: int):
        super().__init__()
        self.limit = limit
        self.bytes = 0

    def add(self, texts: list[str], entries: list[Entry]) -> None:
        self.update(zip(texts, entries, strict=True))
        self.bytes += sum(_held_bytes(texts, entries))

    def touch(self, texts: Iterable[str]) -> None:
        """Make the held ones of these texts the most recently used (the sentence
        memo touches none: a row's sentences recur within its batch, and newest is recent)."""
        held = list(self.keys() & texts)
        self.update(zip(held, list(map(self.pop, held)), strict=True))  # out, then in: newest

    def bound(self) -> None:
        """Over the limit, keep the most recently used entries that hold at most half of it."""
        if self.bytes <= self.limit:
            return
        held = list(accumulate(_held_bytes(reversed(self.keys()), reversed(self.values()))))
        kept = bisect_right(held, self.limit // 2)
        newest = list(islice(reversed(self.items()), kept))
        self.clear()
        self.update(reversed(newest))
        self.bytes = held[kept - 1] if kept else 0


def _held_bytes(texts: Iterable[str], entries: Iterable[Entry]) -> Iterator[int]:
    """About what each entry costs a process: its text, its ids and `ENTRY_OVERHEAD_BYTES`
    (mapped in C: a memo holds ~10^5 entries)."""
    ids = map(len, map(itemgetter(0), entries))  # Entry.varints
    return map(add, map(add, map(len, texts), ids), repeat(ENTRY_OVERHEAD_BYTES))
