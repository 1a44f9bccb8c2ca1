"""A few-shot prompt's ids joined from its parts' (`Tokenizer.join`) are exactly SentencePiece's
own encode of the whole prompt, and where `join_refusal` says they might not be, prompts are
tokenized whole: for generated texts, tied words in long texts, models trained here that the
check refuses, separators that join words, and the memo turned off."""

from __future__ import annotations

import io
import logging

import pytest
import sentencepiece as spm
from helpers.fewshot import TaskSplit, catalog, example_bytes
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sentencepiece import sentencepiece_model_pb2 as model_pb2

from p3data.datasets.samples import generate_rows, rendered_texts, sample_rows
from p3data.fewshot import FewshotSettings
from p3data.templates import TemplateCollection
from p3data.tokenize import Tokenizer, join_refusal
from p3data.tokenize.tokenizer import with_extra_ids
from p3data.varints import unpacked
from p3data.vocab import EXTRA_IDS, SAMPLE_VOCAB

SEPARATORS = ["\n\n\n", "\n\n", " ", "\t", "\r\n", " \n "]  # whitespace: joined
WORDS = ["The", "cat", "sat.", "Ünïcödé", "e\u0301", "ﬁne", "１２３", "later....", "====", "x===y",
         "<extra_id_3>", "a<extra_id_0>b", "\u2581", "\u2581x", "漢字", "😀", "don't", "9" * 40]
SPACES = [" ", "  ", "\n", "\t", "\u00a0", "\u3000", "\u200b", "\u2028", "", ". ", "\n\n\n"]
DUMMY_FREE = "no dummy prefix"


def _plain(model: bytes, text: str) -> list[int]:
    """SentencePiece's own encode, of the model as seqio loads it."""
    processor = spm.SentencePieceProcessor(model_proto=with_extra_ids(model, EXTRA_IDS))
    return processor.encode(text)


def _joined(tokenizer: Tokenizer, parts: list[str], separator: str) -> list[int] | None:
    """The ids `join` gives for `separator.join(parts)` from those of its parts."""
    entries = tokenizer.encode_packed([p + separator for p in parts[:-1]] + parts[-1:])
    joined = tokenizer.join(entries, separator=separator)
    return None if joined is None else unpacked(joined.varints).tolist()


def _naive(model: bytes, parts: list[str], separator: str) -> list[int]:
    """The parts' ids end to end, whatever the model: what joining would give unchecked."""
    return [i for part in [p + separator for p in parts[:-1]] + parts[-1:]
            for i in _plain(model, part)]


def _train(texts: list[str], **options) -> bytes:
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(texts), model_writer=model,
                                   vocab_size=400, minloglevel=2, **options)
    return model.getvalue()


def _with_user_piece(piece: str) -> bytes:
    proto = model_pb2.ModelProto.FromString(SAMPLE_VOCAB.read_bytes())
    proto.pieces.add(piece=piece, score=0.0, type=model_pb2.ModelProto.SentencePiece.USER_DEFINED)
    return proto.SerializeToString()


@pytest.fixture(scope="module")
def models() -> dict[str, bytes]:
    """Models the check refuses (trained in well under a second), by what breaks joining."""
    corpus = list(rendered_texts(catalog(), TemplateCollection.default()))[:600]
    return {
        DUMMY_FREE: _train(corpus, add_dummy_prefix=False),  # a part's first word has no ▁
        "pieces across words": _train(corpus, model_type="bpe", split_by_whitespace=False),
        "a user-defined piece over the separator": _with_user_piece("\nThe"),
    }


SAMPLE = Tokenizer(SAMPLE_VOCAB.read_bytes(), EXTRA_IDS)
_text = st.lists(st.one_of(st.sampled_from(WORDS), st.text(min_size=1, max_size=6)),
                 max_size=12).flatmap(lambda words: st.lists(
                     st.sampled_from(SPACES), min_size=len(words), max_size=len(words)).map(
                     lambda spaces: "".join(w + s for w, s in zip(words, spaces, strict=True))))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(parts=st.lists(_text, min_size=1, max_size=6), separator=st.sampled_from(SEPARATORS))
def test_joined_ids_are_sentencepieces_own_encode_of_the_whole_prompt(parts, separator):
    assert SAMPLE.joins(separator)
    joined = _joined(SAMPLE, parts, separator)
    if joined is not None:  # None: a tie the guard cannot rule out, encoded whole
        assert joined == _plain(SAMPLE_VOCAB.read_bytes(), separator.join(parts))


def test_real_prompts_are_joined_not_tokenized_again():
    texts = list(rendered_texts(catalog(), TemplateCollection.default()))[:3000:7]
    prompts = [texts[i:i + 6] for i in range(0, len(texts) - 6, 6)]
    joined = [_joined(SAMPLE, parts, "\n\n\n") for parts in prompts]
    assert joined.count(None) == 0
    assert joined == [_plain(SAMPLE_VOCAB.read_bytes(), "\n\n\n".join(p)) for p in prompts]


def test_a_tie_the_joined_score_could_break_is_left_to_whole_encoding():
    """Alone, "▁later...." ties; after a long exemplar SentencePiece's float32 sums break the
    tie one way or the other: joined naively the ids would be wrong, so `join` declines."""
    model = SAMPLE_VOCAB.read_bytes()
    filler = " ".join(["The quick brown fox jumps over the lazy dog."] * 600)
    cases = [[filler[:n], f"And later.... {tie}"] for n in (100, 3000, 30_000)
             for tie in ("later....", "====", "ok....")]
    wrong = [parts for parts in cases
             if _naive(model, parts, "\n\n\n") != _plain(model, "\n\n\n".join(parts))]
    assert wrong  # the guard is needed
    for parts in cases:
        joined = _joined(SAMPLE, parts, "\n\n\n")
        assert joined is None or joined == _plain(model, "\n\n\n".join(parts))
    assert all(_joined(SAMPLE, parts, "\n\n\n") is None for parts in wrong)


@pytest.mark.parametrize("name, reason", [
    (DUMMY_FREE, "add_dummy_prefix is false"),
    ("pieces across words", "split_by_whitespace is false"),
    ("a user-defined piece over the separator", "user-defined piece '\\nThe' holds a separator"),
])
def test_a_model_the_check_refuses_would_join_wrong_ids(models, name, reason):
    model = models[name]
    proto = model_pb2.ModelProto.FromString(with_extra_ids(model, EXTRA_IDS))
    processor = spm.SentencePieceProcessor(model_proto=proto.SerializeToString())
    assert reason in join_refusal(proto, "\n\n\n", processor.normalize)
    parts = ["A cat sat on the", "The cat sat on the", "same thing."]  # "▁the▁same"
    assert _naive(model, parts, "\n\n\n") != _plain(model, "\n\n\n".join(parts))
    tokenizer = Tokenizer(model, EXTRA_IDS)
    assert not tokenizer.joins("\n\n\n") and _joined(tokenizer, parts, "\n\n\n") is None


@pytest.mark.parametrize("separator, reason", [
    ("|", "does not normalize to one space"), ("\nQ:", "does not normalize to one space"),
    ("\na\n", "a normalization rule reads"),
    ("\x0b", "does not normalize to one space"), ("\u3000", "is not ASCII")])
def test_separators_that_are_not_plain_whitespace_are_refused(separator, reason):
    proto = model_pb2.ModelProto.FromString(SAMPLE_VOCAB.read_bytes())
    normalize = spm.SentencePieceProcessor(model_proto=SAMPLE_VOCAB.read_bytes()).normalize
    assert reason in join_refusal(proto, separator, normalize)
    assert not SAMPLE.joins(separator)
    assert _joined(SAMPLE, ["A cat.", "A dog."], separator) is None


def test_the_memo_turned_off_turns_joining_off(caplog):
    """Joining is a shortcut like the memo's, and needs its score magnitudes to guard ties."""
    with caplog.at_level(logging.INFO, logger="p3data.tokenize.tokenizer"):
        tokenizer = Tokenizer(SAMPLE_VOCAB.read_bytes(), EXTRA_IDS, memo=False)
        assert not tokenizer.joins("\n\n\n")
    assert "encoded whole (turned off by memo=False)" in caplog.text
    assert _joined(tokenizer, ["A cat.", "A dog."], "\n\n\n") is None


def _rte(tokenizer: Tokenizer, **options) -> TaskSplit:
    key = catalog().get("super_glue", "rte").key
    return TaskSplit("super_glue", "rte", "GPT-3 style", "validation",
                     sample_rows(key, "validation"), sample_rows(key, "train"),
                     FewshotSettings(**options), tokenizer=tokenizer)


@pytest.mark.parametrize("name", ["sample", DUMMY_FREE, "memo off"])
def test_every_prompts_ids_are_sentencepieces_own(models, name):
    """Joined (the sample model) or tokenized whole (a refused model, the memo off), each
    prompt's ids are SentencePiece's encode of the prompt, and the same bytes either way."""
    model = SAMPLE_VOCAB.read_bytes() if name == "memo off" else models.get(name, SAMPLE_VOCAB
                                                                          .read_bytes())
    tokenizer = Tokenizer(model, EXTRA_IDS, memo=name != "memo off")
    examples = _rte(tokenizer).examples()
    for batch in examples.values():
        for example in batch:
            assert unpacked(example.input_ids.varints).tolist() == _plain(model, example.inputs)
    assert max(e.num_shots for e in examples[5]) == 5
    if name == "memo off":  # the same examples as joined
        joined = _rte(SAMPLE).examples()
        assert {k: list(map(example_bytes, v)) for k, v in examples.items()} == {
            k: list(map(example_bytes, v)) for k, v in joined.items()}


def test_shortened_queries_keep_the_ids_of_their_shortened_input():
    entry = catalog().get("quoref")
    task = TaskSplit("quoref", None, "Answer Question Given Context", "validation",
                     list(generate_rows(entry, "validation", 20, seed=4)),
                     list(generate_rows(entry, "train", 20, seed=5)),
                     FewshotSettings(input_length=300, label="len300"))
    prompter = task.prompter()
    examples = prompter.prompts(task.queries())
    assert prompter.stats[1].fitted > 5
    for batch in examples.values():
        for example in batch:
            assert unpacked(example.input_ids.varints).tolist() == _plain(
                SAMPLE_VOCAB.read_bytes(), example.inputs)
