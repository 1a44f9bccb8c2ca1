"""The text filters whose work grows faster than what they make: what one call makes, and the
work it takes, estimated before it runs.

The render budget counts steps and reads its clock between them, so one call that works for a
minute runs to its end before anything notices. Most filters work in C at well under a
microsecond per character, so the size limit bounds their time; these loop in Python a word
or a line at a time (`urlize`, `title`), or worse: `wordwrap` (textwrap) cuts a word longer
than the width, or a run of spaces opening its text, one line at a time, copying the rest each
time, quadratic in its length. Each call is charged its steps (about a microsecond each) up
front, and refused before it starts when they would pass the budget.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from p3data.templates.limits import printed, text_len

STEPS_PER_WRAPPED_LINE = 10  # Jinja wraps each line with a new TextWrapper, then each output line
CHARACTERS_COPIED_PER_STEP = 4096  # textwrap's copies of the rest of a word it cuts
URLIZE_STEPS_PER_CHARACTER = 8  # measured: about 6 microseconds a character
TITLE_CHARACTERS_PER_STEP = 2  # measured: about half a microsecond a character


def wrapped_size(  # noqa: PLR0917 - called with the arguments of Jinja's `wordwrap`
                 environment: Any, s: Any, width: int = 79, break_long_words: bool = True,
                 wrapstring: str | None = None, break_on_hyphens: bool = True) -> int:
    text = printed(s)
    lines = len(text) // max(width, 1) + text.count("\n") + 1
    return len(text) + lines * (1 if wrapstring is None else text_len(wrapstring))


def wrapping_steps(  # noqa: PLR0917 - called with the arguments of Jinja's `wordwrap`
                   environment: Any, s: Any, width: int = 79, break_long_words: bool = True,
                   wrapstring: str | None = None, break_on_hyphens: bool = True) -> int:
    """A line's worth of bookkeeping per output line and per line of the text; with long words
    broken, at worst the whole text copied once per output line."""
    text, width = printed(s), max(width, 1)
    lines = len(text) // width + text.count("\n") + 1
    steps = len(text) // 2 + STEPS_PER_WRAPPED_LINE * lines
    if break_long_words:
        steps += len(text) * (len(text) // width) // (2 * CHARACTERS_COPIED_PER_STEP)
    return steps


def urlized_size(  # noqa: PLR0917 - called with the arguments of Jinja's `urlize`
                 eval_ctx: Any, value: Any, trim_url_limit: int | None = None,
                 nofollow: bool = False, target: str | None = None, rel: str | None = None,
                 extra_schemes: Iterable[str] | None = None) -> int:
    size = text_len(value)  # every word may become a link: <a href="word" ...>word</a>
    return 10 * size + (size // 2 + 1) * (text_len(target or "") + text_len(rel or ""))


def urlizing_steps(eval_ctx: Any, value: Any, *args: Any, **kwargs: Any) -> int:
    return URLIZE_STEPS_PER_CHARACTER * text_len(value)


def title_steps(s: Any) -> int:
    return text_len(s) // TITLE_CHARACTERS_PER_STEP


# Filter name -> the steps one call takes, from the filter's arguments.
FILTER_STEPS: dict[str, Callable[..., int]] = {
    "wordwrap": wrapping_steps,
    "urlize": urlizing_steps,
    "title": title_steps,
}
