"""The shapes an export writes its rows in (`p3data export --shape`), registered in one place.

- `p3`: P3's columns as the cache holds them (token ids, texts, answer choices, the twins'
  columns): the default, byte for byte what p3data export always wrote.
- `prompt-completion`: TRL's standard prompt-completion rows, `prompt` = the cache's
  `inputs_pretokenized` and `completion` = its `targets_pretokenized`, exactly as they are (no
  separator added: T0's targets begin with no space, and TRL joins `prompt + completion` as
  they are; adding one is the user's choice, made in the open).
- `messages`: TRL's conversational rows, one user turn (the inputs text) and one assistant turn
  (the targets text).

Both SFT shapes carry a `provenance` struct on every row (`export.provenance`) and are written
in source order. Score-eval twins (one example per answer choice, wrong ones included) are not
SFT data: the SFT shapes leave them out (`export.selection`).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from p3data.export.provenance import arrow_type, card_feature, with_provenance
from p3data.format.features import INPUTS_TEXT, TARGETS_TEXT

if TYPE_CHECKING:
    import pyarrow as pa

    from p3data.format.manifest import Manifest
    from p3data.read import TaskSplit

P3 = "p3"


@dataclass(frozen=True)
class ExportShape:
    name: str
    about: str  # the card's sentence on the columns
    # The text columns' Arrow types and card features; None: the cache's own features (`p3`).
    columns: Callable[[], list[tuple[str, pa.DataType]]] | None = None
    card_features: tuple[dict[str, Any], ...] = ()
    text: Callable[[str, str], dict[str, Any]] | None = None  # (inputs, targets) -> columns

    @property
    def sft(self) -> bool:
        return self.columns is not None

    def arrow_schema(self) -> pa.Schema:
        """An SFT shape's columns: its text columns, then `provenance`."""
        import pyarrow as pa

        assert self.columns is not None
        return pa.schema([*self.columns(), ("provenance", arrow_type())])

    def rows(self, ts: TaskSplit, manifest: Manifest | None) -> Iterator[Mapping[str, Any]]:
        """A split's rows in this shape: the cache's examples as they are for `p3`; for an
        SFT shape, its columns of each example's texts, and where the example came from."""
        if self.text is None:
            yield from ts.examples()
            return
        for example, about in with_provenance(ts, manifest):
            yield {**self.text(example[INPUTS_TEXT], example[TARGETS_TEXT]),
                   "provenance": about}

    def all_card_features(self) -> list[dict[str, Any]]:
        """A fresh copy each time: YAML writes an object met twice as an alias."""
        return copy.deepcopy([*self.card_features, card_feature()])


def _strings(*names: str) -> Callable[[], list[tuple[str, pa.DataType]]]:
    def columns() -> list[tuple[str, pa.DataType]]:
        import pyarrow as pa

        return [(name, pa.string()) for name in names]
    return columns


def _turns() -> list[tuple[str, pa.DataType]]:
    import pyarrow as pa

    return [("messages", pa.list_(pa.struct([("role", pa.string()), ("content", pa.string())])))]


EXPORT_SHAPES: dict[str, ExportShape] = {s.name: s for s in (
    ExportShape(P3, "`inputs` and `targets` are token ids (`targets` ends with EOS), "
                "`inputs_pretokenized` and `targets_pretokenized` their texts; tasks whose "
                "template has answer choices add `answer_choices`, the `_score_eval` twins "
                "`idx`, `is_correct` and `weight`."),
    ExportShape(
        "prompt-completion",
        "TRL's standard prompt-completion rows: `prompt` is the cache's "
        "`inputs_pretokenized`, `completion` its `targets_pretokenized`, exactly as the cache "
        "holds them: no separator is added between them (T0's targets begin with none, and "
        "TRL's `SFTTrainer` tokenizes `prompt + completion` as they are, adds EOS, and by "
        "default computes the loss on the completion only).",
        columns=_strings("prompt", "completion"),
        card_features=({"name": "prompt", "dtype": "string"},
                       {"name": "completion", "dtype": "string"}),
        text=lambda inputs, targets: {"prompt": inputs, "completion": targets}),
    ExportShape(
        "messages",
        "TRL's conversational rows: `messages` is a user turn holding the cache's "
        "`inputs_pretokenized` and an assistant turn holding its `targets_pretokenized`, "
        "exactly as the cache holds them (`SFTTrainer` applies the tokenizer's chat "
        "template).",
        columns=_turns,
        card_features=({"name": "messages", "list": [{"name": "role", "dtype": "string"},
                                                     {"name": "content", "dtype": "string"}]},),
        text=lambda inputs, targets: {"messages": [{"role": "user", "content": inputs},
                                                   {"role": "assistant", "content": targets}]}),
)}


def export_shape(name: str) -> ExportShape:
    return EXPORT_SHAPES[name]
