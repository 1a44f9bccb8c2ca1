"""What a filter, method or global call would make, and the work it takes, estimated from its
arguments before it runs: one call could otherwise allocate gigabytes, or work for a minute,
before the render limits (`p3data.templates.limits`) see it. The sandbox checks each estimate
against the render's budget before making the call.

Sizes: each estimate takes the arguments of the filter or method it guards and returns the size
of the value it would make.

Steps: the render budget counts steps and reads its clock between them, so one call that works
for a minute runs to its end before anything notices. Most filters work in C at well under a
microsecond per character, so the size limit bounds their time; these loop in Python a word
or a line at a time (`urlize`, `title`), or worse: `wordwrap` (textwrap) cuts a word longer
than the width, or a run of spaces opening its text, one line at a time, copying the rest each
time, quadratic in its length. Each call is charged its steps (about a microsecond each) up
front, and refused before it starts when they would pass the budget.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from jinja2 import Environment
from jinja2.nodes import EvalContext
from markupsafe import Markup

from p3data.templates.limits import printed, printf_size, size_of, text_len, text_size

# --- Filters: the size of what one call makes ------------------------------------------------


def _centered(value: Any, width: int = 80) -> int:
    return max(text_len(value), width)


def _indented(s: Any, width: int | str = 4, first: bool = False, blank: bool = False) -> int:
    text = printed(s)
    return len(text) + (text.count("\n") + 1) * (len(width) if isinstance(width, str) else width)


def _replaced(  # noqa: PLR0917 - called with the arguments of Jinja's `replace`
    eval_ctx: EvalContext, s: Any, old: Any, new: Any, count: int | None = None
) -> int:
    return _replace_size(printed(s), printed(old), printed(new), -1 if count is None else count)


def _replace_size(text: str | bytes, old: str | bytes, new: str | bytes, count: int = -1) -> int:
    if len(new) <= len(old):
        return len(text)
    found = text.count(old) if old else len(text) + 1
    if count >= 0:
        found = min(found, count)
    return len(text) + found * (len(new) - len(old))


def _joined(eval_ctx: EvalContext, value: list[Any], d: Any = "", attribute: Any = None) -> int:
    try:
        size = sum(map(str.__len__, value))  # the usual strings (str.__len__ takes no other)
    except TypeError:
        size = text_size(value)
    return size + len(value) * text_len(d)


def _formatted(value: Any, *args: Any, **kwargs: Any) -> int:
    return printf_size(printed(value), kwargs or args)


def _wrapped(  # noqa: PLR0917 - called with the arguments of Jinja's `wordwrap`
             environment: Any, s: Any, width: int = 79, break_long_words: bool = True,
             wrapstring: str | None = None, break_on_hyphens: bool = True) -> int:
    text = printed(s)
    lines = len(text) // max(width, 1) + text.count("\n") + 1
    return len(text) + lines * (1 if wrapstring is None else text_len(wrapstring))


def _as_json(eval_ctx: EvalContext, value: Any, indent: int | str | None = None) -> int:
    return text_size(value, len(indent) if isinstance(indent, str) else indent or 0)


def _urlized(  # noqa: PLR0917 - called with the arguments of Jinja's `urlize`
             eval_ctx: Any, value: Any, trim_url_limit: int | None = None,
             nofollow: bool = False, target: str | None = None, rel: str | None = None,
             extra_schemes: Iterable[str] | None = None) -> int:
    size = text_len(value)  # every word may become a link: <a href="word" ...>word</a>
    return 10 * size + (size // 2 + 1) * (text_len(target or "") + text_len(rel or ""))


def _pretty(value: Any) -> int:
    return text_size(value, 1)


def _xml_attributes(eval_ctx: EvalContext, d: Any, autospace: bool = True) -> int:
    return text_size(d)


def _batched(value: Any, linecount: int, fill_with: Any = None) -> int:
    return linecount  # the last batch is padded to it


def _sliced(eval_ctx: EvalContext, value: Any, slices: int, fill_with: Any = None) -> int:
    return slices  # a list is made for each


def _summed(environment: Environment, iterable: list[Any], attribute: Any = None,
            start: Any = 0) -> int:
    if not isinstance(start, (list, tuple)):
        return 0  # numbers
    return size_of(start) + sum(map(size_of, iterable))


# Filter name -> the size of what one call makes, from the filter's arguments; None: what it
# makes is no bigger than its input, and is only counted after. The sandbox bounds these filters.
FILTER_SIZES: dict[str, Callable[..., int] | None] = {
    "center": _centered,
    "indent": _indented,
    "replace": _replaced,
    "join": _joined,
    "format": _formatted,
    "wordwrap": _wrapped,
    "tojson": _as_json,
    "urlize": _urlized,
    "pprint": _pretty,
    "xmlattr": _xml_attributes,
    "batch": _batched,
    "slice": _sliced,
    "sum": _summed,
    **dict.fromkeys(["string", "lower", "upper", "title", "capitalize", "trim", "striptags",
                     "wordcount", "escape", "e", "forceescape", "safe", "urlencode", "truncate",
                     "highlight", "list", "sort", "dictsort", "reverse", "groupby",
                     "most_frequent"]),
}


# --- Methods and globals: the size of what one call makes ------------------------------------
# Method estimates take the receiver, then the method's arguments. Those of methods that take
# keywords also get Jinja's own (for the context), which they ignore.


def _padded(text: str | bytes, width: int, fillchar: Any = " ") -> int:
    return max(len(text), width)


def _tabs_expanded(text: str | bytes, tabsize: int = 8, **_: Any) -> int:
    return len(text) + text.count("\t" if isinstance(text, str) else b"\t") * tabsize


def _translated(text: str, table: Any) -> int:
    longest = max((len(v) for v in table.values() if isinstance(v, str)), default=1) \
        if isinstance(table, Mapping) else 1
    return len(text) * longest


def joined_by(separator: str | bytes, items: list[Any]) -> int:
    """`separator.join(items)`; `items` must be a list already (the sandbox makes it one)."""
    try:  # join itself takes strings (or bytes) only
        return sum(map(len, items)) + len(items) * len(separator)
    except TypeError:
        return 0


def _to_bytes(number: int, length: int = 1, byteorder: str = "big", *, signed: bool = False,
              **_: Any) -> int:
    return length


# (receiver's type, method name) -> the size of what one call makes.
METHOD_SIZES: dict[tuple[type, str], Callable[..., int]] = {
    **{(kind, name): _padded for kind in (str, Markup, bytes)
       for name in ("ljust", "rjust", "center", "zfill")},
    **{(kind, "expandtabs"): _tabs_expanded for kind in (str, Markup, bytes)},
    **{(kind, "replace"): _replace_size for kind in (str, Markup, bytes)},
    **{(kind, "join"): joined_by for kind in (str, Markup, bytes)},
    **{(kind, "translate"): _translated for kind in (str, Markup)},
    **{(kind, "to_bytes"): _to_bytes for kind in (int, bool)},
}
TAKE_KEYWORDS = frozenset({_tabs_expanded, _to_bytes})  # the method estimates given keywords


def lipsum_size(n: int = 5, html: bool = True, min: int = 20, max: int = 100) -> int:
    return n * max * 12  # up to `max` words of a dozen characters per paragraph


# --- Filters: the work one call takes --------------------------------------------------------

STEPS_PER_WRAPPED_LINE = 10  # Jinja wraps each line with a new TextWrapper, then each output line
CHARACTERS_COPIED_PER_STEP = 4096  # textwrap's copies of the rest of a word it cuts
URLIZE_STEPS_PER_CHARACTER = 8  # measured: about 6 microseconds a character
TITLE_CHARACTERS_PER_STEP = 2  # measured: about half a microsecond a character


def _wrapping_steps(  # noqa: PLR0917 - called with the arguments of Jinja's `wordwrap`
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


def _urlizing_steps(eval_ctx: Any, value: Any, *args: Any, **kwargs: Any) -> int:
    return URLIZE_STEPS_PER_CHARACTER * text_len(value)


def _title_steps(s: Any) -> int:
    return text_len(s) // TITLE_CHARACTERS_PER_STEP


# Filter name -> the steps one call takes, from the filter's arguments.
FILTER_STEPS: dict[str, Callable[..., int]] = {
    "wordwrap": _wrapping_steps,
    "urlize": _urlizing_steps,
    "title": _title_steps,
}
