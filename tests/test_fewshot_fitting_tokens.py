"""Fitting in token space finds the bisection's cut: the same fitted queries, byte for byte, on
generated rows and templates (one or two passages, a list of texts, a passage glued to the
template's text, shown twice or transformed, fields that feed the target) under the sample
vocabulary, seqio's dense test vocabulary, a T5-like unigram vocabulary trained here and a model
that does not split texts into words (the bisection alone); its pieces (cut points, words'
token counts) against brute force and SentencePiece's own encode."""

from __future__ import annotations

import importlib.util
import io
import os
import re
from pathlib import Path
from unittest import mock

import pytest
import sentencepiece as spm
from helpers.fewshot import TaskSplit, catalog
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from p3data.datasets.samples import generate_rows, rendered_texts
from p3data.fewshot import FewshotSettings, fitting
from p3data.fewshot.fitting import Cuts
from p3data.fewshot.shorten import (
    SHORT_FIELD_CHARS,
    QueryShortener,
    cut_text,
    cut_value,
    passage_fields,
)
from p3data.templates import Template, TemplateCollection
from p3data.templates.render import CompiledTemplate, Rendered
from p3data.tokenize import Tokenizer
from p3data.tokenize.tokenizer import with_extra_ids
from p3data.vocab import EXTRA_IDS, SAMPLE_VOCAB

SEQIO_MODEL = os.path.join(os.path.dirname(importlib.util.find_spec("seqio").origin),
                           "test_data", "sentencepiece", "sentencepiece.model")
WORDS = ["The", "cat", "sat", "on", "the", "mat.", "(CNN)", "--", "officials", "said", "it's",
         "naïve", "Ünïcödé", "漢字", "😀", "1,000", "U.S.", "e-mail", "later....", "x" * 30, "a",
         '"quoted"', "end.", "Question:", "<extra_id_3>"]
SPACES = [" "] * 8 + ["  ", "\n", "\n\n", "\t", " \n", "\u00a0", "\u3000"]
# The old definition of `cut_text`'s cut: the last whitespace of the text up to the limit.
_LAST_SPACE = re.compile(r"\s(?=\S*\Z)")

# (jinja, answer choices, the catalog's long fields): a passage as it is, glued to quotes and
# punctuation, two passages, a list joined or looped over, a passage shown twice, upper-cased,
# feeding the target, and a template whose text depends on the passage's length.
TEMPLATES = [
    ("Review: {{passage}}\nDid the reviewer like it? ||| {{label}}", None, ("passage",)),
    ('"{{passage}}" Is that {{question}}? ||| {{label}}', "yes ||| no", ("passage",)),
    ("{{passage}}\n\n{{other}}\nQ: {{question}} ||| {{label}}", None, ("passage", "other")),
    ("Facts: {{ supports | join(' ') }}\nQ: {{question}} ||| {{label}}", None, ("supports",)),
    ("{% for s in supports %}- {{s}}\n{% endfor %}Which? ||| {{label}}", None, ("supports",)),
    ("{{passage}} ... again: {{passage}}. {{question}} ||| {{label}}", None, ()),
    ("{{passage | upper}} ({{question}}) ||| {{label}}", None, ("passage",)),
    ("{{passage}} First word? ||| {{passage.split(' ')[0]}}", None, ("passage",)),
    ("{% if passage | length > 400 %}Long. {% endif %}{{passage}}. ||| {{label}}", None,
     ("passage",)),
]


def _train(texts: list[str], **options) -> bytes:
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(texts), model_writer=model,
                                   minloglevel=2, **options)
    return model.getvalue()


@pytest.fixture(scope="module")
def tokenizers() -> dict[str, Tokenizer]:
    """By name: the sample vocabulary; seqio's dense test vocabulary (a character a token, most
    queries need fitting); a unigram vocabulary with T5's settings trained on the samples (a
    word one or two tokens); a model whose pieces cross words (no words: the bisection)."""
    corpus = list(rendered_texts(catalog(), TemplateCollection.default()))
    models = {
        "sample": SAMPLE_VOCAB.read_bytes(),
        "dense": Path(SEQIO_MODEL).read_bytes(),
        "t5-like": _train(corpus, vocab_size=1500, normalization_rule_name="nmt_nfkc",
                          pad_id=0, eos_id=1, unk_id=2, bos_id=-1),
        "no words": _train(corpus[:800], vocab_size=400, model_type="bpe",
                           split_by_whitespace=False),
    }
    return {name: Tokenizer(model, EXTRA_IDS) for name, model in models.items()}


_word_lists = st.lists(st.sampled_from(WORDS), min_size=1, max_size=60)


def _joined(words: list[str], spaces: list[str]) -> str:
    return "".join(w + s for w, s in zip(words, spaces, strict=False)) + words[-1]


_texts = _word_lists.flatmap(lambda words: st.lists(
    st.sampled_from(SPACES), min_size=len(words) - 1, max_size=len(words) - 1).map(
    lambda spaces: _joined(words, spaces)))
_edged = st.tuples(st.sampled_from(["", " ", "\n"]), _texts, st.sampled_from(["", " ", "\n"])
                   ).map("".join)


def _length(value: str | list[str]) -> int:
    return len(value) if isinstance(value, str) else sum(map(len, value))


def _changes(value: str | list[str]) -> list[int]:
    """The caps at which the rule's cut of `value` differs from the cap below, brute force."""
    return [cap for cap in range(1, _length(value) + 1)
            if cut_value(value, cap) != cut_value(value, cap - 1)]


@settings(max_examples=150, deadline=None, derandomize=True, database=None)
@given(values=st.lists(st.one_of(_edged, st.lists(_edged, min_size=1, max_size=4)),
                       min_size=1, max_size=2))
def test_cuts_change_where_the_rule_cuts_differently(values):
    """`start` is the last cap at or below at which some field's cut changes, `after` the
    first above: every cap between gives the same cut."""
    points = sorted(set().union(*map(_changes, values)))
    cuts, longest = Cuts(values, cut_value), max(map(_length, values))
    assert cuts.longest == longest and points[-1:] == [longest]
    for cap in range(longest + 1):
        assert cuts.start(cap) == max([p for p in points if p <= cap], default=0)
        assert cuts.after(cap) == min([p for p in points if p > cap], default=longest)


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(text=_edged, limit=st.integers(-2, 400))
def test_cut_text_cuts_at_the_last_whitespace_as_before(text, limit):
    space = _LAST_SPACE.search(text, 0, max(limit, 0) + 1)
    before = text if len(text) <= limit else text[:space.start()].rstrip() if space else ""
    assert cut_text(text, limit) == before


@pytest.mark.parametrize("name", ["sample", "dense", "t5-like"])
def test_word_lengths_are_each_words_own_ids(tokenizers, name):
    """Words one space apart: each word's ids are its own, as SentencePiece encodes it."""
    tokenizer = tokenizers[name]
    processor = spm.SentencePieceProcessor(model_proto=with_extra_ids(
        tokenizer._proto.SerializeToString(), 0))
    words = [w for w in WORDS if w != "<extra_id_3>"] * 3
    text = " ".join(words)
    lengths = tokenizer.word_lengths(tokenizer.encode_packed([text])[0])
    assert lengths.tolist() == [len(processor.encode(word)) for word in words]
    assert tokenizer.word_lengths(tokenizer.encode_packed([""])[0]).tolist() == []


def test_no_word_lengths_where_words_do_not_split(tokenizers):
    assert tokenizers["no words"].word_lengths(tokenizers["no words"].encode_packed(["a b"])[0]) \
        is None
    off = Tokenizer(SAMPLE_VOCAB.read_bytes(), EXTRA_IDS, memo=False)
    assert off.word_lengths(off.encode_packed(["a b"])[0]) is None


def _template(jinja: str, choices: str | None) -> CompiledTemplate:
    return CompiledTemplate(Template(id="t", name="t", jinja=jinja, dataset="generated",
                                     answer_choices=choices))


def _reference(shortener: QueryShortener, *args):
    """The bisection's fitted query (the search given no renders to spend)."""
    with mock.patch.object(fitting, "MAX_ROUNDS", 0):
        return shortener.shorten(*args)


def _fits(template: CompiledTemplate, tokenizer: Tokenizer, *, row: dict, original: Rendered,
          fields: list[str], cap: int, budget: int) -> bool:
    """The rule, from scratch: the render with every field cut to `cap` keeps the target and
    the choices and has at most `budget` tokens."""
    outcome = template.render({**row, **{f: cut_value(row[f], cap) for f in fields}},
                              original.index)
    return (isinstance(outcome, Rendered) and outcome.targets == original.targets
            and outcome.answer_choices == original.answer_choices
            and len(tokenizer.encode([outcome.inputs])[0]) <= budget)


def _field_names(template: CompiledTemplate, row: dict, original: Rendered,
                 long_fields: tuple[str, ...]) -> list[str]:
    """The fields the rule cuts: long passages whose halving keeps the target and choices."""
    names = []
    for name in passage_fields(row, template, long_fields):
        value = row[name]
        length = len(value) if isinstance(value, str) else sum(map(len, value))
        half = template.render({**row, name: cut_value(value, length // 2)}, original.index)
        if length > SHORT_FIELD_CHARS and isinstance(half, Rendered) and (
                half.targets, half.answer_choices) == (original.targets,
                                                       original.answer_choices):
            names.append(name)
    return names


@settings(max_examples=120, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(case=st.sampled_from(TEMPLATES), texts=st.tuples(
    _texts, _texts, st.lists(_texts, min_size=1, max_size=6)), setting=st.tuples(
    st.floats(0.02, 0.98), st.sampled_from(["sample", "dense", "t5-like", "no words"])))
def test_the_search_finds_the_bisections_cut(tokenizers, case, texts, setting):
    """Byte for byte the bisection's fitted query wherever fitting is monotone in the cap (the
    bisection then finds the largest cap that fits); elsewhere a cap that fits next to one
    that does not, or none if cap 0 does not fit, as the bisection."""
    (jinja, choices, long_fields), (passage, other, supports), (share, name) = case, texts, setting
    tokenizer, template = tokenizers[name], _template(jinja, choices)
    row = {"passage": passage * 3, "other": other * 2, "supports": supports * 4,
           "question": "is it good", "label": "yes"}
    original = template.render(row, 5)
    if not isinstance(original, Rendered):
        return
    ids = tokenizer.encode_packed([original.inputs])[0]
    tokens = len(tokenizer.encode([original.inputs])[0])
    budget = max(1, int(tokens * share))
    shortener = QueryShortener(template, tokenizer, long_fields)
    found = shortener.shorten(row, original, ids, budget)
    reference = _reference(QueryShortener(template, tokenizer, long_fields), row, original,
                           ids, budget)
    fields = _field_names(template, row, original, long_fields)
    if not fields:
        assert found == reference and not found.fits
        return
    assert shortener.tally["bisected"] == 1 if name == "no words" else (
        shortener.tally["estimated"] + shortener.tally["bisected"] == 1)
    caps = [0, *sorted(set().union(*(_changes(row[f]) for f in fields)))][:-1]
    fitting_caps = [_fits(template, tokenizer, row=row, original=original, fields=fields,
                          cap=cap, budget=budget) for cap in caps]
    monotone = fitting_caps == sorted(fitting_caps, reverse=True)
    if monotone or found == reference:
        assert found == reference
        return
    assert found.fits and fitting_caps[0]  # a cap that fits, and the next does not
    at = next(i for i, cap in enumerate(caps) if found.rendered == template.render(
        {**row, **{f: cut_value(row[f], cap) for f in fields}}, original.index))
    assert fitting_caps[at] and (at + 1 == len(caps) or not fitting_caps[at + 1])


@pytest.mark.parametrize("case", [
    ("wiki_hop", "original", "choose_best_object_interrogative_1", 256),
    ("wiki_hop", "original", "explain_relation", 200),
    ("quoref", None, "Answer Question Given Context", 300),
    ("duorc", "SelfRC", "answer_question", 400),
    ("cnn_dailymail", "3.0.0", "news_summary", 500),
])
@pytest.mark.parametrize("name", ["sample", "dense", "t5-like"])
def test_real_templates_fit_as_the_bisection_does(tokenizers, case, name):
    dataset, subset, template, length = case
    entry = catalog().get(dataset, subset)
    rows = list(generate_rows(entry, "validation", 40, seed=3))
    if dataset == "wiki_hop":  # supports of ~30 paragraphs, as wiki_hop's often are
        rows = [{**row, "supports": [s for r in rows for s in r["supports"]][:30]}
                for row in rows]
    task = TaskSplit(dataset, subset, template, "validation", rows, rows,
                     FewshotSettings(input_length=length, label=f"len{length}"),
                     tokenizer=tokenizers[name])
    shortener = task.prompter().shortener
    reference = QueryShortener(task.compiled, tokenizers[name], entry.text_lengths)
    queries = task.queries()
    for row, query in queries:
        ids = tokenizers[name].encode_packed([query.inputs])[0]
        if len(tokenizers[name].encode([query.inputs])[0]) > length:
            assert shortener.shorten(row, query, ids, length) == _reference(
                reference, row, query, ids, length)
    tally = shortener.tally
    assert tally["estimated"] > 5 and tally["bisected"] <= tally["estimated"] // 10
    assert tally["renders"] <= 4 * (tally["estimated"] + tally["bisected"])


def test_a_text_tokenized_once_leaves_its_sentences_in_the_memo_not_itself():
    """A passage cut to fit comes once: its sentences and words stay in the memo for the next
    cut, its run of sentences and its rest (what only it has) do not push them out."""
    tokenizer = Tokenizer(SAMPLE_VOCAB.read_bytes(), EXTRA_IDS)
    words = [w for w in WORDS if w.isascii() and "<" not in w]
    text = ". ".join(" ".join(words[i:i + 5]) for i in range(0, len(words) * 4, 3)) + " end"
    plain = spm.SentencePieceProcessor(model_proto=with_extra_ids(SAMPLE_VOCAB.read_bytes(),
                                                                  EXTRA_IDS))
    assert tokenizer.encode([text]) == [plain.encode(text)]  # the memo's path, warmed up
    held = set(tokenizer.memo._sentences)
    cut = text[:len(text) // 2].rstrip()
    [once] = tokenizer.encode_packed([cut], once=True)
    assert tokenizer.word_lengths(once).sum() == len(plain.encode(cut))
    added = set(tokenizer.memo._sentences) - held
    assert all(". " not in key and not key.endswith("\0") for key in added)  # sentences only
    assert tokenizer.encode_packed([cut])[0] == once  # remembered normally, the same ids
    assert set(tokenizer.memo._sentences) - held > added
