"""The Jinja environment templates render in: promptsource's globals and filters, sandboxed.

Differences from promptsource, on purpose:
- `SandboxedEnvironment`: reaching for Python internals (`__class__`, `__globals__`...) fails.
- Bounded: each render has a budget of work and every value it makes a size limit
  (`p3data.templates.limits`); `limit_template` rewrites a parsed template so that its loops,
  outputs, `~` and literals report to it, and the environment checks calls, operators, filters
  and `str.format` widths. A template past a limit fails on that row with the limit named.
- A name that is neither a field of the row nor set by the template raises instead of rendering
  as "", so a template that reads a field the row lacks fails loudly on that row. A missing
  attribute or item of a value that exists stays lenient (renders "", is falsy), exactly as in
  promptsource, because real rows rely on it.
- `choice` draws from a per-row RNG seeded by (template id, row index, user seed), never from
  the global `random` state, so renders are reproducible across runs, workers and shards.
"""

from __future__ import annotations

import hashlib
import random
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from functools import update_wrapper
from types import BuiltinMethodType, FunctionType, MethodType
from typing import Any

from jinja2 import Undefined, nodes, pass_context, pass_environment, pass_eval_context
from jinja2.defaults import DEFAULT_FILTERS
from jinja2.nodes import EvalContext
from jinja2.runtime import Context, LoopContext, markup_join
from jinja2.sandbox import SandboxedEnvironment, SandboxedFormatter, SecurityError
from jinja2.utils import generate_lorem_ipsum, missing
from jinja2.visitor import NodeTransformer
from markupsafe import EscapeFormatter, Markup

from p3data.templates.costs import FILTER_STEPS, urlized_size, wrapped_size
from p3data.templates.limits import (
    BLOCK_STEPS,
    CLOCK_EVERY,
    MAX_STEPS,
    SIZED_TYPES,
    Budget,
    SizedNamespace,
    binop_size,
    check_int_digits,
    check_size,
    current,
    digits,
    int_digits,
    largest_number,
    made,
    printed,
    printf_size,
    size_of,
    text_len,
    text_size,
)

# The context key under which a row's RNG travels. Not an identifier, so templates cannot read it.
RNG_KEY = "p3data:rng"
# Filters `limit_template` inserts; not identifiers either, so a template cannot write them.
TEXT, CONCAT, LOOP, MADE = "p3data:text", "p3data:concat", "p3data:loop", "p3data:made"


def choice_seed(template_id: str, index: int, seed: int) -> int:
    """The seed of the RNG behind `choice` for one row of one template."""
    digest = hashlib.blake2b(f"{template_id}\0{index}\0{seed}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little")


class RowRandom:
    """A row's RNG, created only if the template actually draws from it."""

    __slots__ = ("_seed", "_rng")

    def __init__(self, template_id: str, index: int, seed: int):
        self._seed = (template_id, index, seed)
        self._rng: random.Random | None = None

    def choice(self, items: Sequence[Any]) -> Any:
        if self._rng is None:
            self._rng = random.Random(choice_seed(*self._seed))
        return self._rng.choice(items)


@pass_context
def _choice(context: Context, items: Sequence[Any]) -> Any:
    """promptsource's `choice` (and Jinja's `random`), drawing from the row's own RNG.

    Taking the context also keeps Jinja from folding `[...] | choice` over a constant list at
    compile time, so a compiled template still draws once per row, as promptsource did.
    """
    rng = context.get(RNG_KEY)
    if rng is None:
        raise RuntimeError("the 'choice' filter needs a row RNG; render through p3data")
    return rng.choice(items)


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


# --- Bounded pieces of the rendered template -------------------------------------------------


_truncate = DEFAULT_FILTERS["truncate"]
_SHORT = 64  # characters: a printed number, say


@pass_environment
def _text(environment: BoundedEnvironment, value: Any, length: int | None = None) -> str:
    """What `{{ value }}` prints; with `length`, promptsource's `value | string | truncate(length)`
    that every `{{ }}` of a template body gets, in one step."""
    if type(value) is not str:
        value = printed(value)
        if len(value) > _SHORT:  # shorter ones are no more than the steps that print them
            current().create(len(value), "a printed value")
    if length is not None and len(value) > length:
        value = _truncate(environment, value, length)
        current().create(len(value), "a printed value")  # a new string for each `{{ }}`
    return value


@pass_eval_context
def _concat(eval_ctx: EvalContext, parts: tuple[Any, ...]) -> str:
    """`a ~ b ~ ...`, sized before it is joined."""
    texts = [part if type(part) is str else printed(part) for part in parts]
    current().create(sum(map(len, texts)), "a value made by '~'")
    return markup_join(texts) if eval_ctx.autoescape else "".join(texts)


@pass_context
def _loop(context: Context, iterable: Iterable[Any]) -> Iterable[Any]:
    """A for loop's items, each a step of the budget: paid all at once for a short loop (the
    usual case, and the quickest), one by one otherwise, so that the clock is read between
    steps of a long loop."""
    return _counted(iterable)


@pass_context
def _made(context: Context, value: Any) -> Any:
    """A literal built again and again (in a loop or macro), or a slice: counted as created."""
    return made(value, "a literal or slice")


def _counted(iterable: Iterable[Any]) -> Iterable[Any]:
    budget = current()
    try:
        count = len(iterable)  # type: ignore[arg-type]
    except TypeError:
        return _each(iterable, budget)
    if count > CLOCK_EVERY:
        return _each(iterable, budget)
    budget.spend(count)
    return iterable


def _each(iterable: Iterable[Any], budget: Budget) -> Iterator[Any]:
    for item in iterable:
        budget.spend()
        yield item


class _Limiter(NodeTransformer):
    """Rewrites a parsed template so that rendering it reports its work and sizes."""

    def __init__(self) -> None:
        self.repeated = 0  # inside a loop, a macro or a call block

    def _repeated_scope(self, node: nodes.Node) -> nodes.Node:
        self.repeated += 1
        node = self.generic_visit(node)
        self.repeated -= 1
        return node

    visit_Macro = visit_CallBlock = _repeated_scope

    def visit_For(self, node: nodes.For) -> nodes.Node:
        node = self._repeated_scope(node)
        node.iter = _filter(LOOP, node.iter)
        return node

    def visit_Output(self, node: nodes.Output) -> nodes.Node:
        node = self.generic_visit(node)
        node.nodes = [child if isinstance(child, nodes.TemplateData) or _is_text(child)
                      else _filter(TEXT, child) for child in node.nodes]
        return node

    def visit_Filter(self, node: nodes.Filter) -> nodes.Node:
        node = self.generic_visit(node)
        inner = node.node
        if (node.name == "truncate" and _plain(node) and len(node.args) == 1
                and isinstance(node.args[0], nodes.Const) and isinstance(inner, nodes.Filter)
                and inner.name == "string" and _plain(inner) and not inner.args
                and inner.node is not None):
            return _filter(TEXT, inner.node, node.args)
        return node

    def visit_Concat(self, node: nodes.Concat) -> nodes.Node:
        node = self.generic_visit(node)
        return _filter(CONCAT, nodes.Tuple(node.nodes, "load", lineno=node.lineno))

    def visit_Getitem(self, node: nodes.Getitem) -> nodes.Node:
        node = self.generic_visit(node)
        return _filter(MADE, node) if isinstance(node.arg, nodes.Slice) else node

    def _literal(self, node: nodes.Expr) -> nodes.Node:
        node = self.generic_visit(node)
        built_again = self.repeated and getattr(node, "ctx", "load") == "load"
        return _filter(MADE, node) if built_again else node

    visit_List = visit_Tuple = visit_Dict = _literal


def _filter(name: str, node: nodes.Expr, args: Sequence[nodes.Expr] = ()) -> nodes.Filter:
    return nodes.Filter(node, name, list(args), [], None, None, lineno=node.lineno)


def _plain(node: nodes.Filter) -> bool:
    return not (node.kwargs or node.dyn_args or node.dyn_kwargs)


def _is_text(node: nodes.Node) -> bool:
    return isinstance(node, nodes.Filter) and node.name == TEXT


def limit_template(ast: nodes.Template) -> nodes.Template:
    """Rewrite a parsed template (in place) to run under the render limits; compile it after
    `start_render()`, as constant parts are evaluated while compiling."""
    ast = _Limiter().visit(ast)
    ast.set_environment(ENVIRONMENT)
    return ast


# --- Bounded filters, methods and globals ----------------------------------------------------
# Each estimate takes the arguments of the filter or method it guards and returns the size of
# the value it would make, so that one call cannot allocate gigabytes before it is checked.


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


def _as_json(eval_ctx: EvalContext, value: Any, indent: int | str | None = None) -> int:
    return text_size(value, len(indent) if isinstance(indent, str) else indent or 0)


def _pretty(value: Any) -> int:
    return text_size(value, 1)


def _xml_attributes(eval_ctx: EvalContext, d: Any, autospace: bool = True) -> int:
    return text_size(d)


def _batched(value: Any, linecount: int, fill_with: Any = None) -> int:
    return linecount  # the last batch is padded to it


def _sliced(eval_ctx: EvalContext, value: Any, slices: int, fill_with: Any = None) -> int:
    return slices  # a list is made for each


def _summed(environment: BoundedEnvironment, iterable: list[Any], attribute: Any = None,
            start: Any = 0) -> int:
    if not isinstance(start, (list, tuple)):
        return 0  # numbers
    return size_of(start) + sum(map(size_of, iterable))


_FILTER_SIZES: dict[str, Callable[..., int] | None] = {
    "center": _centered,
    "indent": _indented,
    "replace": _replaced,
    "join": _joined,
    "format": _formatted,
    "wordwrap": wrapped_size,
    "tojson": _as_json,
    "urlize": urlized_size,
    "pprint": _pretty,
    "xmlattr": _xml_attributes,
    "batch": _batched,
    "slice": _sliced,
    "sum": _summed,
    # What these make is no bigger than their input: it is only counted after.
    **dict.fromkeys(["string", "lower", "upper", "title", "capitalize", "trim", "striptags",
                     "wordcount", "escape", "e", "forceescape", "safe", "urlencode", "truncate",
                     "highlight", "list", "sort", "dictsort", "reverse", "groupby",
                     "most_frequent"]),
}
_PRINTING = {"string", "lower", "upper", "title", "capitalize", "trim", "striptags", "wordcount",
             "escape", "e", "forceescape", "safe", "urlencode", "truncate", "highlight"}
_LISTED_INPUT = {"join", "sum"}  # their estimate needs the items: an iterator becomes a list


def _bounded_filter(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
    estimate, steps = _FILTER_SIZES[name], FILTER_STEPS.get(name)
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


def _joined_by(separator: str | bytes, items: list[Any]) -> int:
    try:  # join itself takes strings (or bytes) only
        return sum(map(len, items)) + len(items) * len(separator)
    except TypeError:
        return 0


def _to_bytes(number: int, length: int = 1, byteorder: str = "big", *, signed: bool = False,
              **_: Any) -> int:
    return length


_METHOD_SIZES: dict[tuple[type, str], Callable[..., int]] = {
    **{(kind, name): _padded for kind in (str, Markup, bytes)
       for name in ("ljust", "rjust", "center", "zfill")},
    **{(kind, "expandtabs"): _tabs_expanded for kind in (str, Markup, bytes)},
    **{(kind, "replace"): _replace_size for kind in (str, Markup, bytes)},
    **{(kind, "join"): _joined_by for kind in (str, Markup, bytes)},
    **{(kind, "translate"): _translated for kind in (str, Markup)},
    **{(kind, "to_bytes"): _to_bytes for kind in (int, bool)},
}
_TAKE_KEYWORDS = frozenset({_tabs_expanded, _to_bytes})
_GROWABLE = frozenset({list, dict, set})  # their methods may add items
_NUMBERS = frozenset({int, float, bool})
_METHODS = frozenset({BuiltinMethodType, MethodType})
_PLAIN = frozenset({str, bytes, list, tuple, dict, set, frozenset, int, float, bool})
_TEXTS = frozenset({str, Markup, bytes})
_LISTS = frozenset({list, tuple})
_FEW = 16  # tuples this small are no more than the steps that make them


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


def _lipsum_size(n: int = 5, html: bool = True, min: int = 20, max: int = 100) -> int:
    return n * max * 12  # up to `max` words of a dozen characters per paragraph


def _lipsum(*args: Any, **kwargs: Any) -> str:
    check_size(_lipsum_size(*args, **kwargs), "lipsum()")
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
            estimate = _METHOD_SIZES.get((type(receiver), obj.__name__))
            if estimate is not None:
                if estimate is _joined_by and args and type(args[0]) not in _LISTS:
                    args = (list(args[0]), *args[1:])  # sized before it is joined
                try:
                    size = (estimate(receiver, *args, **kwargs) if estimate in _TAKE_KEYWORDS
                            else estimate(receiver, *args))
                except TypeError:  # called wrongly: the method itself says how
                    size = 0
                if size > budget.size_limit:
                    budget.check_size(size, obj)
            elif type(receiver) in _GROWABLE:
                grows = len(receiver)
        elif type(obj) is LoopContext and args:  # `loop(children)` of a recursive loop
            args = (_counted(args[0]), *args[1:])
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


def make_environment() -> BoundedEnvironment:
    env = BoundedEnvironment(undefined=FieldUndefined)
    env.globals.update(zip=_zip, range=_range, lipsum=_lipsum, namespace=SizedNamespace)
    env.filters["choice"] = _choice
    env.filters["random"] = _choice  # Jinja's own would draw from the global RNG
    env.filters["most_frequent"] = _most_frequent
    env.filters["highlight"] = _highlight
    for name in _FILTER_SIZES:
        env.filters[name] = _bounded_filter(name, env.filters[name])
    env.filters.update({TEXT: _text, CONCAT: _concat, LOOP: _loop, MADE: _made})
    return env


ENVIRONMENT = make_environment()
