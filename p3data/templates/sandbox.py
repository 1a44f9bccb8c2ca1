"""The Jinja environment templates render in: promptsource's globals and filters, sandboxed.

Differences from promptsource, on purpose:
- `SandboxedEnvironment`: reaching for Python internals (`__class__`, `__globals__`...) fails.
- Bounded: each render has a budget of work and every value it makes a size limit
  (`p3data.templates.limits`); `limit_template` (`p3data.templates.rewriter`) rewrites a parsed
  template so that its loops, outputs, `~` and literals report to it, and the environment checks
  calls, operators, filters and `str.format` widths, against the estimates of
  `p3data.templates.costs` before a call that could make a big value. A template past a limit
  fails on that row with the limit named.
- A name that is neither a field of the row nor set by the template raises instead of rendering
  as "", so a template that reads a field the row lacks fails loudly on that row. A missing
  attribute or item of a value that exists stays lenient (renders "", is falsy), exactly as in
  promptsource, because real rows rely on it.
- `LENIENT_ENVIRONMENT` keeps Jinja's own leniency instead, for rules that reproduce a build
  which had it (xP3's): unknown names render as "", and `random` of an empty sequence too.
- `choice` draws from a per-row RNG (`p3data.templates.choice`), never from the global `random`
  state, so renders are reproducible across runs, workers and shards.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from functools import update_wrapper
from types import BuiltinMethodType, FunctionType, MethodType
from typing import Any

from jinja2 import Undefined
from jinja2.runtime import Context, LoopContext
from jinja2.sandbox import SandboxedEnvironment, SandboxedFormatter, SecurityError
from jinja2.utils import generate_lorem_ipsum, missing
from markupsafe import EscapeFormatter, Markup

from p3data.templates.choice import choice, random_item
from p3data.templates.costs import (
    FILTER_SIZES,
    FILTER_STEPS,
    METHOD_SIZES,
    TAKE_KEYWORDS,
    joined_by,
    lipsum_size,
)
from p3data.templates.limits import (
    BLOCK_STEPS,
    MAX_STEPS,
    SIZED_TYPES,
    SizedNamespace,
    binop_size,
    check_int_digits,
    check_size,
    current,
    digits,
    int_digits,
    largest_number,
    size_of,
    text_len,
)
from p3data.templates.rewriter import INSERTED_FILTERS, counted


def _most_frequent(items: Sequence[Any]) -> list[Any] | None:
    """Every item that occurs as often as the most common one (None for no items)."""
    if not items:
        return None
    counts = Counter(items).most_common()
    top = counts[0][1]
    return [item for item, count in counts if count == top]


def _highlight(text: str) -> str:
    return "<span style='color: #F08080'>" + text + "</span>"


class FieldUndefined(Undefined):
    """Strict for unknown top-level names, promptsource's lenient `Undefined` otherwise."""

    __slots__ = ()

    def _check_name(self) -> None:  # an unknown name, or what the sandbox refused to give
        if self._undefined_obj is missing or self._undefined_exception is SecurityError:
            self._fail_with_undefined_error()

    def __str__(self) -> str:
        self._check_name()
        return super().__str__()

    def __iter__(self):
        self._check_name()
        return super().__iter__()

    def __len__(self) -> int:
        self._check_name()
        return super().__len__()

    def __bool__(self) -> bool:
        self._check_name()
        return super().__bool__()

    def __eq__(self, other: object) -> bool:
        self._check_name()
        return super().__eq__(other)

    def __ne__(self, other: object) -> bool:
        self._check_name()
        return super().__ne__(other)

    __hash__ = Undefined.__hash__


class LenientUndefined(FieldUndefined):
    """promptsource's `Undefined` for unknown names too (they render as ""); what the sandbox
    refused still fails."""

    __slots__ = ()

    def _check_name(self) -> None:
        if self._undefined_exception is SecurityError:
            self._fail_with_undefined_error()


# --- Bounded filters, methods and globals ----------------------------------------------------

_GROWABLE = frozenset({list, dict, set})  # their methods may add items
_NUMBERS = frozenset({int, float, bool})
_METHODS = frozenset({BuiltinMethodType, MethodType})
_PLAIN = frozenset({str, bytes, list, tuple, dict, set, frozenset, int, float, bool})
_TEXTS = frozenset({str, Markup, bytes})
_LISTS = frozenset({list, tuple})
_FEW = 16  # tuples this small are no more than the steps that make them

_PRINTING = {"string", "lower", "upper", "title", "capitalize", "trim", "striptags", "wordcount",
             "escape", "e", "forceescape", "safe", "urlencode", "truncate", "highlight"}
_LISTED_INPUT = {"join", "sum"}  # their estimate needs the items: an iterator becomes a list


def _bounded_filter(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
    estimate, steps = FILTER_SIZES[name], FILTER_STEPS.get(name)
    what = f"a value made by filter {name!r}"
    listed, prints = name in _LISTED_INPUT, name in _PRINTING
    input_at = 1 if listed or name == "truncate" else 0  # after an environment

    def bounded(*args: Any, **kwargs: Any) -> Any:
        value = args[input_at]
        if listed and type(value) not in _LISTS:
            args = (*args[:input_at], list(value), *args[input_at + 1:])
        if estimate is not None:
            current().check_size(estimate(*args, **kwargs), what)
        elif prints and type(value) is not str:
            text_len(value)  # a collection may print far bigger than it is
        if steps is not None:
            current().charge(steps(*args, **kwargs), f"filter {name!r}")
        result = function(*args, **kwargs)
        current().create(len(result) if type(result) in SIZED_TYPES else size_of(result), what)
        return result

    return update_wrapper(bounded, function)  # keeps Jinja's pass_context & co. markers




def _zip(*iterables: Iterable[Any], strict: bool = False) -> Iterable[tuple[Any, ...]]:
    """`zip`; the tuples of a zip of many (`zip(*[x] * 10**6)`) are counted as made."""
    if len(iterables) <= _FEW:
        return zip(*iterables, strict=strict)
    current().check_size(len(iterables), "a tuple made by zip()")
    return _made_each(zip(*iterables, strict=strict), len(iterables))


def _made_each(items: Iterator[Any], size: int) -> Iterator[Any]:
    for item in items:
        current().create(size, "a tuple made by zip()")
        yield item


def _range(*args: int) -> range:
    """`range`, each of its numbers a step of the budget."""
    numbers = range(*args)
    try:
        count = len(numbers)
    except OverflowError:  # more than sys.maxsize
        count = MAX_STEPS + 1
    current().spend(count)
    return numbers


def _lipsum(*args: Any, **kwargs: Any) -> str:
    check_size(lipsum_size(*args, **kwargs), "lipsum()")
    return generate_lorem_ipsum(*args, **kwargs)


def _joined_output(parts: Iterable[str]) -> str:
    """The environment's `concat`: joins a macro's or block's output, sized first. Each macro
    call ends here, however it was called (even as a sort key): it pays its steps here."""
    parts = parts if isinstance(parts, list) else list(parts)
    budget = current()
    budget.spend(BLOCK_STEPS)
    budget.create(sum(map(len, parts)), "a block of output")
    return "".join(parts)


class _BoundedFormatter(SandboxedFormatter):
    """The sandbox's `str.format`, with widths, fields and the result held to the limit."""

    def vformat(self, format_string: str, args: Sequence[Any], kwargs: Mapping[str, Any]) -> str:
        self.size = len(format_string)
        return super().vformat(format_string, args, kwargs)

    def convert_field(self, value: Any, conversion: str | None) -> Any:
        if conversion is not None:
            text_len(value)
        return super().convert_field(value, conversion)

    def format_field(self, value: Any, format_spec: str) -> Any:
        check_size(largest_number(format_spec), "a format width")
        text_len(value)
        text = super().format_field(value, format_spec)
        self.size += len(text)
        check_size(self.size, "a formatted string")
        return text


class _BoundedEscapeFormatter(_BoundedFormatter, EscapeFormatter):
    pass


_MADE_BY = {operator: f"a value made by {operator!r}" for operator in ("+", "*", "**", "%")}


class BoundedEnvironment(SandboxedEnvironment):
    """The sandbox, with every call, operator and `str.format` held to the render limits."""

    intercepted_binops = frozenset({"+", "*", "**", "%"})  # never folded at compile time
    concat = staticmethod(_joined_output)

    def call(self, context: Context, obj: Any, /, *args: Any, **kwargs: Any) -> Any:
        budget = current()
        receiver = grows = None
        if type(obj) in _METHODS:
            receiver = obj.__self__
            estimate = METHOD_SIZES.get((type(receiver), obj.__name__))
            if estimate is not None:
                if estimate is joined_by and args and type(args[0]) not in _LISTS:
                    args = (list(args[0]), *args[1:])  # sized before it is joined
                try:
                    size = (estimate(receiver, *args, **kwargs) if estimate in TAKE_KEYWORDS
                            else estimate(receiver, *args))
                except TypeError:  # called wrongly: the method itself says how
                    size = 0
                if size > budget.size_limit:
                    budget.check_size(size, obj)
            elif type(receiver) in _GROWABLE:
                grows = len(receiver)
        elif type(obj) is LoopContext and args:  # `loop(children)` of a recursive loop
            args = (counted(args[0]), *args[1:])
        if (type(obj) is BuiltinMethodType and type(receiver) in _PLAIN) or (
                type(obj) is FunctionType and obj in _OWN_GLOBALS):
            # A plain value's method, or one of the globals here, nests no calls and cannot be
            # marked unsafe (the sandbox vets methods as they are read): one step, straight to
            # the context.
            budget.spend()
            result = context.call(obj, *args, **kwargs)
        else:
            budget.enter_call()
            try:
                result = SandboxedEnvironment.call(self, context, obj, *args, **kwargs)
            finally:
                budget.depth -= 1
        size = len(result) if type(result) in SIZED_TYPES else size_of(result)
        if type(result) in _LISTS and type(receiver) in _TEXTS:  # the strings split() makes
            size += sum(map(len, result))
        if size:
            budget.create(size, obj)
        if grows is not None:
            budget.create(max(0, len(receiver) - grows), obj)
            if len(receiver) > budget.size_limit:
                budget.check_size(len(receiver), f"a collection grown by .{obj.__name__}()")
        return result

    def call_binop(self, context: Context, operator: str, left: Any, right: Any) -> Any:
        compute = self.binop_table[operator]
        if type(left) in _NUMBERS and type(right) in _NUMBERS:
            if operator == "*" or operator == "**":
                check_int_digits(int_digits(operator, left, right), operator)
            result = compute(left, right)
            if type(result) is int and result.bit_length() > 256:  # kept, it may add up
                current().create(digits(result), _MADE_BY[operator])
            return result
        budget = current()
        budget.check_size(binop_size(operator, left, right), _MADE_BY[operator])
        result = compute(left, right)
        budget.create(size_of(result), _MADE_BY[operator])
        return result

    def wrap_str_format(self, value: Any) -> Callable[..., str] | None:
        if not (isinstance(value, (MethodType, BuiltinMethodType))
                and value.__name__ in ("format", "format_map")
                and isinstance(value.__self__, str)):
            return None
        template = value.__self__
        formatter = (_BoundedEscapeFormatter(self, escape=template.escape)
                     if isinstance(template, Markup) else _BoundedFormatter(self))
        text_type = type(template)

        if value.__name__ == "format":
            def bounded(*args: Any, **kwargs: Any) -> str:
                return text_type(formatter.vformat(template, args, kwargs))
        else:
            def bounded(mapping: Mapping[str, Any]) -> str:
                return text_type(formatter.vformat(template, (), mapping))

        return update_wrapper(bounded, value)


_OWN_GLOBALS = frozenset({_range, _zip, _lipsum})


def make_environment(*, lenient: bool = False) -> BoundedEnvironment:
    env = BoundedEnvironment(undefined=LenientUndefined if lenient else FieldUndefined)
    env.globals.update(zip=_zip, range=_range, lipsum=_lipsum, namespace=SizedNamespace)
    env.filters["choice"] = choice
    env.filters["random"] = random_item if lenient else choice  # not Jinja's: the global RNG
    env.filters["most_frequent"] = _most_frequent
    env.filters["highlight"] = _highlight
    for name in FILTER_SIZES:
        env.filters[name] = _bounded_filter(name, env.filters[name])
    env.filters.update(INSERTED_FILTERS)
    return env


ENVIRONMENT = make_environment()
LENIENT_ENVIRONMENT = make_environment(lenient=True)
