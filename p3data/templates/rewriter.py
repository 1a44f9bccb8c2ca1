"""The rewriter that makes a parsed template report its work and sizes to the render's budget
(`p3data.templates.limits`): loops, outputs, `~`, slices and literals built again and again go
through filters it inserts, defined here; the sandbox registers them (`INSERTED_FILTERS`)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from jinja2 import Environment, nodes, pass_context, pass_environment, pass_eval_context
from jinja2.defaults import DEFAULT_FILTERS
from jinja2.nodes import EvalContext
from jinja2.runtime import Context, markup_join
from jinja2.visitor import NodeTransformer

from p3data.templates.limits import CLOCK_EVERY, Budget, current, made, printed

# Filters `limit_template` inserts; not identifiers, so a template cannot write them.
TEXT, CONCAT, LOOP, MADE = "p3data:text", "p3data:concat", "p3data:loop", "p3data:made"

_truncate = DEFAULT_FILTERS["truncate"]
_SHORT = 64  # characters: a printed number, say


@pass_environment
def _text(environment: Environment, value: Any, length: int | None = None) -> str:
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
    return counted(iterable)


@pass_context
def _made(context: Context, value: Any) -> Any:
    """A literal built again and again (in a loop or macro), or a slice: counted as created."""
    return made(value, "a literal or slice")


def counted(iterable: Iterable[Any]) -> Iterable[Any]:
    """`iterable`, each of its items a step of the budget (see `_loop`)."""
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


INSERTED_FILTERS = {TEXT: _text, CONCAT: _concat, LOOP: _loop, MADE: _made}


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


def limit_template(ast: nodes.Template, environment: Environment) -> nodes.Template:
    """Rewrite a parsed template (in place) to run under the render limits in `environment`
    (which must have `INSERTED_FILTERS`); compile it after `start_render()`, as constant parts
    are evaluated while compiling."""
    ast = _Limiter().visit(ast)
    ast.set_environment(environment)
    return ast
