"""Raw text cut into the memo's keys before it is normalized, and each key's normalized text.

Where the model allows (`checks.raw_cut_refusal`), the memo cuts raw text after each ". " and
after each mark that `checks.raw_cut_marks` allows and ASCII has not ("。", "।": no piece
continues past it), a space after it or not: a text is its first piece, the run of pieces up to
its last cut, and the rest (`RawCuts.pieces`). The memo looks a run up whole, so that the
templates of a row, which differ around the row's text, find that text in one lookup, and
normalizes and segments each piece once, whichever run it comes in.

A key stands for its text. After ". " (or at a text's start) a piece normalizes alone as in
the whole text: the ▁ put in front stands for the space. After a mark, the whole text has a
▁ there only if the piece starts with a space: it is normalized behind its mark (`_BEHIND`),
which the normalizer copies as it is, and the mark taken off. Runs are flagged (`_RUN`); a
text that holds a flag character is not cut and is one key, flagged `_WHOLE`.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from p3data.tokenize.checks import RAW_SENTENCE_END, WORD_START

_WHOLE, _BEHIND, _RUN = "\0", "\1", "\2"
_FLAGS = (_WHOLE, _BEHIND, _RUN)
_CUT = _WHOLE  # where `sentences` cuts a run (which holds no flag)
# Characters without a space past which a text is taken as written without spaces (Chinese,
# Japanese, Thai): a paragraph of it is one word, which the memo cuts where the model forces a
# piece boundary (`checks.forced_cuts`), its sentences found again in other texts.
UNSPACED_MIN_CHARS = 16


class RawCuts:
    """Where raw text is cut (after ". " and after `marks`), and how its keys normalize."""

    def __init__(self, marks: str, normalize: Callable[[list[str]], list[str]], *,
                 ascii_sentences: bool):
        """`normalize`: the model's normalizer; `ascii_sentences`: whether it leaves printable
        ASCII sentences as they are, but for the ▁ in front and for each space
        (`checks.ascii_refusal`)."""
        # Scripts end sentences with marks of their own ("。", "।", "۔"); ASCII's end those
        # of text written with spaces, where ". " cuts.
        self.marks = "".join(mark for mark in marks if not mark.isascii())
        self._normalize = normalize
        self.ascii_sentences = ascii_sentences
        marks = [re.escape(mark) for mark in self.marks]
        self._first_cut = re.compile("|".join([re.escape(RAW_SENTENCE_END), *marks])).search
        self._last_cut = re.compile("|".join([re.escape(RAW_SENTENCE_END[::-1]), *marks])).search

    def pieces(self, text: str) -> list[str]:
        """The keys of `text`: its first piece, the run up to its last cut (if it has two
        cuts) and the rest; the text alone if it has no cut. A mark that ends the text is no
        cut: a template's text after its row's would join the run, which the row's other
        templates would then not share."""
        if any(map(text.__contains__, _FLAGS)):
            return [_WHOLE + text]
        first, last = self._first_and_last_cut(text)
        if first < 0:
            return [text]
        head = self._head(text[:first + 1])
        behind, start = _after(text, last)
        rest = behind + text[start:]
        if last == first:
            return [*head, rest]
        behind, start = _after(text, first)
        return [*head, _RUN + behind + text[start:last + 1], rest]

    def sentences(self, run: str) -> list[str]:
        """The keys of a run's pieces, in order: its text with each cut marked (in C: a mark
        followed by a cut and itself behind, ". " made "." and a cut), split at the cuts. A
        run ends at its last cut's mark: nothing comes after it."""
        key = run[1:]
        behind, body = (key[:2], key[2:]) if key.startswith(_BEHIND) else ("", key)
        if self._holds_mark(body):
            for mark in self.marks:
                body = body.replace(mark, mark + _CUT + _BEHIND + mark)
        body = body.replace(RAW_SENTENCE_END, "." + _CUT)
        keys = (behind + body).split(_CUT)
        return keys[:-1] if keys[-1].startswith(_BEHIND) and len(keys[-1]) == 2 else keys

    def normalized(self, keys: list[str]) -> list[str]:
        """Each piece's normalized text as it stands in the whole text: it starts with ▁ if
        the whole text has one there. Not for runs."""
        found: list[str | None] = [None] * len(keys)
        others, texts, behind = [], [], []
        for i, key in enumerate(keys):
            flag = key[:1]
            if flag not in _FLAGS and self.ascii_sentences and _plain_ascii(key):
                found[i] = WORD_START + key.replace(" ", WORD_START)
                continue
            others.append(i)
            texts.append(key[1:] if flag in _FLAGS else key)
            behind.append(flag == _BEHIND)
        for i, text, is_behind in zip(others, self._normalize(texts), behind, strict=True):
            found[i] = text[2:] if is_behind else text  # the ▁ in front and the mark
        return found

    def _first_and_last_cut(self, text: str) -> tuple[int, int]:
        """Where the first and the last cut are (the "." of ". ", or the mark), -1 if none: a
        text with marks is searched once each way, for all of them (a search per mark scanned
        Chinese text six times)."""
        if text.isascii() or not self.marks:
            return text.find(RAW_SENTENCE_END), text.rfind(RAW_SENTENCE_END)
        found = self._first_cut(text)
        if found is None or found.start() == len(text) - 1:  # only a mark that ends the text
            return -1, -1
        backwards = text[::-1]
        last = self._last_cut(backwards)
        if last.start() == 0 and last.group() != RAW_SENTENCE_END[::-1]:
            last = self._last_cut(backwards, 1)  # the mark that ends the text is no cut
        return found.start(), len(text) - last.end()

    def _head(self, head: str) -> list[str]:
        """A text's first piece, cut at its last space too where the sentence after that space
        is written without one (longer than `UNSPACED_MIN_CHARS`): templates that put their
        own words before a row's text then share its first sentence, as they share its run.
        Cut as after ". ": the piece before ends in printable ASCII, which the normalizer
        copies as it is (`ascii_sentences`) and no space removal touches; the piece after
        normalizes alone with the ▁ put in front for the space."""
        space = head.rfind(" ")
        if (len(head) - space <= UNSPACED_MIN_CHARS or space < 1 or not self.ascii_sentences
                or not _plain_ascii(head[space - 1])):
            return [head]
        return [head[:space], head[space + 1:]]

    def _holds_mark(self, text: str) -> bool:
        """Whether `text` holds one of the marks (one C scan each: few texts do)."""
        return not text.isascii() and any(map(text.__contains__, self.marks))

    @staticmethod
    def is_run(key: str) -> bool:
        return key.startswith(_RUN)



def _after(text: str, cut: int) -> tuple[str, int]:
    """The piece after the cut at `cut`: what it is keyed behind (nothing after ". ", else its
    mark), and where it starts (past the space of a ". ")."""
    if text.startswith(RAW_SENTENCE_END, cut):
        return "", cut + 2
    return _BEHIND + text[cut], cut + 1


def _plain_ascii(text: str) -> bool:
    """Printable ASCII without leading, trailing or repeated spaces (see `ascii_refusal`)."""
    return (text.isascii() and text.isprintable() and text[:1] not in ("", " ")
            and text[-1] != " " and "  " not in text)
