"""Tokenizing exactly like seqio, without seqio or TensorFlow: `Tokenizer`.

Bottom up: `checks` (what a model allows the memo and joining to do), `entries` (what the memo
holds), `segment` (a unigram model's guard against ties, and the Viterbi that re-segments tied
words), `memo` (sentences and words segmented once), `tokenizer` (`Tokenizer`, the one entry
point; `join`: a text's ids from its parts', where exact).
"""

from p3data.tokenize.checks import (
    ascii_refusal,
    join_refusal,
    raw_cut_refusal,
    word_split_refusal,
)
from p3data.tokenize.entries import Entry
from p3data.tokenize.memo import MemoStats, WordMemo
from p3data.tokenize.tokenizer import (
    ENV_MEMO,
    EOS_ID,
    MEMO_MAX_CHARS,
    Packed,
    Tokenizer,
    memo_setting,
    with_extra_ids,
)

__all__ = [
    "ENV_MEMO",
    "EOS_ID",
    "Entry",
    "MEMO_MAX_CHARS",
    "MemoStats",
    "Packed",
    "Tokenizer",
    "WordMemo",
    "ascii_refusal",
    "join_refusal",
    "memo_setting",
    "raw_cut_refusal",
    "with_extra_ids",
    "word_split_refusal",
]
