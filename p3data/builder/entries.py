"""Map entries of stage 1's records that repeat: labels, answer-choice lists and choices recur
across rows and templates, so each is encoded once per unit of work (`EntryEncoder`)."""

from __future__ import annotations

from p3data.format.example import encode_entries, packed_ids_entry, text_entry
from p3data.format.features import ANSWER_CHOICES, IS_CORRECT, TARGETS, TARGETS_TEXT, WEIGHT
from p3data.tokenize import Tokenizer
from p3data.tokenize.tokenizer import EOS_ID, MEMO_MAX_CHARS, Packed
from p3data.varints import varint

_EOS = varint(EOS_ID)


class EntryEncoder:
    """Map entries of one unit's examples. Labels, answer-choice lists and choices repeat
    across rows and templates, so their entries are encoded once per unit."""

    def __init__(self, tokenizer: Tokenizer):
        self.tokenizer = tokenizer
        self._targets: dict[str, tuple[bytes, int]] = {}
        self._choice_lists: dict[tuple[str, ...], bytes] = {}
        self._choices: dict[tuple[str, bool], tuple[bytes, bytes, int]] = {}

    def targets(self, text: str, ids: Packed) -> tuple[bytes, int]:
        """(targets_pretokenized + targets entries, token count), EOS appended."""
        if text in self._targets:
            return self._targets[text]
        result = (text_entry(TARGETS_TEXT, text) + packed_ids_entry(TARGETS, ids.varints + _EOS),
                  ids.tokens)
        if len(text) <= MEMO_MAX_CHARS:
            self._targets[text] = result
        return result

    def choice_list(self, choices: list[str]) -> bytes:
        key = tuple(choices)
        if key not in self._choice_lists:
            self._choice_lists[key] = encode_entries({ANSWER_CHOICES: choices})
        return self._choice_lists[key]

    def choice(self, choice: str, correct: bool, ids: Packed) -> tuple[bytes, bytes, int]:
        """A twin's is_correct entry; its targets_pretokenized, targets and weight entries
        (a few-shot variant's num_shots goes between the two); the choice's token count."""
        key = (choice, correct)
        if key not in self._choices:
            self._choices[key] = (
                encode_entries({IS_CORRECT: correct}),
                text_entry(TARGETS_TEXT, choice) + packed_ids_entry(TARGETS, ids.varints + _EOS)
                + encode_entries({WEIGHT: 1.0}),
                ids.tokens)
        return self._choices[key]
