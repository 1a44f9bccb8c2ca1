"""Render rows through templates exactly as promptsource 0.1.0 + T0 (or xP3) did, compiled once.

promptsource's `Template.apply` recompiles the template for every row. Here each template is
compiled once, rows are prepared once per batch (T0's hyphen renaming, promptsource's `|||`
protection) and shared by every template of the dataset.

Semantics kept from promptsource 0.1.0 `Template.apply` and T0's `apply_template`:
- every `}}` in the source becomes ` | string | truncate(2048) }}` (answer_choices are not cut);
- a literal `|||` inside a top-level string field is protected while rendering;
- `answer_choices` is injected as the rendered, `|||`-split, stripped answer-choice list;
- what the rendered text becomes is the row rule's (`T0_RULE` by default; `XP3Rule` for xP3's
  fork and recipe); under T0's, the output is split on `|||` and each part stripped; a row is
  kept only with exactly 2 parts and non-empty inputs; an empty target becomes `<NO LABEL>`;
  the answer-choice list is kept with the row.

Unlike promptsource, a render is bounded (`p3data.templates.limits`): a row that makes a template
exceed a limit on work or size is dropped with a `RenderLimitError` naming the limit.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from jinja2 import Template as JinjaTemplate
from jinja2 import TemplateSyntaxError, UndefinedError, meta, nodes

from p3data.errors import RenderLimitError, RowError, TemplateError
from p3data.templates.choice import RNG_KEY, RowRandom
from p3data.templates.limits import Budget, LimitExceeded, output, start_render
from p3data.templates.model import Template
from p3data.templates.rewriter import limit_template
from p3data.templates.sandbox import ENVIRONMENT, LENIENT_ENVIRONMENT

TEXT_VAR_LENGTH = 2048
SEPARATOR = "|||"
PIPE_PROTECTOR = "3ed2dface8203c4c9dfb1a5dc58e41e0"
NO_LABEL = "<NO LABEL>"
RESERVED_FIELD = "answer_choices"

# Why a (row, template) pair produced no example.
NO_SEPARATOR = "no_separator"  # one part: e.g. the whole template sits in a false {% if %}
EXTRA_SEPARATOR = "extra_separator"  # more than two parts
EMPTY_INPUTS = "empty_inputs"
RENDER_ERROR = "render_error"  # the template failed on this row: the row is dropped
# xP3's rule only:
BLANK = "blank"  # the render is blank: the fork's `['']`
EMPTY_TARGETS = "empty_targets"
# An exception that made xP3's recipe drop the whole (config, split, template) file, not only
# the row (any but a ValueError): the caller chooses which to drop, and counts it.
TEMPLATE_SPLIT_ERROR = "template_split_error"
STEP_DROPPED = "dataset_step"  # the dataset's step (xP3's recipe) keeps no such row

# A dataset's step on each row before templating: (row, *, config, index, seed) -> the row to
# render, or None to drop it (xP3's `xp3_recipe.steps.STEPS`; T0's tasks have none).
RowStep = Callable[..., "dict[str, Any] | None"]


@dataclass(frozen=True, slots=True)
class Rendered:
    """A kept example."""

    index: int
    inputs: str
    targets: str
    answer_choices: list[str] | None


@dataclass(frozen=True, slots=True)
class Dropped:
    """A (row, template) pair that yields no example, and why."""

    index: int
    reason: str
    error: RowError | None = None


Outcome = Rendered | Dropped


def stepped(row: Mapping[str, Any], step: RowStep | None, *, config: str | None, index: int,
            seed: int) -> Mapping[str, Any] | Dropped:
    """The row after its dataset's step, or why it yields no example: the step drops it
    (`STEP_DROPPED`), or fails on it (`RENDER_ERROR`, naming the row)."""
    if step is None:
        return row
    try:
        kept = step(row, config=config, index=index, seed=seed)
    except RowError as err:
        return Dropped(index, RENDER_ERROR, err)
    return Dropped(index, STEP_DROPPED) if kept is None else kept


def prepare_row(row: Mapping[str, Any]) -> dict[str, Any]:
    """T0's `removeHyphen` on keys, then promptsource's `|||` protection of string values."""
    prepared = {}
    for key, value in row.items():
        if "-" in key:
            key = key.replace("-", "_")
        if isinstance(value, str) and SEPARATOR in value:
            value = value.replace(SEPARATOR, PIPE_PROTECTOR)
        prepared[key] = value
    return prepared


def _unprotect(text: str) -> str:
    return text.replace(PIPE_PROTECTOR, SEPARATOR)


def _with_truncation(jinja: str) -> str:
    return jinja.replace("}}", f" | string | truncate({TEXT_VAR_LENGTH}) }}}}")


@dataclass(frozen=True)
class T0Rule:
    """promptsource 0.1.0's `Template.apply` + T0's `apply_template`: 2 stripped parts,
    non-empty inputs, an empty target becomes `<NO LABEL>`, the answer choices kept; any
    failure drops the row."""

    lenient_jinja: ClassVar[bool] = False  # a name the row lacks fails (p3data's sandbox)
    keeps_choices: ClassVar[bool] = True  # its examples carry the template's answer choices

    def outcome(self, text: str, index: int, choices: list[str] | None) -> Outcome:
        parts = text.split(SEPARATOR)
        if len(parts) != 2:
            return Dropped(index, NO_SEPARATOR if len(parts) == 1 else EXTRA_SEPARATOR)
        inputs = _unprotect(parts[0]).strip()
        if not inputs:
            return Dropped(index, EMPTY_INPUTS)
        targets = _unprotect(parts[1]).strip() or NO_LABEL
        return Rendered(index, inputs, targets, choices or None)

    def failure_reason(self, error: Exception) -> str:
        return RENDER_ERROR


T0_RULE = T0Rule()


@dataclass(frozen=True)
class XP3Rule:
    """The xP3 fork's `Template.apply` + xP3's recipe (`apply_template`'s map and filter).

    `strip_connection` is the fork's: True strips every part; False (the recipe's for the
    `code` folder) keeps the space or newline between inputs and target. Kept: exactly one
    target, inputs and target non-empty; no `<NO LABEL>`, no answer choices. A ValueError
    drops the row; any other exception made the recipe drop the whole (config, split,
    template) file: `TEMPLATE_SPLIT_ERROR`. Jinja's leniency is the fork's: names the row
    lacks, and `random` of an empty sequence, render as "".
    """

    strip_connection: bool = True
    lenient_jinja: ClassVar[bool] = True
    keeps_choices: ClassVar[bool] = False

    def outcome(self, text: str, index: int, choices: list[str] | None) -> Outcome:
        parts = [_unprotect(part) for part in text.split(SEPARATOR)]
        if self.strip_connection:
            parts = [part.strip() for part in parts]
        if parts == [""]:
            return Dropped(index, BLANK)
        if len(parts) < 2:
            return Dropped(index, NO_SEPARATOR)  # the fork's ValueError
        inputs, targets = parts[0], parts[1:]
        if not self.strip_connection:
            inputs, targets = self._connected(inputs, targets)
        if len(targets) > 1:
            return Dropped(index, EXTRA_SEPARATOR)
        if not inputs:
            return Dropped(index, EMPTY_INPUTS)
        if not targets[0]:
            return Dropped(index, EMPTY_TARGETS)
        return Rendered(index, inputs, targets[0], None)

    @staticmethod
    def _connected(inputs: str, targets: list[str]) -> tuple[str, list[str]]:
        """The fork's unstripped connection: one space less when the inputs end in one and
        every target starts with one, then inputs lstripped, targets rstripped. The fork reads
        the last character of the inputs, and the first of each target up to one that does not
        start with a space: an empty one there is its IndexError, raised here too."""
        if not inputs:
            raise IndexError("the inputs are empty: the fork's apply without strip_connection "
                             "reads their last character")
        if inputs[-1] == " ":
            for target in targets:
                if not target:
                    raise IndexError("a target is empty: the fork's apply without "
                                     "strip_connection reads its first character")
                if target[0] != " ":
                    break
            else:
                inputs = inputs[:-1]
        return inputs.lstrip(), [target.rstrip() for target in targets]

    def failure_reason(self, error: Exception) -> str:
        return RENDER_ERROR if isinstance(error, ValueError) else TEMPLATE_SPLIT_ERROR


RowRule = T0Rule | XP3Rule


def _uses_choice(ast: nodes.Template) -> bool:
    return any(node.name in ("choice", "random") for node in ast.find_all(nodes.Filter))


def _compiled(ast: nodes.Template, rule: RowRule) -> JinjaTemplate:
    """The template compiled to run under the render limits, its globals a plain dict (they
    are all the environment's): Jinja copies their names into a set at each render."""
    environment = LENIENT_ENVIRONMENT if rule.lenient_jinja else ENVIRONMENT
    template = environment.from_string(limit_template(ast, environment))
    template.globals = dict(template.globals)
    return template


def _run(template: JinjaTemplate, context: dict[str, Any], budget: Budget) -> str:
    """`Template.render` without its copies (the row's context dict is used as it is), under
    the budget `start_render` gave."""
    return output(list(template.root_render_func(template.new_context(context, shared=True))),
                  budget)


class CompiledTemplate:
    """One template, parsed and compiled once, rendering any number of rows."""

    def __init__(self, template: Template, seed: int = 0, *, rule: RowRule = T0_RULE):
        self.template = template
        self.seed = seed
        self.rule = rule
        body_ast = self._parse(_with_truncation(template.jinja), "jinja")
        self.variables = frozenset(meta.find_undeclared_variables(body_ast))
        self._draws = _uses_choice(body_ast)
        self._choices = None
        self.fixed_answer_choices: list[str] | None = None
        start_render()  # compiling evaluates constant parts
        self._body = _compiled(body_ast, rule)
        self._globals = self._body.globals  # merged into each row's context once
        if template.answer_choices is not None:
            choices_ast = self._parse(template.answer_choices, "answer_choices")
            choice_vars = meta.find_undeclared_variables(choices_ast)
            self.variables |= choice_vars
            self._draws |= _uses_choice(choices_ast)
            fixed = not choice_vars and not _uses_choice(choices_ast)
            try:
                budget = start_render()
                self._choices = _compiled(choices_ast, rule)
                if fixed:
                    self.fixed_answer_choices = self._split_choices(
                        _run(self._choices, dict(self._globals), budget))
            except LimitExceeded as err:
                raise TemplateError(self.template.where, f"answer_choices: {err}") from None
            except Exception as err:  # noqa: BLE001 - a broken template, not a p3data bug
                raise TemplateError(self.template.where, f"answer_choices cannot be rendered: "
                                    f"{type(err).__name__}: {err}") from None

    def _parse(self, source: str, what: str) -> nodes.Template:
        try:
            return ENVIRONMENT.parse(source)
        except TemplateSyntaxError as err:
            raise TemplateError(
                self.template.where, f"Jinja syntax error in {what}, line {err.lineno}: {err}"
            ) from None

    @staticmethod
    def _split_choices(text: str) -> list[str]:
        return [_unprotect(part.strip()) for part in text.split(SEPARATOR)]

    def render_prepared(self, prepared: Mapping[str, Any], index: int) -> Outcome:
        """Apply the template and the row rule to a row already passed through `prepare_row`."""
        try:
            if RESERVED_FIELD in prepared:
                raise RowError(
                    self.template.where, index, "rows may not have this field", RESERVED_FIELD
                )
            context = {**self._globals, **prepared}
            if self._draws:
                context[RNG_KEY] = RowRandom(self.template.id, index, self.seed)
            budget = start_render(prepared)
            if self._choices is not None and self.fixed_answer_choices is None:
                choices = self._split_choices(_run(self._choices, context, budget))
            else:
                choices = self.fixed_answer_choices
            context[RESERVED_FIELD] = choices
            return self.rule.outcome(_run(self._body, context, budget), index, choices)
        except RowError as err:
            return Dropped(index, RENDER_ERROR, err)
        except LimitExceeded as err:
            error = RenderLimitError(self.template.where, index, str(err))
            return Dropped(index, RENDER_ERROR, error)
        except Exception as err:  # noqa: BLE001 - any template failure is this row's problem
            return Dropped(index, self.rule.failure_reason(err),
                           self._row_error(prepared, index, err))

    def render(self, row: Mapping[str, Any], index: int = 0) -> Outcome:
        return self.render_prepared(prepare_row(row), index)

    def _row_error(self, prepared: Mapping[str, Any], index: int, err: Exception) -> RowError:
        """Name the field behind a failure: a missing one, or a referenced field that is None."""
        reason = f"{type(err).__name__}: {err}"
        if isinstance(err, UndefinedError):
            missing = sorted(name for name in self.variables if name not in prepared)
            for name in missing:
                if f"'{name}'" in str(err):
                    return RowError(self.template.where, index, "the row has no such field", name)
        nones = sorted(name for name in self.variables if prepared.get(name, 0) is None)
        return RowError(
            self.template.where,
            index,
            reason + (" (the field is None)" if nones else ""),
            ", ".join(nones) or None,
        )


@functools.lru_cache(maxsize=4096)  # more than all of P3's templates
def compiled_template(template: Template, seed: int = 0,
                      rule: RowRule = T0_RULE) -> CompiledTemplate:
    """`CompiledTemplate(template, seed, rule=rule)`, compiled once per process: a cache
    worker renders many source shards of the same datasets, and compiling a template costs
    more than rendering a small shard's rows through it. A compiled template keeps no state between
    rows, so sharing it changes no output."""
    return CompiledTemplate(template, seed, rule=rule)


# A template that exceeds its limits on each of its first rows would spend up to its time
# limit on every row of the split: after this many it is taken out as broken.
LIMIT_STRIKES = 10


class DatasetRenderer:
    """All templates of one dataset (config `config`) over one stream of rows: each row is
    passed through the dataset's `step` and prepared once.

    `broken` holds the templates that cannot render: those that do not compile, and those
    taken out after exceeding their limits on each of their first LIMIT_STRIKES rows.
    """

    def __init__(self, templates: Iterable[Template], seed: int = 0, *, rule: RowRule = T0_RULE,
                 step: RowStep | None = None, config: str | None = None):
        self.seed, self.step, self.config = seed, step, config
        self.templates: dict[str, CompiledTemplate] = {}
        self.broken: dict[str, TemplateError] = {}
        self._strikes: dict[str, int] = {}  # limit errors before any other outcome
        for template in templates:
            try:
                self.templates[template.name] = compiled_template(template, seed, rule)
                self._strikes[template.name] = 0
            except TemplateError as err:
                self.broken[template.name] = err

    def render_batch(
        self, rows: Sequence[Mapping[str, Any]], start: int = 0
    ) -> dict[str, list[Outcome]]:
        """Outcomes per template name, one per row, rows numbered from `start` (templates taken
        out during the batch get a `Dropped` for each row they did not render)."""
        return dict(self.render_each(rows, start))

    def render_each(
        self, rows: Sequence[Mapping[str, Any]], start: int = 0
    ) -> Iterator[tuple[str, list[Outcome]]]:
        """`render_batch`'s outcomes a template at a time: a caller that writes each before
        the next holds one template's prompts, not those of all ~10. A row the step drops (or
        fails on) is its `Dropped` for every template."""
        prepared = [row if isinstance(row, Dropped) else prepare_row(row) for row in (
            stepped(row, self.step, config=self.config, index=start + i, seed=self.seed)
            for i, row in enumerate(rows))]
        for name in list(self.templates):
            yield name, self._render(name, prepared, start)

    def _render(self, name: str, prepared: list[dict[str, Any] | Dropped],
                start: int) -> list[Outcome]:
        compiled = self.templates[name]
        outcomes: list[Outcome] = []
        for i, row in enumerate(prepared):
            if isinstance(row, Dropped):  # the step's: no render, no strike
                outcomes.append(row)
                continue
            outcome = compiled.render_prepared(row, start + i)
            outcomes.append(outcome)
            if name in self._strikes:
                if not isinstance(outcome, Dropped) or not isinstance(outcome.error,
                                                                       RenderLimitError):
                    del self._strikes[name]  # it renders rows: no more counting
                elif (strikes := self._strikes[name] + 1) < LIMIT_STRIKES:
                    self._strikes[name] = strikes
                else:
                    return outcomes + self._take_out(name, outcome.error, prepared[i + 1:],
                                                     start + i + 1)
        return outcomes

    def _take_out(self, name: str, error: RenderLimitError, rest: list[dict[str, Any] | Dropped],
                  first: int) -> list[Outcome]:
        where = self.templates.pop(name).template.where
        self.broken[name] = TemplateError(
            where, f"taken out after exceeding its limits on each of its first {LIMIT_STRIKES} "
                   f"rows: {error.reason}")
        return [row if isinstance(row, Dropped) else Dropped(first + k, RENDER_ERROR, (
            RenderLimitError(where, first + k, "not rendered: the template was taken out")))
            for k, row in enumerate(rest)]
