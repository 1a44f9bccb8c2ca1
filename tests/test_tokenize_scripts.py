"""p3data's tokenizer gives exactly SentencePiece's ids on every script xP3 has, with models
shaped as mT5's: extra ids inside the model (none added), ids past 65,535, and with or
without byte fallback. Text written without spaces (Chinese, Japanese, Thai) is one long word
per run, cut by the word memo only where the model forces a piece boundary (`forced_cuts`):
runs of hundreds of sentences too, alone and inside prompts, and adversarial marks."""

from __future__ import annotations

import io
import random

import pytest
import sentencepiece as spm
from helpers.scripts import MT5_PIECES, UNSPACED, mt5_sized, script_sentences
from sentencepiece import sentencepiece_model_pb2 as model_pb2

from p3data.tokenize import Tokenizer
from p3data.tokenize.checks import PIECE, forced_cuts
from p3data.tokenize.raw_text import RawCuts
from p3data.tokenize.tokenizer import with_extra_ids
from p3data.varints import packed
from p3data.vocab import MT5, train_vocabulary

SENTENCES = script_sentences()
PROMPTS = ["Translate to English: {}", "{}\nSummarize the text above.", "Text: {} Answer:",
           "{} Is this a question? Yes or no?"]


def test_every_script_xp3_writes_in_is_here():
    assert set(SENTENCES) == {"latin", "cyrillic", "arabic", "devanagari", "bengali", "tamil",
                              "chinese", "japanese", "thai", "korean", "code"}
    assert all(len(lines) >= 6 for lines in SENTENCES.values())


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> dict[str, bytes]:
    """Multilingual unigram models trained on every script's sentences, as `p3data vocab`
    trains xP3's (its 100 extra ids inside), one of them grown to mT5's size, and one with
    byte fallback (unknown characters as bytes)."""
    lines = [line for script in SENTENCES.values() for line in script]
    path = train_vocabulary(lines, tmp_path_factory.mktemp("vocab") / "scripts.model",
                            vocab_size=3000, extra_ids=100)
    fallback = io.BytesIO()
    spm.set_random_generator_seed(0)
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(lines), model_writer=fallback, vocab_size=3000,
        model_type="unigram", character_coverage=1.0, pad_id=0, eos_id=1, unk_id=2,
        bos_id=-1, byte_fallback=True, hard_vocab_limit=False, minloglevel=2, num_threads=1)
    trained = path.read_bytes()
    return {"trained": trained, "mt5_sized": mt5_sized(trained),
            "byte_fallback": with_extra_ids(fallback.getvalue(), 100)}


@pytest.fixture(scope="module")
def loaded(models) -> dict[str, tuple[spm.SentencePieceProcessor, Tokenizer]]:
    """Each model's SentencePiece processor and p3data tokenizer, loaded once (mT5's size takes
    seconds): one tokenizer goes through every script, as a build worker keeps one across
    tasks, its word memo holding the scripts before."""
    return {name: (spm.SentencePieceProcessor(model_proto=model), Tokenizer(model, MT5.extra_ids))
            for name, model in models.items()}


def script_texts(script: str, seed: int = 0) -> list[str]:
    """Its sentences, paragraphs of them (joined by nothing where the script has no spaces),
    one run of 300 sentences, and each of those inside English prompts; code also with its
    lines joined by newlines and tabs."""
    rng = random.Random(seed)
    lines = SENTENCES[script]
    joiner = "" if script in UNSPACED else " "
    paragraphs = [joiner.join(rng.choices(lines, k=rng.randint(2, 12))) for _ in range(60)]
    texts = [*lines, *paragraphs, joiner.join(rng.choices(lines, k=300))]
    if script == "code":
        texts += ["\n".join(lines), "\n\t".join(lines)]
    return texts + [prompt.format(text) for text in texts for prompt in PROMPTS]


@pytest.mark.parametrize("model_name", ["trained", "mt5_sized", "byte_fallback"])
@pytest.mark.parametrize("script", sorted(SENTENCES))
def test_ids_are_sentencepieces_on_every_script(loaded, model_name, script):
    processor, tokenizer = loaded[model_name]
    texts = script_texts(script)
    want = processor.encode(texts, num_threads=1)
    assert tokenizer.memo is not None  # the word memo's path, not plain encoding throughout
    for start in range(0, len(texts), 50):  # batches, as the cache builder tokenizes
        batch = texts[start:start + 50]
        assert tokenizer.encode(batch) == want[start:start + 50]
    packed_ids = [entry.varints for entry in tokenizer.encode_packed(texts)]  # from the memos
    assert packed_ids == [packed(ids) for ids in want]  # what the cache writes


def test_mt5_sized_ids_pass_65535_and_are_packed_as_protobuf_does(models):
    """Ids above 65,535 (three varint bytes) are packed by a wider table: the same bytes."""
    processor = spm.SentencePieceProcessor(model_proto=models["mt5_sized"])
    assert processor.get_piece_size() == MT5_PIECES
    ids = [i for ids in processor.encode(script_texts("thai"), num_threads=1) for i in ids]
    assert max(ids) > 1 << 16
    values = [0, 1, 127, 128, 16383, 16384, 65535, 65536, MT5_PIECES - 1, (1 << 21) - 1,
              1 << 21, (1 << 28) - 1, 1 << 28, 1 << 40]
    for chosen in (ids[:300], values, values[:-2] * 3):
        assert packed(chosen) == b"".join(_varint(value) for value in chosen)


def _varint(value: int) -> bytes:
    """Protobuf's varint, written out here as the reference."""
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    return bytes([*out, value])


# Cut points to try: punctuation runs, marks a piece may continue, NFKC forms of marks
# (fullwidth, halfwidth), mixed scripts and spaces around marks, all inside words over
# `raw_text.UNSPACED_MIN_CHARS`.
ADVERSARIAL = ["。。。", "。」", "「", "」。", "！？", "!!!", "?!", "｡", "，", "、、", "…", "‥",
               "...", ",", "。1", "。a", "(", ")", "\"", "'", "。 ", " 。", "\u3000", "。\u3000",
               "_", "-", "—", "،", "।", "۔", "x", "1", "ภาษา", "한국", "مرحبا", "中文"]


def adversarial_texts(seed: int = 1) -> list[str]:
    """Unspaced sentences with adversarial pieces put between and inside them."""
    rng = random.Random(seed)
    lines = SENTENCES["chinese"] + SENTENCES["japanese"] + SENTENCES["thai"]
    texts = []
    for _ in range(400):
        parts = rng.choices(lines, k=rng.randint(1, 6))
        for _ in range(rng.randint(1, 6)):
            at = rng.randint(0, len(parts))
            parts.insert(at, "".join(rng.choices(ADVERSARIAL, k=rng.randint(1, 4))))
        texts.append("".join(parts))
    return texts + [prompt.format(text) for text in texts[:100] for prompt in PROMPTS]


def _with_pieces_across_marks(model: bytes) -> bytes:
    """The model with pieces that continue past a mark ("。我", user-defined "」。")."""
    proto = model_pb2.ModelProto.FromString(model)
    proto.pieces.add(piece="。我", score=-2.0)
    proto.pieces.add(piece="」。", score=0.0, type=model_pb2.ModelProto.SentencePiece.USER_DEFINED)
    return proto.SerializeToString()


@pytest.mark.parametrize("model_name", ["trained", "mt5_sized", "byte_fallback", "across"])
def test_forced_cuts_are_where_no_piece_spans_and_keep_sentencepieces_ids(models, model_name):
    """Every point `forced_cuts` cuts a normalized word at is spanned by no piece of the model
    (checked against every piece that could cover it), and texts cut there get exactly
    SentencePiece's ids."""
    model = (_with_pieces_across_marks(models["trained"]) if model_name == "across"
             else models[model_name])
    proto = model_pb2.ModelProto.FromString(model)
    matchable = {p.piece for p in proto.pieces if p.type != PIECE.CONTROL
                 and p.type != PIECE.UNKNOWN and p.type != PIECE.BYTE}
    longest = max(map(len, matchable))
    cuts = forced_cuts(proto)
    across = model_name == "across"  # there, "。" may be followed by "我" in a piece
    assert cuts.findall("我。我。") == (["我。我。", ""] if across else ["我。", "我。", ""])
    processor = spm.SentencePieceProcessor(model_proto=model)
    texts = adversarial_texts() + script_texts("chinese") + script_texts("japanese")
    points = 0
    for text in processor.normalize(texts):
        for point in (match.end() for match in cuts.finditer(text)):
            points += 0 < point < len(text)
            assert not any(text[start:end] in matchable
                           for start in range(max(0, point - longest), point)
                           for end in range(point + 1, min(len(text), start + longest) + 1))
    assert points > len(texts)
    tokenizer = Tokenizer(model, MT5.extra_ids)
    want = processor.encode(texts, num_threads=1)
    assert [ids for start in range(0, len(texts), 50)
            for ids in tokenizer.encode(texts[start:start + 50])] == want


def test_unspaced_paragraphs_are_segmented_sentence_by_sentence(loaded):
    """A paragraph written without spaces is one word; cut raw after its "。" (no piece
    continues past it), the memo looks its run of sentences up whole and segments each sentence
    once, whichever paragraph it comes in (ids as SentencePiece's)."""
    processor, tokenizer = loaded["mt5_sized"]
    rng = random.Random(3)
    lines = SENTENCES["chinese"]
    paragraphs = ["".join(rng.sample(lines, k=len(lines))) for _ in range(50)]
    assert "。" in tokenizer.memo.raw_cuts.marks
    stats = tokenizer.memo.stats
    pieces, new_sentences = stats.pieces, stats.new_sentences
    assert tokenizer.encode(paragraphs) == processor.encode(paragraphs, num_threads=1)
    assert stats.pieces - pieces == 3 * len(paragraphs)  # first sentence, run, rest
    # each sentence segmented once at a paragraph's start, once after a "。"
    assert stats.new_sentences - new_sentences <= 2 * len(lines)


def test_raw_text_is_cut_after_a_mark_only_where_no_piece_rule_or_user_piece_holds_it(
        models, tmp_path):
    """Raw text is cut after "。" where the model allows (`raw_cut_marks`), not where a piece
    continues past it ("。我"), a user-defined piece holds it ("」。") or a normalization rule
    reads it ("。。" made "。"): there, cutting gives other ids than SentencePiece's."""
    def marks(model: bytes) -> str:
        return Tokenizer(model, MT5.extra_ids).memo.raw_cuts.marks

    assert "。" in marks(models["trained"])
    assert "。" not in marks(_with_pieces_across_marks(models["trained"]))
    rules = tmp_path / "rules.tsv"
    rules.write_text("3002 3002\t3002\n")  # "。。" -> "。"
    lines = [line for script in SENTENCES.values() for line in script]
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(lines), model_writer=model, vocab_size=1500,
        model_type="unigram", character_coverage=1.0, normalization_rule_tsv=str(rules),
        hard_vocab_limit=False, minloglevel=2, num_threads=1)
    ruled = model.getvalue()
    assert "。" not in marks(ruled)
    texts = ["我们走吧。。好的。", "你好。。。谢谢。再见。。"]
    processor = spm.SentencePieceProcessor(model_proto=ruled)
    assert Tokenizer(ruled, MT5.extra_ids).encode(texts) == processor.encode(texts)
    forced = Tokenizer(ruled, MT5.extra_ids)
    forced.memo.raw_cuts = RawCuts("。", processor.normalize, ascii_sentences=False)
    assert forced.encode(texts) != processor.encode(texts)  # what cutting there would give


def test_raw_cuts_after_marks_and_sentence_ends_keep_sentencepieces_ids(loaded):
    """Texts of every script whose sentences meet at every kind of cut and near-cut (". ",
    "." and "。" without a space, marks at a text's ends, runs of marks, spaces and newlines
    after them), in batches whose texts share runs: SentencePiece's ids."""
    rng = random.Random(5)
    lines = [line for script in sorted(SENTENCES) for line in SENTENCES[script]]
    joints = [". ", ".", "。", "。 ", "! ", "!", "।", "। ", " ", "\n", "", "。。", ". . ", "\u3000"]
    texts = []
    for _ in range(300):
        parts = [line.rstrip(".。!।") for line in rng.choices(lines, k=rng.randint(1, 8))]
        text = "".join(part + rng.choice(joints) for part in parts)
        texts += [text, *(prompt.format(text) for prompt in rng.sample(PROMPTS, k=2))]
    for model_name in ("trained", "mt5_sized", "byte_fallback"):
        processor, tokenizer = loaded[model_name]
        assert set(".。!") & set(tokenizer.memo.raw_cuts.marks), model_name
        assert [ids for start in range(0, len(texts), 60)
                for ids in tokenizer.encode(texts[start:start + 60])] == processor.encode(
                    texts, num_threads=1), model_name


def test_a_first_sentence_without_spaces_is_shared_by_the_templates_around_it(loaded):
    """A Chinese row's text after a template's words and a space: its first sentence is cut
    from them (the model cuts after "。"), so each template finds it in the memo; ids are
    SentencePiece's."""
    processor, tokenizer = loaded["trained"]
    assert "。" in tokenizer.memo.raw_cuts.marks
    row = "".join(SENTENCES["chinese"][:4])
    first = row[:row.index("。") + 1]
    texts = [prompt.format(row) for prompt in ["Doc: {}", "Content: {}\\nSummary:", "{}"]]
    assert tokenizer.encode(texts) == processor.encode(texts)
    assert [tokenizer.memo.raw_cuts.pieces(text)[0] for text in texts] == ["Doc:", "Content:",
                                                                           first]


@pytest.mark.parametrize(("text", "keys"), [
    ("甲乙。丙丁。戊己", ["甲乙。", "\2\1。丙丁。", "\1。戊己"]),  # head, run, rest
    ("甲乙。丙丁。", ["甲乙。", "\1。丙丁。"]),  # the mark that ends the text is no cut
    ("甲乙。", ["甲乙。"]),
    ("。", ["。"]),
    ("。。", ["。", "\1。。"]),
    ("Hi. 甲乙。丙", ["Hi.", "\2甲乙。", "\1。丙"]),  # ". " and a mark, in either order
    ("甲。Hi. 乙", ["甲。", "\2\1。Hi.", "乙"]),
    ("甲乙。. ", ["甲乙。", "\2\1。.", ""]),  # ". " that ends the text is a cut
    ("甲 乙", ["甲 乙"]),
])
def test_raw_text_is_cut_at_the_first_and_last_mark(text, keys):
    """Where the marks and ". " cut raw text (one search each way for all of them)."""
    cuts = RawCuts("。।", lambda texts: texts, ascii_sentences=True)
    assert cuts.pieces(text) == keys
