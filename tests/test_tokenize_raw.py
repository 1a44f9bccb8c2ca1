"""The tokenizer's raw-text path: text cut after ". " and normalized piece by piece (first
sentence, run of sentences, rest), and ids handed out packed as varints, as the cache asks for
them. Identity with plain `SentencePieceProcessor.encode` is the contract, checked where cuts
are hardest: next to combining marks, unusual and repeated spaces, control characters, \\0,
`<extra_id_N>` and ▁; models whose rules or pieces read "." or " " must not take the path.
"""

from __future__ import annotations

import io
import random

import pytest
import sentencepiece as spm
from sentencepiece import sentencepiece_model_pb2 as model_pb2
from test_tokenize import EXTRA_IDS, ODD, SEQIO_MODEL, _plain

from p3data.datasets.catalog import Catalog
from p3data.datasets.samples import rendered_texts
from p3data.templates import TemplateCollection
from p3data.tokenize import Tokenizer
from p3data.tokenize.checks import _rules_skip, ascii_refusal, raw_cut_refusal
from p3data.tokenize.tokenizer import with_extra_ids
from p3data.varints import packed
from p3data.vocab import SAMPLE_VOCAB

# What may stand on either side of a cut, and cuts that are not quite one.
EDGES = ["", ".", "...", "?", "x\u0301", "\u0301", "\u00a8", "\u00a0", "\x00", "\x01", "\t",
         "\n", "\u2581", "\u2581\u2581", "<extra_id_7>", "ﬁ", "\u3000", " ", "  ", "Ⅻ", "😀"]
SEPARATORS = [". ", ".  ", ". . ", ". .", "..  ", ".\u00a0", ". \u00a0", ". \n", ".\n ", ". \t",
              ". \u0301", ". \u00a8", ". \x01", ". \x00", "\x00. ", ". \u2581", ". <extra_id_3>",
              ". ." * 3, " . ", "."]


@pytest.fixture(scope="module")
def corpus() -> list[str]:
    """Seeded texts of sentences, their edges odd, joined by cuts and near-cuts."""
    rng = random.Random(7)
    words = sorted({w for text in list(rendered_texts(Catalog.load(),
                                                      TemplateCollection.default()))[:2000]
                    for w in text.split()})

    def sentence() -> str:
        inner = " ".join(rng.choice(words + ODD) for _ in range(rng.randint(0, 6)))
        return rng.choice(EDGES) + inner + rng.choice(EDGES)

    def text(sentences: int) -> str:
        parts = [sentence() + rng.choice(SEPARATORS) for _ in range(sentences)]
        return rng.choice(["", " ", ". ", "\n"]) + "".join(parts) + rng.choice(["", " ", "."])

    texts = [a + sep + b for a in EDGES for sep in SEPARATORS for b in EDGES[:6]]
    texts += [text(rng.randint(1, 12)) for _ in range(2500)]
    shared = text(20)  # a row's text in several templates' renders
    texts += [rng.choice(["Review: ", "", "Q. "]) + shared + rng.choice(["", " Good?", ". Bad"])
              for _ in range(30)]
    return texts


def _bpe(**options) -> bytes:
    corpus = list(rendered_texts(Catalog.load(), TemplateCollection.default()))[:1500]
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(corpus), model_writer=model,
                                   vocab_size=600, minloglevel=2, model_type="bpe", **options)
    return model.getvalue()


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> dict[str, bytes]:
    """Model bytes by name; "dot rule" normalizes ". " to "." (a rule across the cut), "case
    fold" lowercases ASCII letters (rules that rewrite printable ASCII)."""
    rules = tmp_path_factory.mktemp("rules") / "dot.tsv"
    rules.write_text("2E 20\t2E\n")
    return {"sample": SAMPLE_VOCAB.read_bytes(), "seqio": open(SEQIO_MODEL, "rb").read(),
            "bpe": _bpe(), "dot rule": _bpe(normalization_rule_tsv=str(rules)),
            "case fold": _bpe(normalization_rule_name="nfkc_cf")}


def _proto(model: bytes) -> model_pb2.ModelProto:
    return model_pb2.ModelProto.FromString(with_extra_ids(model, EXTRA_IDS))


@pytest.mark.parametrize(("name", "raw"), [("sample", True), ("seqio", True), ("bpe", True),
                                           ("case fold", True), ("dot rule", False)])
def test_raw_cuts_give_plain_encodings_ids_and_packed_ids(models, corpus, name, raw):
    tokenizer = Tokenizer(models[name], EXTRA_IDS)
    assert tokenizer.memo.raw is raw
    plain = _plain(models[name], corpus)
    batches = [corpus[i:i + 200] for i in range(0, len(corpus), 200)]
    assert [ids for batch in batches for ids in tokenizer.encode(batch)] == plain
    fresh = Tokenizer(models[name], EXTRA_IDS)  # packed ids, from a cold memo
    got = [p for batch in batches for p in fresh.encode_packed(batch)]
    assert [p.varints for p in got] == [packed(ids) for ids in plain]
    assert [p.tokens for p in got] == [len(ids) - ids.count(0) - ids.count(1) for ids in plain]
    stats = fresh.memo.stats
    assert stats.new_pieces < stats.pieces  # runs and sentences came back


def test_each_sentence_is_normalized_once_whichever_run_it_comes_in():
    tokenizer = Tokenizer(SAMPLE_VOCAB.read_bytes(), EXTRA_IDS)
    row = "One film. Two actors. Three scenes. Four songs. The end"
    texts = [f"Review: {row}. Good?", f"{row}. Bad?", f"Q. {row}"]
    assert tokenizer.encode(texts) == _plain(SAMPLE_VOCAB.read_bytes(), texts)
    # first sentences, the sentences of the two runs, and the rests
    new = {"Review: One film", "One film", "Q", "Two actors", "Three scenes", "Four songs",
           "The end", "Good?", "Bad?", "The end (last)"}
    stats = tokenizer.memo.stats
    assert stats.new_sentences == len(new)
    # each text is its first sentence, a run and the rest; the second text's run is the first's
    assert (stats.pieces, stats.new_pieces) == (9, 8)


# A first sentence with no space in it (a URL, a code line, Chinese), then more text
NO_SPACE = "https://example.org/news/2021/a-long-path."
ROW = f"{NO_SPACE} Second sentence here. The end"


@pytest.mark.parametrize("name", ["sample", "seqio", "bpe", "case fold"])
def test_a_first_sentence_without_spaces_is_cut_from_the_words_before_it(models, name):
    """Templates put their own words, then a space, before a row's text: where its first
    sentence has no space in it, it is cut at that space if the character before the space is
    printable ASCII, so every template shares it; with anything else before the space (raw ▁,
    other spaces, marks, accents), it is not, nor where the model's rules rewrite ASCII
    ("case fold"). Ids are SentencePiece's in every case."""
    texts = [f"Doc{edge} {ROW}{suffix}" for edge in EDGES for suffix in ["", ". Summary:"]]
    texts += [ROW, f"  {ROW}", f"Doc: x{ROW}"]
    tokenizer = Tokenizer(models[name], EXTRA_IDS)
    assert tokenizer.encode(texts) == _plain(models[name], texts)
    cuts = tokenizer.memo.raw_cuts
    for edge in ("", ":", "?", "x", '"', ")"):
        expected = [f"Doc{edge}", NO_SPACE] if cuts.ascii_sentences else [f"Doc{edge} {NO_SPACE}"]
        assert cuts.pieces(f"Doc{edge} {ROW}")[:len(expected)] == expected
    for edge in ("\u2581", "\u3000", "\u00a0", "\u0301", "。"):
        assert cuts.pieces(f"Doc{edge} {ROW}")[0] == f"Doc{edge} {NO_SPACE}"
    assert cuts.pieces("Doc: short. More. End")[0] == "Doc: short."  # too short to cut
    assert cuts.ascii_sentences is (name != "case fold")


def test_refusals_name_their_reason(models):
    def edited(edit) -> model_pb2.ModelProto:
        proto = _proto(models["sample"])
        edit(proto)
        return proto

    assert raw_cut_refusal(edited(lambda p: None)) is None
    for edit, reason in [
        (lambda p: setattr(p.normalizer_spec, "add_dummy_prefix", False),
         "add_dummy_prefix is false"),
        (lambda p: setattr(p.normalizer_spec, "remove_extra_whitespaces", False),
         "remove_extra_whitespaces is false"),
        (lambda p: p.pieces.add(piece="e.g", type=model_pb2.ModelProto.SentencePiece.USER_DEFINED),
         "user-defined piece 'e.g' holds '.' or ' '"),
    ]:
        assert reason in raw_cut_refusal(edited(edit))
    assert "a normalization rule reads '.' or ' '" in raw_cut_refusal(_proto(models["dot rule"]))
    forced = Tokenizer(models["dot rule"], EXTRA_IDS)
    forced.memo.raw = True  # what cutting raw text would give: not SentencePiece's ids
    texts = ["One film. Two actors. The end", "A. B"]
    assert forced.encode(texts) != _plain(models["dot rule"], texts)


def test_ascii_sentences_skip_the_normalizer_only_where_its_rules_leave_ascii_alone(models):
    for name in ("sample", "seqio", "bpe"):
        assert ascii_refusal(_proto(models[name])) is None, name
        assert Tokenizer(models[name], EXTRA_IDS).memo.raw_cuts.ascii_sentences, name
    refusal = ascii_refusal(_proto(models["case fold"]))
    assert refusal == "a normalization rule rewrites printable ASCII"
    assert not Tokenizer(models["case fold"], EXTRA_IDS).memo.raw_cuts.ascii_sentences
    forced = Tokenizer(models["case fold"], EXTRA_IDS)
    forced.memo.raw_cuts.ascii_sentences = True  # what splitting ASCII sentences itself would give
    texts = ["One Film. Two Actors. The End", "Seen. Not Seen"]
    assert forced.encode(texts) != _plain(models["case fold"], texts)
    assert Tokenizer(models["case fold"], EXTRA_IDS).encode(texts) == _plain(models["case fold"],
                                                                           texts)


def test_rules_are_read_from_the_charsmap(models):
    """nmt_nfkc leaves "." and " " alone, turns tabs and no-break spaces into spaces and
    composes "e" with a combining acute: the decoded rules must say so."""
    charsmap = _proto(models["sample"]).normalizer_spec.precompiled_charsmap
    assert _rules_skip(charsmap, ". ")
    assert not any(_rules_skip(charsmap, c) for c in ["\t", "\n", "e"])
    assert _rules_skip(b"", ". ")  # no rules at all (identity normalization)
    assert not _rules_skip(b"\xff\xff\xff\xff", ". ")  # a broken charsmap is not trusted
