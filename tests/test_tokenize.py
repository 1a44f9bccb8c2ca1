"""The memoized tokenizer gives exactly SentencePiece's ids, and really takes its fast path.

Corpora: every rendered sample, and seeded generated text mixing sample words with adversarial
pieces (Unicode normalization cases, unusual spaces, digits, CJK, emoji, combining marks,
`<extra_id_N>`, tie-prone punctuation runs, very long words, texts of tens of thousands of
characters). Models: the shipped sample model, seqio's tiny test model (mostly unknown
characters), a unigram and a BPE model trained here with other normalization settings, and a
model whose pieces cross word boundaries (refused).
"""

from __future__ import annotations

import importlib.util
import io
import logging
import os
import random

import pytest
import sentencepiece as spm
from sentencepiece import sentencepiece_model_pb2 as model_pb2

from p3data.datasets.catalog import Catalog
from p3data.datasets.samples import rendered_texts
from p3data.errors import P3DataError
from p3data.templates import TemplateCollection
from p3data.tokenize import Tokenizer, word_split_refusal
from p3data.tokenize import memo as tokenize_memo
from p3data.tokenize import segment as tokenize_segment
from p3data.tokenize import tokenizer as tokenizer_module
from p3data.tokenize.tokenizer import ENV_MEMO, with_extra_ids
from p3data.vocab import SAMPLE_VOCAB, XP3_SAMPLE_VOCAB

EXTRA_IDS = 100
# seqio's tiny test model, found without importing seqio (and TensorFlow)
SEQIO_MODEL = os.path.join(os.path.dirname(importlib.util.find_spec("seqio").origin),
                           "test_data", "sentencepiece", "sentencepiece.model")
SPACES = [" ", "  ", "   ", "\t", "\n", "\r\n", "\n\n", "\u00a0", "\u2002", "\u2009", "\u3000",
          "\u200b", "\u202f", "\ufeff", "\u2028", "", "\u2581", " \u2581 ", ". ", "... "]
ODD = [
    "ﬁne", "ﬂow", "①②", "Ⅻ", "㎏", "x²", "ſ", "™", "…", "‥", "ＡＢＣ", "ｆｕｌｌ", "１２３",
    "ｶﾀｶﾅ", "e\u0301", "a\u0308o\u0308", "\u0301", "Z\u0334\u0321a\u0336l\u0337g\u0335o",
    "漢字テスト", "한국어", "中文，标点。", "😀", "👍🏽", "👨\u200d👩\u200d👧", "🇫🇷", "€100",
    "3.14159", "2021-10-01", "1,000,000", "007", "٣٤٥", "<extra_id_0>", "<extra_id_99>",
    "x<extra_id_5>y", "(<extra_id_1>)", "<extra_id_2>.", "<extra_id_100>", "<extra_id_",
    "<sep>", "a<sep>b", "====", "===", "....", "!!!!", "?!?!", "-----", "******", "'''",
    "``", "\u2581\u2581", "\u2581x", "I'm", "don't", "U.S.A.", "e-mail", "http://t.co/x?a=1",
    "a" * 300, "=" * 200, "9" * 500, "\x00", "\x07bell", "tab\there",
]


def _train(texts: list[str], **options) -> bytes:
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(texts), model_writer=model,
                                   vocab_size=600, minloglevel=2, **options)
    return model.getvalue()


@pytest.fixture(scope="module")
def samples() -> list[str]:
    return list(rendered_texts(Catalog.load(), TemplateCollection.default()))


@pytest.fixture(scope="module")
def models(samples) -> dict[str, bytes]:
    """Model bytes by name (the trained ones in well under two seconds)."""
    corpus = samples[:1500]
    return {
        "sample": SAMPLE_VOCAB.read_bytes(),
        "seqio": open(SEQIO_MODEL, "rb").read(),
        # no dummy prefix (texts have heads), spaces kept as they are, bytes for unknowns
        "unigram": _train(corpus, model_type="unigram", normalization_rule_name="identity",
                          add_dummy_prefix=False, remove_extra_whitespaces=False,
                          byte_fallback=True, split_digits=True,
                          user_defined_symbols=["<sep>", "=="]),
        "bpe": _train(corpus, model_type="bpe", normalization_rule_name="nfkc_cf",
                      byte_fallback=True, user_defined_symbols=["<sep>"]),
        "crossing": _train(corpus[:800], model_type="bpe", split_by_whitespace=False),
    }


@pytest.fixture(scope="module")
def generated(samples) -> list[str]:
    """Seeded texts: sample words and odd pieces joined by odd spaces; some very long."""
    rng = random.Random(11)
    words = sorted({w for text in samples[:3000] for w in text.split()})

    def text(length: int) -> str:
        parts = [rng.choice(ODD) if rng.random() < 0.15 else rng.choice(words)
                 for _ in range(length)]
        inner = "".join(part + rng.choice(SPACES) for part in parts)
        return rng.choice(["", " ", "\n", "\u00a0"]) + inner

    texts = ["", " ", "\u2581", "\n\t ", *ODD, *(" ".join(ODD[i:i + 3]) for i in range(len(ODD)))]
    texts += [text(rng.randint(1, 40)) for _ in range(1500)]
    texts += [text(rng.randint(2000, 8000)) for _ in range(6)]
    return texts


def _plain(model: bytes, texts: list[str]) -> list[list[int]]:
    processor = spm.SentencePieceProcessor(model_proto=with_extra_ids(model, EXTRA_IDS))
    return processor.encode(texts, num_threads=1)


def _encode(tokenizer: Tokenizer, texts: list[str], batch: int = 300) -> list[list[int]]:
    return [ids for i in range(0, len(texts), batch)
            for ids in tokenizer.encode(texts[i:i + batch])]


# Shares of texts that must take the fast path, per model: one word in seven is odd here, and
# ties, extra ids and user-defined pieces send a unigram model's text to plain encoding.
FAST = {"sample": 0.6, "unigram": 0.6, "bpe": 1.0, "seqio": 0.7}


@pytest.mark.parametrize("name", ["sample", "unigram", "bpe", "seqio"])
def test_generated_text_gets_plain_encodings_ids(models, generated, name):
    tokenizer = Tokenizer(models[name], EXTRA_IDS)
    assert _encode(tokenizer, generated) == _plain(models[name], generated)
    stats = tokenizer.memo.stats
    assert stats.texts - stats.plain_texts >= FAST[name] * stats.texts
    assert stats.new_pieces < stats.pieces and stats.new_words < stats.words


def test_every_rendered_sample_gets_plain_encodings_ids(models, samples):
    tokenizer = Tokenizer(models["sample"], EXTRA_IDS)
    assert _encode(tokenizer, samples, batch=1000) == _plain(models["sample"], samples)
    stats = tokenizer.memo.stats
    assert stats.plain_texts < 0.05 * stats.texts
    # the sentences segmented are fewer than half of the texts' sentences
    assert stats.new_sentences < 0.5 * sum(text.count(". ") + 1 for text in samples)


def test_a_model_whose_pieces_cross_words_is_encoded_plainly(models, generated):
    proto = model_pb2.ModelProto.FromString(models["crossing"])
    assert any("▁" in p.piece[1:] for p in proto.pieces)
    assert "split_by_whitespace is false" in word_split_refusal(proto)
    tokenizer = Tokenizer(models["crossing"], EXTRA_IDS)
    assert tokenizer.memo is None
    assert _encode(tokenizer, generated) == _plain(models["crossing"], generated)


def test_the_memo_turned_off_gives_the_same_ids_plainly(models, samples, monkeypatch, caplog):
    """`P3DATA_TOKENIZER_MEMO=0` (or `memo=False`) is there to rule the memo out."""
    model = models["sample"]
    memoized = Tokenizer(model, EXTRA_IDS, memo=True)
    monkeypatch.setenv(ENV_MEMO, "0")
    with caplog.at_level(logging.INFO, logger="p3data.tokenize"):
        plain = Tokenizer(model, EXTRA_IDS)
    assert plain.memo is None  # no memo: no lookups, no stats
    assert f"turned off by {ENV_MEMO}" in caplog.text
    assert _encode(plain, samples, batch=1000) == _encode(memoized, samples, batch=1000)
    assert memoized.memo.stats.texts > 0  # the memo on, and used
    packed = [p.varints for p in plain.encode_packed(samples[:500])]
    assert packed == [p.varints for p in memoized.encode_packed(samples[:500])]
    assert Tokenizer(model, EXTRA_IDS, memo=True).memo is not None  # the argument wins
    monkeypatch.setenv(ENV_MEMO, "1")
    assert Tokenizer(model, EXTRA_IDS).memo is not None
    assert Tokenizer(model, EXTRA_IDS, memo=False).memo is None
    monkeypatch.setenv(ENV_MEMO, "maybe")
    with pytest.raises(P3DataError, match=ENV_MEMO):
        Tokenizer(model, EXTRA_IDS)


def _sample_with_dotted_piece() -> bytes:
    """The sample model with a user-defined piece holding ".": raw text is not cut then."""
    proto = model_pb2.ModelProto.FromString(SAMPLE_VOCAB.read_bytes())
    proto.pieces.add(piece="<.>", score=0.0, type=model_pb2.ModelProto.SentencePiece.USER_DEFINED)
    return proto.SerializeToString()


TIES = ["later....", "====", "===", "x===y", "....", "!!!!", "2de....", "ok...."]


def _tie_texts(seed: int) -> list[str]:
    """Texts of 1 to 6000 words (score magnitudes of 2**3 to 2**16) with one to three words
    that tie alone ("." + "..." against "..." + "."), anywhere: first, last, before ". "."""
    rng = random.Random(seed)
    filler = ["The", "quick", "brown", "fox", "jumps", "over", "the", "lazy", "dog.", "and"]
    texts = []
    for length in [1, 2, 5, 30, 100, 400, 1000, 2500, 6000] * 12:
        words = rng.choices(filler, k=length)
        for _ in range(rng.randint(1, 3)):
            words.insert(rng.choice([0, len(words), rng.randint(0, len(words))]),
                         rng.choice(TIES))
        texts.append(" ".join(words) + rng.choice(["", ".", " and more words after it."]))
    return texts


@pytest.mark.parametrize("model", [SAMPLE_VOCAB.read_bytes(), _sample_with_dotted_piece()],
                         ids=["raw cuts", "normalized sentences"])
def test_ties_in_long_texts_are_segmented_where_they_stand(model, monkeypatch):
    """Alone, "▁later...." and "▁===" have two segmentations of exactly the same score; in a long
    text SentencePiece's float32 sums break the tie either way: such words are segmented again
    from the score of the text before them, and give exactly SentencePiece's ids (in every
    text: here even where encoding the text whole would be cheaper)."""
    monkeypatch.setattr(tokenize_memo, "RESEGMENTED_SHARE", 1.0)
    texts = _tie_texts(5)
    words = model_pb2.ModelProto.FromString(with_extra_ids(model, EXTRA_IDS))
    words.normalizer_spec.CopyFrom(model_pb2.NormalizerSpec(
        name="identity", add_dummy_prefix=False, escape_whitespaces=False,
        remove_extra_whitespaces=False))
    alone = spm.SentencePieceProcessor(model_proto=words.SerializeToString())
    plain = _plain(model, texts)
    normalized = spm.SentencePieceProcessor(model_proto=model).normalize(texts)
    word_by_word = [[i for word in alone.encode(text.replace("▁", " ▁").split(" ")[1:])
                     for i in word] for text in normalized]
    assert word_by_word != plain  # the guard is needed
    tokenizer = Tokenizer(model, EXTRA_IDS)
    assert tokenizer.memo.raw is (model == SAMPLE_VOCAB.read_bytes())
    assert [ids for i in range(0, len(texts), 50)
            for ids in tokenizer.encode(texts[i:i + 50])] == plain
    stats = tokenizer.memo.stats
    assert stats.plain_texts == 0 and stats.resegmented_texts > len(texts) / 3


def test_near_ties_are_trusted_only_as_far_as_the_bound_proves():
    """Alone, "▁wana" "ishi" beats "▁" "wana" "ishi" by ~0.001 (xP3's sample vocabulary): after
    ~800 words of other text SentencePiece's float32 sums keep the other one at some offsets.
    The memo trusts such a word's ids only below the exponent its margin proves (a bound 2**7
    looser trusts them where they flip), segments it again where it stands beyond that, and
    every text's ids are SentencePiece's."""
    model = XP3_SAMPLE_VOCAB.read_bytes()
    texts = [" ".join(["kubwa"] * count + ["wanaishi"]) for count in range(10, 1500, 7)]
    processor = spm.SentencePieceProcessor(model_proto=model)
    alone = processor.encode("wanaishi")
    plain = processor.encode(texts)
    assert any(ids[-len(alone):] != alone for ids in plain)  # the tie flips in some texts
    tokenizer = Tokenizer(model, 0)
    assert [ids for i in range(0, len(texts), 16) for ids in tokenizer.encode(texts[i:i + 16])
            ] == plain
    assert tokenizer.memo.stats.resegmented_texts > len(texts) / 2  # not encoded plainly


@pytest.mark.parametrize("held", [1, 4096], ids=["let go", "held"])
def test_a_rows_text_is_segmented_where_it_stands_in_each_template(held, monkeypatch):
    """A row's long text with tied words comes in every template, each with its own words
    before and after it, so each tie is reached from another score: what the memo found in
    the text for one template (its parts, their float32 scores) serves the next, and every
    template's ids are SentencePiece's, whether that is held or let go at once."""
    monkeypatch.setattr(tokenize_memo, "RESEGMENTED_SHARE", 1.0)
    monkeypatch.setattr(tokenize_memo, "DECOMPOSITIONS_HELD", held)
    monkeypatch.setattr(tokenize_segment, "PART_SCORES_HELD", held)
    model = SAMPLE_VOCAB.read_bytes()
    rows = [text for text in _tie_texts(11) if len(text) > 2000][:30]
    tokenizer = Tokenizer(model, EXTRA_IDS)
    for prompt in ["{}", "Summarize: {}", "{} What comes next? later....",
                   "=== Title ==== {} ok.... Answer:", "Rest of it. {} x===y"]:
        texts = [prompt.format(row) for row in rows]
        assert tokenizer.encode(texts) == _plain(model, texts), prompt
    stats = tokenizer.memo.stats
    assert stats.plain_texts == 0 and stats.resegmented_texts >= 4 * len(rows)


def test_tied_words_with_unknown_characters_or_extra_ids():
    """A tied word is segmented again with unknown characters as candidates; where they win
    (SentencePiece merges them), where they come before it (scored one by one) or where a
    user-defined piece is in the text (scored by length), the text is encoded plainly."""
    proto = model_pb2.ModelProto.FromString(SAMPLE_VOCAB.read_bytes())
    proto.pieces.add(piece="ᚠᚠ", score=-5.0)  # "ᚠ" alone is unknown
    model = proto.SerializeToString()
    long = " ".join(["The quick brown fox jumps over the lazy dog."] * 300)
    texts = {f"{long} later....": True, f"{long} ᚠᚠ....": True, f"{long} ᚠᚠᚠ....": False,
             f"{long} ᚠ later....": False, f"{long} later.... <extra_id_3>": False}
    plain = _plain(model, list(texts))
    assert [2 in ids for ids in plain] == [False, False, True, True, False]  # 2: unknown
    for text, resegmented in texts.items():
        tokenizer = Tokenizer(model, EXTRA_IDS)
        assert tokenizer.encode([text]) == _plain(model, [text])
        stats = tokenizer.memo.stats
        assert (stats.resegmented_texts, stats.plain_texts) == (resegmented, not resegmented)


def test_memos_stay_bounded(models, generated, monkeypatch):
    monkeypatch.setattr(tokenize_memo, "SENTENCE_MEMO_BYTES", 20_000)
    monkeypatch.setattr(tokenize_memo, "WORD_MEMO_BYTES", 5_000)
    tokenizer = Tokenizer(models["sample"], EXTRA_IDS)
    texts = generated[:500]
    for i in range(0, len(texts), 25):
        assert tokenizer.encode(texts[i:i + 25]) == _plain(models["sample"], texts[i:i + 25])
        sentences, words = tokenizer.memo.held
        assert sentences <= 20_000 and words <= 5_000
    assert tokenizer.memo.stats.new_words > tokenizer.memo.stats.words / 2  # forgotten


def test_a_full_memo_keeps_what_recurs(models, monkeypatch):
    """Words used in every batch stay in a word memo that fills again and again with one-off
    words: each distinct word is segmented once, as with a memo that forgets nothing."""
    def new_words(limit: int) -> tuple[int, int]:
        monkeypatch.setattr(tokenize_memo, "WORD_MEMO_BYTES", limit)
        tokenizer = Tokenizer(models["sample"], EXTRA_IDS)
        for i in range(60):
            once = " ".join(f"w{i}x{j}" for j in range(8))
            texts = [f"The board heard that the court {once} agreed. It said {once} again."]
            assert tokenizer.encode(texts) == _plain(models["sample"], texts)
        assert tokenizer.memo.held[1] <= limit
        return tokenizer.memo.stats.new_words, tokenizer.memo.stats.words

    unbounded, words = new_words(1 << 30)
    assert new_words(10_000) == (unbounded, words) and unbounded < words / 2


def test_the_short_text_memo_keeps_recent_texts_within_its_bound(models, monkeypatch):
    """Short texts (labels, questions) are memoized whatever the number seen before: a memo
    over its bound keeps its most recently used half, so recent texts are still found."""
    monkeypatch.setattr(tokenizer_module, "TEXT_MEMO_BYTES", 3_000)
    tokenizer = Tokenizer(models["sample"], EXTRA_IDS)
    texts = [f"Is claim {i} true?" for i in range(400)]
    for i in range(0, len(texts), 5):  # 5 texts: about 1,100 bytes, under half the bound
        batch = texts[i:i + 5]
        assert tokenizer.encode(batch) == _plain(models["sample"], batch)
        memo = tokenizer._texts
        assert memo.bytes <= 3_000
        assert memo.bytes == sum(len(text) + len(entry.varints) + 200
                                 for text, entry in memo.items())
        assert set(batch) <= memo.keys()  # the newest, even after hundreds of texts


def _edited(edit) -> model_pb2.ModelProto:
    proto = model_pb2.ModelProto.FromString(SAMPLE_VOCAB.read_bytes())
    edit(proto)
    return proto


@pytest.mark.parametrize(("edit", "reason"), [
    (lambda p: setattr(p.trainer_spec, "treat_whitespace_as_suffix", True),
     "treat_whitespace_as_suffix is true"),
    (lambda p: setattr(p.normalizer_spec, "escape_whitespaces", False),
     "escape_whitespaces is false"),
    (lambda p: setattr(p.trainer_spec, "model_type", model_pb2.TrainerSpec.WORD),
     "a WORD model"),
    (lambda p: p.pieces.add(piece="New▁York", score=-5.0), "piece 'New▁York' has ▁ inside"),
    (lambda p: setattr(next(x for x in p.pieces if x.piece == "▁"), "type",
                       model_pb2.ModelProto.SentencePiece.UNUSED), "▁ is not a piece"),
    (lambda p: setattr(p.pieces[5], "score", 1.0), "positive scores"),
])
def test_refusals_name_their_reason(edit, reason):
    assert word_split_refusal(_edited(lambda p: None)) is None
    assert reason in word_split_refusal(_edited(edit))


def test_a_refused_model_is_logged_once(caplog):
    model = _edited(lambda p: setattr(p.trainer_spec, "model_type", model_pb2.TrainerSpec.CHAR))
    texts = ["Once upon a time.", " ", "ﬁne <extra_id_3>"]
    with caplog.at_level(logging.INFO, logger="p3data.tokenize"):
        first, second = (Tokenizer(model.SerializeToString(), EXTRA_IDS) for _ in range(2))
    assert first.memo is None and second.memo is None
    assert [r.getMessage() for r in caplog.records if "plain encoding" in r.getMessage()] == [
        f"SentencePiece model {first.model_sha256[:12]}…: plain encoding, not word by word "
        "(a CHAR model (only UNIGRAM and BPE are known))"]
    assert second.encode(texts) == _plain(model.SerializeToString(), texts)


def test_sentences_split_after_periods_and_join_back():
    text = "▁One.▁Two▁and.▁Three...▁end."
    assert tokenize_memo._sentences(text) == ["▁One.", "▁Two▁and.", "▁Three...", "▁end."]
    assert tokenize_memo._sentences("x\0.▁y") == ["x\0.▁y"]
    assert all("".join(tokenize_memo._sentences(t)) == t for t in ["", ".▁", "a.▁.▁b", "▁a.▁"])
