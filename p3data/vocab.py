"""Which SentencePiece model to tokenize with: the collection's unless told otherwise.

A collection's tasks name their `Vocabulary`: T0's are T5's (`T5`), xP3's mT5's (`MT5`), each
with the extra ids its trainer's seqio vocabulary had. `P3DATA_VOCAB` or `set_vocabulary()` may
name another model (e.g. the offline sample vocabulary) any time before tokenizing starts; the
extra ids stay the collection's. Free of seqio and TensorFlow, so the cache builder's driver and
workers stay light; the seqio vocabulary objects live in `p3data.registry`.
"""

from __future__ import annotations

import io
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from p3data.errors import P3DataError

T5_VOCAB = "gs://t5-data/vocabs/cc_all.32000/sentencepiece.model"
EXTRA_IDS = 100
# mT5's model holds its 100 extra ids itself (250,000 pieces + 100), so T5X's mT5 gin files
# (t5x/examples/t5/mt5/base.gin, which mT0 was finetuned with) bind no `extra_ids`: seqio's 0.
MT5_VOCAB = "gs://t5-data/vocabs/mc4.250000.100extra/sentencepiece.model"
ENV_VOCAB = "P3DATA_VOCAB"
# Trained by `p3data vocab` from the bundled samples: works offline, for tests and the demo.
SAMPLE_VOCAB = Path(__file__).parent / "data" / "vocab" / "sample.model"
# xP3's offline one (`p3data vocab --collection xp3`: mT5's shape), from every xP3 config's samples.
XP3_SAMPLE_VOCAB = SAMPLE_VOCAB.with_name("xp3-sample.model")


@dataclass(frozen=True)
class Vocabulary:
    """A collection's vocabulary: its default model, the extra ids seqio adds to it, and those
    the model holds itself (what `p3data vocab` puts in a sample model of this shape)."""

    name: str
    default: str
    extra_ids: int
    held_extra_ids: int

    def path(self) -> str:
        """The model to use: `set_vocabulary()`'s, else `P3DATA_VOCAB`, else the default."""
        return _chosen or os.environ.get(ENV_VOCAB) or self.default


T5 = Vocabulary("T5's", T5_VOCAB, extra_ids=EXTRA_IDS, held_extra_ids=0)  # T0's tasks
MT5 = Vocabulary("mT5's", MT5_VOCAB, extra_ids=0, held_extra_ids=100)  # xP3's tasks

_chosen: str | None = None


class VocabularyError(P3DataError):
    """The vocabulary model cannot be read."""


def set_vocabulary(path: str | Path | None) -> None:
    """Use this SentencePiece model (None: back to `P3DATA_VOCAB` or T5's)."""
    global _chosen
    _chosen = str(path) if path is not None else None


def vocabulary_path() -> str:
    """T0's model (`T5.path()`)."""
    return T5.path()


def read_vocabulary(path: str | None = None) -> bytes:
    """The SentencePiece model's bytes (local path or any filesystem Beam knows, e.g. gs://)."""
    from p3data import fs

    path = path or vocabulary_path()
    try:
        model = fs.read_bytes(path)
    except Exception as err:  # noqa: BLE001 - any filesystem's failure means the same here
        raise VocabularyError(
            f"cannot read the SentencePiece model {path!r} ({err}); set {ENV_VOCAB} or choose "
            f"another model (offline: {SAMPLE_VOCAB})", setting="vocab") from None
    _check_model(path, model)
    return model


def _check_model(path: str, model: bytes) -> None:
    """Load the model once here, so a wrong file is one clear error before any work starts
    (and the tokenizer, where it runs in this process, need not load it again)."""
    from p3data.tokenize.tokenizer import loaded

    try:
        loaded(model)
    except (RuntimeError, OSError, ValueError):
        raise VocabularyError(f"{path} is not a SentencePiece model (it does not parse as one);"
                              " choose a .model file", setting="vocab") from None



def train_vocabulary(texts: Iterable[str], model_path: str | Path, vocab_size: int = 8000, *,
                     extra_ids: int = 0) -> Path:
    """Train a T5-shaped SentencePiece model (pad 0, eos 1, unk 2, no bos) on `texts`;
    `extra_ids`: that many held in the model, as seqio would add them (mT5's shape, for
    collections whose vocabulary adds none: `MT5`).

    Lines are fed from memory and the model is written from memory, so no temporary path ends
    up inside the model: the same texts give the same model bytes.
    """
    import sentencepiece as spm

    from p3data.tokenize.tokenizer import with_extra_ids

    lines = (line.strip() for text in texts for line in text.splitlines() if line.strip())
    model = io.BytesIO()
    spm.set_random_generator_seed(0)
    spm.SentencePieceTrainer.train(
        sentence_iterator=lines, model_writer=model, vocab_size=vocab_size,
        model_type="unigram", character_coverage=1.0, pad_id=0, eos_id=1, unk_id=2, bos_id=-1,
        num_threads=1, shuffle_input_sentence=False, hard_vocab_limit=False, minloglevel=2,
    )
    model_path = Path(model_path)
    model_path.parent.mkdir(parents=True, exist_ok=True)
    model_path.write_bytes(with_extra_ids(model.getvalue(), extra_ids) if extra_ids
                          else model.getvalue())
    return model_path
