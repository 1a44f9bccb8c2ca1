"""T0's features, in one table: the seqio output features, the `info.<split>.json` features,
the sources' TF signatures, the encoders' names and `p3data show` all derive from it.

Three kinds of task carry them: a plain prompted task (`inputs`, `targets` and their texts),
one whose template has answer choices its row rule keeps (plus `answer_choices`: T0's rule
keeps them, xP3's never does, `carries_choices`), and a `_score_eval` twin
(one example per answer choice: plus `idx`, `is_correct`, `weight`, no `answer_choices`).
A few-shot variant of any of them (`p3data.fewshot`) adds `num_shots` and `exemplar_rows`,
so anyone can audit which exemplars it shows; T0's own tasks never carry them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from p3data.templates import Template
    from p3data.templates.render import RowRule

INPUTS, TARGETS = "inputs", "targets"
INPUTS_TEXT, TARGETS_TEXT = "inputs_pretokenized", "targets_pretokenized"
ANSWER_CHOICES = "answer_choices"
IDX, IS_CORRECT, WEIGHT = "idx", "is_correct", "weight"
NUM_SHOTS, EXEMPLAR_ROWS = "num_shots", "exemplar_rows"


@dataclass(frozen=True)
class Feature:
    name: str
    dtype: str  # TensorFlow's dtype name, as info.<split>.json writes it
    sequence: bool  # shape [None] (a list) rather than [] (one value)
    meaning: str
    add_eos: bool | None = None  # token features: whether seqio appends EOS (T0: targets only)
    text: str | None = None  # token features: the text feature they are the ids of

    @property
    def shape(self) -> list[int | None]:
        return [None] if self.sequence else []

    @property
    def info(self) -> dict:
        """This feature's entry in `info.<split>.json`."""
        return {"dtype": self.dtype, "shape": self.shape}


FEATURES = {feature.name: feature for feature in (
    Feature(INPUTS, "int32", True, "prompt token ids, no EOS", add_eos=False, text=INPUTS_TEXT),
    Feature(TARGETS, "int32", True, "token ids + EOS", add_eos=True, text=TARGETS_TEXT),
    Feature(INPUTS_TEXT, "string", False, "the rendered prompt"),
    Feature(TARGETS_TEXT, "string", False, "the rendered target"),
    Feature(ANSWER_CHOICES, "string", True, "the template's answer choices for the row"),
    Feature(IDX, "int32", True, "[example, choice]"),
    Feature(IS_CORRECT, "bool", False, "the choice is the target"),
    Feature(WEIGHT, "float32", False, "1.0"),
    Feature(NUM_SHOTS, "int32", False, "few-shot variants: how many exemplars the prompt shows"),
    Feature(EXEMPLAR_ROWS, "int64", True,
            "few-shot variants: the exemplars' row numbers in their split, in prompt order"),
)}
FEWSHOT_FEATURES = (NUM_SHOTS, EXEMPLAR_ROWS)
TOKEN_FEATURES = {name: f for name, f in FEATURES.items() if f.add_eos is not None}


def carries_choices(template: Template, rule: RowRule) -> bool:
    """Whether a task's examples carry `answer_choices`: its template has some and its row
    rule keeps them."""
    return template.answer_choices is not None and rule.keeps_choices


def task_features(*, score_eval: bool, with_choices: bool,
                  fewshot: bool = False) -> dict[str, Feature]:
    """The features a task's cached examples carry, in the table's order (`fewshot`: a
    few-shot variant's)."""
    names = [INPUTS, TARGETS, INPUTS_TEXT, TARGETS_TEXT]
    if score_eval:
        names += [IDX, IS_CORRECT, WEIGHT]
    elif with_choices:
        names.append(ANSWER_CHOICES)
    if fewshot:
        names += FEWSHOT_FEATURES
    return {name: FEATURES[name] for name in FEATURES if name in names}


def source_features(*, with_choices: bool, fewshot: bool = False) -> dict[str, Feature]:
    """What a prompted source yields before tokenizing: the token features' texts (under the
    token features' names, as seqio's `tokenize` expects), the answer choices, and a few-shot
    variant's audit features."""
    features = {name: FEATURES[f.text] for name, f in TOKEN_FEATURES.items()}
    names = [*([ANSWER_CHOICES] if with_choices else []), *(FEWSHOT_FEATURES if fewshot else ())]
    return {**features, **{name: FEATURES[name] for name in names}}
