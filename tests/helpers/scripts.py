"""Text in each script xP3 has, for the tokenizer's tests and benchmark: a few sentences per
script (`tests/data/scripts/<script>.txt`, one a line, written for these tests), and a model's
ids spread to mT5's range."""

from __future__ import annotations

from pathlib import Path

from sentencepiece import sentencepiece_model_pb2 as model_pb2

SCRIPTS_DIR = Path(__file__).resolve().parents[1] / "data" / "scripts"
UNSPACED = ("chinese", "japanese", "thai")  # written without spaces between words
MT5_PIECES = 250_100  # mT5's model: 250,000 pieces and its 100 extra ids
KEPT_LOW = 500  # pieces of a small model that keep their ids in `mt5_sized`


def script_sentences(folder: Path = SCRIPTS_DIR) -> dict[str, list[str]]:
    """Sentences by script (the file's name)."""
    return {path.stem: path.read_text(encoding="utf-8").splitlines()
            for path in sorted(folder.glob("*.txt"))}


def mt5_sized(model: bytes) -> bytes:
    """The model grown to mT5's size by filler pieces (private-use characters, which no test
    text holds, at its lowest score) after its `KEPT_LOW` most likely: its rarer pieces get ids
    above 65,535, as mT5's do, whose varints take three bytes."""
    proto = model_pb2.ModelProto.FromString(model)
    pieces = list(proto.pieces)
    lowest = min(p.score for p in pieces if p.type == model_pb2.ModelProto.SentencePiece.NORMAL)
    filler = [model_pb2.ModelProto.SentencePiece(piece=chr(0xF0000 + i // 60000) + str(i),
                                                  score=lowest)
              for i in range(MT5_PIECES - len(pieces))]
    del proto.pieces[:]
    proto.pieces.extend([*pieces[:KEPT_LOW], *filler, *pieces[KEPT_LOW:]])
    return proto.SerializeToString()
