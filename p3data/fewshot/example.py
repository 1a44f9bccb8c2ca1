"""A few-shot example's fields, and the one way exemplars and a query become a prompt.

The prompt is `ex_1 + SEP + ... + ex_k + SEP + query_input`, each exemplar `its_input +
"\\n\\n" + its_target` (FLAN v2's pattern, separators from the settings); targets and answer
choices are the query's. Every example says how many exemplars it shows (`num_shots`, int32)
and which rows of their split they are (`exemplar_rows`, int64), so anyone can audit them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from p3data.fewshot.settings import FewshotSettings
from p3data.format.features import EXEMPLAR_ROWS, FEATURES, NUM_SHOTS
from p3data.tokenize.tokenizer import Packed


def assemble(exemplars: Sequence[str], query: str, settings: FewshotSettings) -> str:
    """The prompt: the exemplars' texts, then the query's input, joined by the separator."""
    return settings.example_separator.join([*exemplars, query])


@dataclass(frozen=True, slots=True)
class FewshotExample:
    """One query's prompt at one shot count (`input_ids`: the prompt tokenized, ready to be
    written, so nothing tokenizes it twice)."""

    row: int  # the query's row number in its split
    inputs: str
    targets: str
    answer_choices: list[str] | None
    num_shots: int
    exemplar_rows: tuple[int, ...]
    input_ids: Packed

    def features(self) -> dict[str, Any]:
        """The example's text and audit fields, typed as the cache stores them."""
        fields: dict[str, Any] = {"inputs": self.inputs, "targets": self.targets}
        if self.answer_choices:
            fields["answer_choices"] = list(self.answer_choices)
        fields[NUM_SHOTS] = np.dtype(FEATURES[NUM_SHOTS].dtype).type(self.num_shots)
        fields[EXEMPLAR_ROWS] = np.array(self.exemplar_rows, dtype=FEATURES[EXEMPLAR_ROWS].dtype)
        return fields


@dataclass(frozen=True, slots=True)
class ChoiceExample:
    """A `_score_eval` variant's example: one answer choice of a prompt, scored as T0 did."""

    example: FewshotExample  # the prompt, with the query's targets and exemplars
    choice_index: int
    targets: str  # the choice
    is_correct: bool


def per_choice(example: FewshotExample) -> list[ChoiceExample]:
    """One example per answer choice, all with the same prompt and exemplars; `is_correct`
    is T0's rule (the choice is the gold target)."""
    return [ChoiceExample(example, j, choice, choice == example.targets)
            for j, choice in enumerate(example.answer_choices or ())]
