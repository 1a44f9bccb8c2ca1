"""Tokenizing exactly like seqio, without seqio or TensorFlow: `Tokenizer`.

Bottom up: `checks` (what a model allows the memo and joining to do, where it forces a cut),
`entries` (what the memo holds), `segment` (a unigram model's guard against ties, and the
Viterbi that re-segments tied words), `raw_text` (raw text cut into the memo's keys before it
is normalized), `memo` (sentences and words segmented once), `tokenizer`
(`Tokenizer`, the one entry point; `join`: a text's ids from its parts', where exact).
"""

# What users may use: the tokenizer, and the checks docs/fewshot.md names. The rest is
# imported from its module.
from p3data.tokenize.checks import join_refusal, word_split_refusal
from p3data.tokenize.tokenizer import Tokenizer

__all__ = ["Tokenizer", "join_refusal", "word_split_refusal"]
