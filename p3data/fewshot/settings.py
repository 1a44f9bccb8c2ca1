"""How few-shot variants are made: shot counts, separators, input length, rate split, seed.

One validated object, `FewshotSettings`, so that a bad value is one line naming the value and
its setting (`P3DataError.setting`) when the settings are made, before any row is read.
Defaults are FLAN v2's pattern (exemplar `input + "\\n\\n" + target`, exemplars and query joined
by `"\\n\\n\\n"`) at T0's input length (1,024 tokens), with a training rate split of half to the
zero-shot variant and the rest evenly over the others, as FLAN mixes zero- and few-shot.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields

from p3data.errors import P3DataError

DEFAULT_SHOTS = (0, 1, 3, 5)
MAX_SHOTS = 32  # a bound that catches typos (50 for 5); FLAN v2 shows at most 10
DEFAULT_EXEMPLAR_SEPARATOR = "\n\n"  # between an exemplar's input and its target
DEFAULT_EXAMPLE_SEPARATOR = "\n\n\n"  # between exemplars, and between the last one and the query
DEFAULT_INPUT_LENGTH = 1024  # T0's inputs feature length
# Below this a prompt has no room for its template's own words and answer choices: with every
# catalog text field emptied (passages and questions alike), T0's prompts of the bundled samples
# are 19 tokens at the median and 98.4% at most 64 (sample vocabulary; the longest, 139, is
# ReCoRD's continuation choices). A query still over the length is kept whole and counted
# (`FewshotStats.unfit`), never dropped.
MIN_INPUT_LENGTH = 64
ZERO_SHOT_SHARE = 0.5
_RATIO_TOLERANCE = 1e-9
LABEL_PATTERN = r"[A-Za-z0-9][A-Za-z0-9_.]*"  # a variant label: `T_<k>shot_<label>`
_LABEL = re.compile(LABEL_PATTERN)

# The `setting` of each error: what a front end names (a command line option, a field).
SHOTS, RATIO, EXEMPLAR_SEPARATOR, EXAMPLE_SEPARATOR = (
    "shots", "shot_ratio", "exemplar_separator", "example_separator")
INPUT_LENGTH, SEED, LABEL = "input_length", "seed", "variant_label"

# What decides the bytes of a variant's prompts, field by field (`prompt_record`): the
# separators make its exemplar pool's texts and costs too (`pool_record`); the input length and
# the seed make its fitting and draws. Every other field decides no byte, for the reason given;
# a new field goes in one or the other (tests/test_fewshot_settings.py checks).
POOL_SETTINGS = (EXEMPLAR_SEPARATOR, EXAMPLE_SEPARATOR)
PROMPT_SETTINGS = (*POOL_SETTINGS, INPUT_LENGTH, SEED)
NOT_IN_PROMPTS = {
    "shots": "which variants there are: a k-shot prompt's exemplars are the first k of a larger "
             "count's (`select`), whatever the other counts",
    "ratio": "the variants' shares of a mixture's rate",
    "label": "the variants' task names",
}


def default_ratio(shots: Sequence[int]) -> dict[int, float]:
    """Half of a task's rate to its zero-shot variant (if there is one), the rest evenly over
    the other shot counts."""
    others = [k for k in shots if k != 0]
    if 0 not in shots:
        return {k: 1 / len(others) for k in others}
    if not others:
        return {0: 1.0}
    return {0: ZERO_SHOT_SHARE, **{k: (1 - ZERO_SHOT_SHARE) / len(others) for k in others}}


@dataclass(frozen=True)
class FewshotSettings:
    """Validated settings of a family of few-shot variants.

    `ratio` maps each shot count to its share of a training task's rate (None: `default_ratio`).
    `label` tells apart the tasks of settings whose prompts differ from the defaults
    (separators, input length, seed): they are named `T_<k>shot_<label>`, never `T_<k>shot`.
    """

    shots: tuple[int, ...] = DEFAULT_SHOTS
    ratio: Mapping[int, float] | None = field(default=None, hash=False)
    exemplar_separator: str = DEFAULT_EXEMPLAR_SEPARATOR
    example_separator: str = DEFAULT_EXAMPLE_SEPARATOR
    input_length: int = DEFAULT_INPUT_LENGTH
    seed: int = 0
    label: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "shots", _checked_shots(self.shots))
        ratio = default_ratio(self.shots) if self.ratio is None else self.ratio
        object.__setattr__(self, "ratio", _checked_ratio(ratio, self.shots))
        for name in (EXEMPLAR_SEPARATOR, EXAMPLE_SEPARATOR):
            value = getattr(self, name)
            if not isinstance(value, str) or not value:
                raise P3DataError(f"{name}={value!r}: a separator must be non-empty text",
                                  setting=name)
        _check_whole(INPUT_LENGTH, self.input_length, MIN_INPUT_LENGTH,
                     "too small for any query's instruction, question and answer choices")
        _check_whole(SEED, self.seed, 0, "a seed is a whole number from 0")
        self._check_label()

    def _check_label(self) -> None:
        if self.label and (not isinstance(self.label, str) or not _LABEL.fullmatch(self.label)):
            raise P3DataError(f"{LABEL}={self.label!r}: a label is letters, digits, '_' and '.'"
                              " (it ends task names)", setting=LABEL)
        changed = self.prompt_changes()
        if changed and not self.label:
            raise P3DataError(f"{LABEL}='': the settings change prompts ({', '.join(changed)}),"
                              " so their tasks need a label to be told apart from the defaults'",
                              setting=LABEL)

    def prompt_changes(self) -> list[str]:
        """The settings that make prompts differ from the default variants', as `name=value`."""
        defaults = {setting.name: setting.default for setting in fields(FewshotSettings)}
        return [f"{name}={value!r}" for name, value in self.prompt_record().items()
                if value != defaults[name]]

    def prompt_record(self) -> dict[str, object]:
        """Every setting that decides a variant's prompt bytes, by name: what a variant's
        fingerprint and manifest record (`VariantSpec.prompt_record`), and what tells its
        prompts from the defaults' (`prompt_changes`)."""
        return {name: getattr(self, name) for name in PROMPT_SETTINGS}

    def pool_record(self) -> dict[str, object]:
        """The settings that decide an exemplar pool's bytes (its texts and costs)."""
        return {name: getattr(self, name) for name in POOL_SETTINGS}

    def share(self, shots: int) -> float:
        """The share of a training task's rate that goes to its `shots`-shot variant."""
        assert self.ratio is not None  # set by __post_init__
        return self.ratio[shots]

    @property
    def max_shots(self) -> int:
        return max(self.shots)


def _is_whole(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_whole(setting: str, value: object, least: int, why: str) -> None:
    if not _is_whole(value) or value < least:
        raise P3DataError(f"{setting}={value!r}: {why} (at least {least})", setting=setting)


def _checked_shots(shots: object) -> tuple[int, ...]:
    if isinstance(shots, (str, bytes)) or not isinstance(shots, Sequence) or not shots:
        raise P3DataError(f"{SHOTS}={shots!r}: give a list of shot counts, e.g. (0, 1, 3, 5)",
                          setting=SHOTS)
    for k in shots:
        if not _is_whole(k) or not 0 <= k <= MAX_SHOTS:
            raise P3DataError(f"{SHOTS}: unknown shot count {k!r} (a whole number from 0 to "
                              f"{MAX_SHOTS})", setting=SHOTS)
    if len(set(shots)) != len(shots):
        raise P3DataError(f"{SHOTS}={tuple(shots)!r}: a shot count is listed twice",
                          setting=SHOTS)
    return tuple(sorted(shots))


def _checked_ratio(ratio: object, shots: tuple[int, ...]) -> dict[int, float]:
    if not isinstance(ratio, Mapping):
        raise P3DataError(f"{RATIO}={ratio!r}: give a share per shot count, e.g. {{0: 0.5, ...}}",
                          setting=RATIO)
    if set(ratio) != set(shots):
        raise P3DataError(f"{RATIO}={dict(ratio)!r}: needs a share for each shot count of "
                          f"{shots} and no other", setting=RATIO)
    for k, share in ratio.items():
        if (not isinstance(share, (int, float)) or isinstance(share, bool)
                or not math.isfinite(share) or share < 0):
            raise P3DataError(f"{RATIO}: share {share!r} of {k} shots is not a number from 0",
                              setting=RATIO)
    total = sum(ratio.values())
    if abs(total - 1) > _RATIO_TOLERANCE:
        raise P3DataError(f"{RATIO}={dict(ratio)!r}: the shares sum to {total:g}, not 1",
                          setting=RATIO)
    return {k: float(ratio[k]) for k in shots}
