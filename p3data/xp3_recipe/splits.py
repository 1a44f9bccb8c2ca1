"""Which splits of a config xP3 renders, and which (prompt folder, split, template)s it skips.

The train pass uses every split but `validation` (kept when it is the only one) and wiki_lingua's
`sampled_*`: `test` splits train too, hence the skips of tests whose labels are hidden. A second
pass renders `validation` alone, for configs that have it beside other splits.
"""

from __future__ import annotations

from collections.abc import Sequence

ALL = "all"

# keyed by prompt folder, then split: template names, or ALL
SKIP_PROMPTS: dict[str, dict[str, tuple[str, ...]]] = {
    **{folder: {"test": (ALL,)}
       for folder in ("common_gen", "piqa", "qasc", "glue/qqp", "clue/tnews", "clue/csl")},
    "imdb": {"unsupervised": (ALL,)},
    "cosmos_qa": {"test": (
        "description_context_question_answer_text", "description_context_question_text",
        "description_context_question_answer_id", "context_answer_to_question",
        "context_description_question_answer_text", "context_description_question_answer_id",
        "context_question_description_answer_id", "context_description_question_text",
        "context_question_description_answer_text", "only_question_answer", "no_prompt_id",
        "context_question_description_text", "no_prompt_text",
    )},
    **{folder: {"test": ("generate_question", "in_an_exam", "answer_in_the_passage",
                         "answer_following_question", "xp3longcontinue")}
       for folder in ("clue/cmrc2018", "clue/drcd")},
    # used only when xP3all adds hellaswag
    "hellaswag": {"test": (
        "complete_first_then", "Topic of the context", "Open-ended completion",
        "Randomized prompts template", "Appropriate continuation - Yes or No",
        "Predict ending with hint", "Open-ended start",
        "Reversed appropriate continuation - Yes or No", "how_ends", "if_begins_how_continues",
    )},
}


def _usable(dataset: str, config: str | None, splits: Sequence[str]) -> list[str]:
    if config == "xlwic_en_zh":  # its train split is English; validation and test are Chinese
        return [split for split in splits if split != "train"]
    if dataset == "teven/code_docstring_corpus":  # poor quality
        return [split for split in splits if split != "class_level"]
    return list(splits)


def train_splits(dataset: str, config: str | None, splits: Sequence[str]) -> list[str]:
    """The splits of the train pass, from the config's `splits` in their order."""
    usable = _usable(dataset, config, splits)
    if len(usable) > 1 and "validation" in usable:
        usable.remove("validation")
    return [split for split in usable if split not in ("sampled_validation", "sampled_test")]


def validation_splits(dataset: str, config: str | None, splits: Sequence[str]) -> list[str]:
    """The validation pass: `validation` alone, if there are other splits beside it."""
    usable = _usable(dataset, config, splits)
    return ["validation"] if "validation" in usable and len(usable) > 1 else []


def skipped(folder: str, split: str, template: str) -> bool:
    """Whether the recipe skips `template` of prompt `folder` on `split`."""
    names = SKIP_PROMPTS.get(folder, {}).get(split, ())
    return ALL in names or template in names
