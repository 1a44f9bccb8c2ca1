"""Per-render limits on work and size, so that a hostile or runaway template fails its own rows.

Each render runs under a `Budget`: steps (loop iterations, calls, range items, parts of values
inspected), a wall-clock deadline as a backstop (read every CLOCK_EVERY steps, counted from the
first reading) and a size limit. The size limit grows with the row, since a template rearranges
its row: a big row may rightly make big values, while a template that makes gigabytes out of a
small row is an attack. No value the template makes, nor all of them together, nor the output
may exceed it; values are checked before they are built where one operation could allocate
gigabytes (`*`, `**`, `%`, widths, joins: `p3data.templates.costs` estimates them), after
otherwise. The sandbox (`p3data.templates.sandbox`) and the filters its rewriter inserts
(`p3data.templates.rewriter`) call these checks; a breach raises `LimitExceeded`, which the
renderer turns into the row's `RenderLimitError`.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable
from contextvars import ContextVar
from types import ModuleType
from typing import Any

from jinja2.utils import Namespace

from p3data.errors import P3DataError

MAX_STEPS = 1_000_000  # a second or so of rendering; promptsource's take < 100 on the samples
CLOCK_EVERY = 256  # steps between readings of the clock: cheap, yet slow steps go unseen briefly
MAX_SECONDS = 10.0  # for work steps do not see (`in` over a long list...); renders take < 1 ms
MIN_SIZE_LIMIT = 10_000_000  # characters/items; ~5,000x what a template makes on the samples
SIZE_PER_ROW_CHARACTER = 1_000  # a bigger row's limit; parity's 3,000x-long fields need 350
MAX_INT_DIGITS = 10_000  # arithmetic on bigger integers gets slow; Python prints 4,300 at most
MAX_NESTING = 100  # levels of lists in lists a value may have when printed; rows have a few
MAX_CALL_DEPTH = 100  # macro calls within calls; Python's own stack would end near 200
BLOCK_STEPS = 10  # rendering a macro's (or a block's) body costs about 10 loop iterations


class LimitExceeded(P3DataError):
    """A render went past one of its limits (the message names it and its value)."""


What = str | Callable[..., Any]  # what made a value: a description, or the function called


class Budget:
    """What the render in progress may still do; `start_render` gives it a fresh one."""

    __slots__ = ("steps", "created", "size_limit", "depth", "_row", "_clock_at", "_deadline")

    def __init__(self) -> None:
        self.restart(None)

    def restart(self, row: Any) -> Budget:
        """Start again, for rendering `row`."""
        self.steps = self.created = self.depth = 0  # depth: calls in progress
        self.size_limit = MIN_SIZE_LIMIT  # until a value needs more: then the row is measured
        self._row = row
        self._clock_at = CLOCK_EVERY
        self._deadline: float | None = None  # a render that stays short never reads the clock
        return self

    def exceeds(self, size: int) -> bool:
        """Whether `size` exceeds the limit, grown with the size of the row (measured once)."""
        if self._row is not None:
            self.size_limit = max(self.size_limit, SIZE_PER_ROW_CHARACTER * row_size(self._row))
            self._row = None
        return size > self.size_limit

    def spend(self, steps: int = 1) -> None:
        self.steps += steps
        if self.steps >= self._clock_at:
            self._look_at_clock()

    def _look_at_clock(self) -> None:
        if self.steps > MAX_STEPS:
            raise LimitExceeded(f"template exceeded its work budget of {MAX_STEPS:,} steps "
                                "(loop iterations, calls, range items)")
        now = time.monotonic()
        if self._deadline is None:
            self._deadline = now + MAX_SECONDS
        elif now > self._deadline:
            raise LimitExceeded(f"template exceeded its time limit of {MAX_SECONDS:g} seconds")
        self._clock_at = min(self.steps + CLOCK_EVERY, MAX_STEPS + 1)

    def charge(self, steps: int, what: str) -> None:
        """Pay up front for one call that works `steps` steps at once (see `costs`): refused
        before it starts when they would pass the budget, whose clock it never reads."""
        if self.steps + steps > MAX_STEPS:
            raise LimitExceeded(f"{what} would take about {steps:,} steps, over the work "
                                f"budget of {MAX_STEPS:,} steps")
        self.spend(steps)

    def enter_call(self) -> None:
        """A step, and one more call in progress (decrease `depth` when it returns)."""
        self.spend()
        if self.depth >= MAX_CALL_DEPTH:
            raise LimitExceeded(f"calls nested more than {MAX_CALL_DEPTH} deep (a macro or a "
                                "recursive loop calling itself)")
        self.depth += 1

    def check_size(self, size: int, what: What) -> None:
        """Refuse to make a value of `size` characters/items beyond the size limit."""
        if size > self.size_limit and self.exceeds(size):
            raise LimitExceeded(f"{_describe(what)} of {size:,} characters/items exceeds the "
                                f"limit of {self.size_limit:,}")

    def create(self, size: int, what: What) -> None:
        """Count a value of `size` characters/items that the template just made."""
        self.created += size
        if self.created > self.size_limit and self.exceeds(self.created):
            self.check_size(size, what)
            raise LimitExceeded(f"template created more than {self.size_limit:,} "
                                "characters/items in all")


def _describe(what: What) -> str:
    if isinstance(what, str):
        return what
    name = getattr(what, "__name__", None) or getattr(what, "name", "a call")  # a macro's name
    method = not isinstance(getattr(what, "__self__", None), (type(None), ModuleType))
    return f"a value made by {'.' if method else ''}{name}()"


_CURRENT: ContextVar[Budget] = ContextVar("render budget (render templates through p3data)")
current = _CURRENT.get  # the budget of the render in progress (or of the thread's last one)


def start_render(row: Any = None) -> Budget:
    """The budget for rendering `row` (or for compiling, which evaluates constant parts) in
    this thread: one object per thread, restarted for each render, as a new one set in a
    context variable around each render would cost more than most renders."""
    budget = _CURRENT.get(None)
    if budget is None:
        budget = Budget()
        _CURRENT.set(budget)
    return budget.restart(row)


def check_size(size: int, what: What) -> None:
    current().check_size(size, what)


def made(value: Any, what: What) -> Any:
    """Check and count a value the template just created; returns it."""
    current().create(size_of(value), what)
    return value


def output(parts: list[str], budget: Budget) -> str:
    """A render's output, once it is known to be within the size limit."""
    size = sum(map(len, parts))
    if size > budget.size_limit and budget.exceeds(size):
        raise LimitExceeded(f"the rendered output of {size:,} characters exceeds the limit of "
                            f"{budget.size_limit:,}")
    return "".join(parts)


def row_size(value: Any) -> int:
    """Characters of the strings in a row or a field, at any depth."""
    if isinstance(value, str):
        return len(value)
    if isinstance(value, dict):
        value = value.values()
    elif not isinstance(value, (list, tuple)):
        return 0
    size = 0
    for item in value:
        size += len(item) if type(item) is str else row_size(item)
    return size


class SizedNamespace(Namespace):
    """Jinja's `namespace()`, with its values visible to `text_size`."""

    def __init__(*args: Any, **kwargs: Any) -> None:  # no `self`: any keyword is a value
        Namespace.__init__(*args, **kwargs)
        object.__setattr__(args[0], "_values", dict(*args[1:], **kwargs))

    def __setitem__(self, name: str, value: Any) -> None:
        super().__setitem__(name, value)
        object.__getattribute__(self, "_values")[name] = value


_TEXT = (str, bytes)
_LIST_TYPES = frozenset({list, tuple})
_SIZED = (str, bytes, list, tuple, dict, set, frozenset)
SIZED_TYPES = frozenset(_SIZED)  # `len` is their size
_SCALAR_TYPES = frozenset({int, float, bool, type(None)})
_VIEWS = (type({}.keys()), type({}.values()), type({}.items()))
_PRINTABLE = (*_SIZED[2:], *_VIEWS, SizedNamespace)


def digits(number: int) -> int:
    """Decimal digits of an integer, within one."""
    return number.bit_length() * 30103 // 100000 + 1


def size_of(value: Any) -> int:
    """Characters or items a new value holds itself (the parts of a collection were counted
    when they were made, except the strings `split` makes: see the sandbox's `call`)."""
    if type(value) in SIZED_TYPES or isinstance(value, _SIZED):
        return len(value)
    if type(value) is int:
        return digits(value)
    return 0


def printed(value: Any) -> str:
    """`str(value)` (a Markup stays Markup), once its size is known to be within the limit.
    Only collections can print big: Python itself refuses ints of over 4,300 digits."""
    if isinstance(value, str):
        return value
    if type(value) not in _SCALAR_TYPES and isinstance(value, _PRINTABLE):
        text_size(value)
    return str(value)


def text_len(value: Any) -> int:
    """`len(str(value))`, estimated for anything but a string (see `text_size`)."""
    return len(value) if type(value) is str or isinstance(value, str) else text_size(value)


def text_size(value: Any, indent: int = 0) -> int:
    """About `len(str(value))` (or of `json.dumps` with `indent`), found without building the
    text: a part shared in a structure counts as often as it is printed. Costs a step per part
    of every distinct collection; raises LimitExceeded once the estimate passes the limit."""
    budget = current()
    if not indent and type(value) in _LIST_TYPES:
        try:  # the usual case, a list of strings (str.__len__ refuses anything else)
            size = 2 + sum(map(str.__len__, value)) + 4 * len(value)
        except TypeError:
            pass
        else:
            budget.check_size(size, "printing a value")
            return size
    return _TextSize(budget, indent).of(value, 0)


class _TextSize:
    def __init__(self, budget: Budget, indent: int):
        self.budget = budget
        self.indent = indent
        self.known: dict[int, int] = {}  # id of a collection -> its size (all alive meanwhile)

    def of(self, value: Any, depth: int) -> int:
        if isinstance(value, _TEXT):
            return len(value) + 2  # quotes
        if type(value) is int:
            return digits(value)
        parts = _parts(value)
        if parts is None:
            return 64  # a number, None, a function, an undefined...: a short repr
        key = id(value)
        if key in self.known:
            return self.known[key]
        if depth >= MAX_NESTING:
            raise LimitExceeded(f"a value nested more than {MAX_NESTING} levels deep")
        self.known[key] = 5  # a collection inside itself prints as [...]
        self.budget.spend(len(parts))
        line = 2 + (depth + 1) * self.indent if self.indent else 2  # ", " or a new line
        size = 2 + sum(self.of(part, depth + 1) + line for part in parts)
        self.budget.check_size(size, "printing a value")
        self.known[key] = size
        return size


def _parts(value: Any) -> list[Any] | tuple[Any, ...] | None:
    """What a collection prints; None for anything else."""
    if isinstance(value, (list, tuple)):
        return value
    if isinstance(value, dict):
        return [part for item in value.items() for part in item]
    if isinstance(value, (set, frozenset, *_VIEWS)):
        return list(value)
    if isinstance(value, SizedNamespace):
        return _parts(object.__getattribute__(value, "_values"))
    return None


_PRINTF = re.compile(r"%(?:\([^)]*\))?[-#0 +]*(\*|\d+)?(?:\.(\*|\d+))?[hlL]?(.)", re.DOTALL)
_NUMBER = re.compile(r"\d+")


def number(text: str) -> int:
    """A run of digits as an int; beyond 12 digits only 'huge' matters."""
    return int(text[:12])


def largest_number(spec: str) -> int:
    """The largest number in a format spec: its width or precision."""
    return max(map(number, _NUMBER.findall(spec)), default=0)


def printf_widths(template: str) -> list[int]:
    """The widths and precisions written in a printf-style template."""
    return [number(n) for spec in _PRINTF.findall(template) for n in spec[:2] if n.isdigit()]


def printf_size(template: str | bytes, values: Any) -> int:
    """An upper estimate of `len(template % values)`, found without formatting."""
    text = template.decode("latin-1") if isinstance(template, bytes) else template
    specs = _PRINTF.findall(text)
    if isinstance(values, dict):
        values = list(values.values())
    elif not isinstance(values, tuple):
        values = [values]
    widest = max(map(text_len, values), default=0)
    numbers = printf_widths(text)
    if any("*" in spec[:2] for spec in specs):  # widths taken from the values
        numbers += [v for v in values if isinstance(v, int)]
    return len(text) + len(specs) * (widest + max(numbers, default=0))


def int_digits(operator: str, left: int | float, right: int | float) -> int:
    """Decimal digits of `left * right` or `left ** right` for integers, before computing it."""
    if type(left) is not int or type(right) is not int:
        return 0  # floats overflow quickly; bools stay small
    if operator == "*":
        return digits(left) + digits(right)
    if right <= 0 or abs(left) <= 1:
        return 1
    if right > 10**12:  # even 2 ** right has more digits than any limit
        return right
    return math.ceil(math.log10(abs(left)) * right)


def check_int_digits(count: int, operator: str) -> None:
    if count > MAX_INT_DIGITS:
        raise LimitExceeded(f"{operator!r} would make an integer of {count:,} digits, over the "
                            f"limit of {MAX_INT_DIGITS:,}")


def binop_size(operator: str, left: Any, right: Any) -> int:
    """The size of `left <operator> right` (not both numbers), before computing it."""
    if operator == "*":
        if isinstance(right, int):
            return size_of(left) * right
        if isinstance(left, int):
            return size_of(right) * left
    elif operator == "+":
        return size_of(left) + size_of(right)
    elif operator == "%" and isinstance(left, _TEXT):
        return printf_size(left, right)
    return 0
