"""Render rows through templates exactly as promptsource 0.1.0 + T0 did, compiled once.

promptsource's `Template.apply` recompiles the template for every row. Here each template is
compiled once, rows are prepared once per batch (T0's hyphen renaming, promptsource's `|||`
protection) and shared by every template of the dataset.

Semantics kept from promptsource 0.1.0 `Template.apply` and T0's `apply_template`:
- every `}}` in the source becomes ` | string | truncate(2048) }}` (answer_choices are not cut);
- a literal `|||` inside a top-level string field is protected while rendering;
- `answer_choices` is injected as the rendered, `|||`-split, stripped answer-choice list;
- the output is split on `|||` and each part stripped;
- a row is kept only with exactly 2 parts and non-empty inputs; an empty target becomes
  `<NO LABEL>`; the answer-choice list is kept with the row.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from jinja2 import Template as JinjaTemplate
from jinja2 import TemplateSyntaxError, UndefinedError, meta, nodes

from p3data.errors import RowError, TemplateError
from p3data.templates.model import Template
from p3data.templates.sandbox import ENVIRONMENT, RNG_KEY, RowRandom

TEXT_VAR_LENGTH = 2048
SEPARATOR = "|||"
PIPE_PROTECTOR = "3ed2dface8203c4c9dfb1a5dc58e41e0"
NO_LABEL = "<NO LABEL>"
RESERVED_FIELD = "answer_choices"

# Why a (row, template) pair produced no example.
NO_SEPARATOR = "no_separator"  # one part: e.g. the whole template sits in a false {% if %}
EXTRA_SEPARATOR = "extra_separator"  # more than two parts
EMPTY_INPUTS = "empty_inputs"
RENDER_ERROR = "render_error"
DROP_REASONS = (NO_SEPARATOR, EXTRA_SEPARATOR, EMPTY_INPUTS, RENDER_ERROR)


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


def _uses_choice(ast: nodes.Template) -> bool:
    return any(node.name in ("choice", "random") for node in ast.find_all(nodes.Filter))


def _run(template: JinjaTemplate, context: dict[str, Any]) -> str:
    """`Template.render` without its copies: the row's context dict is used as it is."""
    return ENVIRONMENT.concat(template.root_render_func(template.new_context(context, shared=True)))


class CompiledTemplate:
    """One template, parsed and compiled once, rendering any number of rows."""

    def __init__(self, template: Template, seed: int = 0):
        self.template = template
        self.seed = seed
        body_ast = self._parse(_with_truncation(template.jinja), "jinja")
        self._body = ENVIRONMENT.from_string(body_ast)
        self._globals = dict(self._body.globals)  # merged into each row's context once
        self.variables = frozenset(meta.find_undeclared_variables(body_ast))
        self._draws = _uses_choice(body_ast)
        self._choices = None
        self.fixed_answer_choices: list[str] | None = None
        if template.answer_choices is not None:
            choices_ast = self._parse(template.answer_choices, "answer_choices")
            self._choices = ENVIRONMENT.from_string(choices_ast)
            choice_vars = meta.find_undeclared_variables(choices_ast)
            self.variables |= choice_vars
            self._draws |= _uses_choice(choices_ast)
            if not choice_vars and not _uses_choice(choices_ast):
                self.fixed_answer_choices = self._split_choices(self._choices.render())

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
        """Apply the template and T0's row rule to a row already passed through `prepare_row`."""
        try:
            if RESERVED_FIELD in prepared:
                raise RowError(
                    self.template.where, index, "rows may not have this field", RESERVED_FIELD
                )
            context = {**self._globals, **prepared}
            if self._draws:
                context[RNG_KEY] = RowRandom(self.template.id, index, self.seed)
            if self._choices is not None and self.fixed_answer_choices is None:
                choices = self._split_choices(_run(self._choices, context))
            else:
                choices = self.fixed_answer_choices
            context[RESERVED_FIELD] = choices
            parts = _run(self._body, context).split(SEPARATOR)
        except RowError as err:
            return Dropped(index, RENDER_ERROR, err)
        except Exception as err:  # noqa: BLE001 - any template failure is this row's problem
            return Dropped(index, RENDER_ERROR, self._row_error(prepared, index, err))
        if len(parts) != 2:
            return Dropped(index, NO_SEPARATOR if len(parts) == 1 else EXTRA_SEPARATOR)
        inputs = _unprotect(parts[0]).strip()
        if not inputs:
            return Dropped(index, EMPTY_INPUTS)
        targets = _unprotect(parts[1]).strip() or NO_LABEL
        return Rendered(index, inputs, targets, choices or None)

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


class DatasetRenderer:
    """All templates of one dataset over one stream of rows: each row is prepared once."""

    def __init__(self, templates: Iterable[Template], seed: int = 0):
        self.templates: dict[str, CompiledTemplate] = {}
        self.broken: dict[str, TemplateError] = {}
        for template in templates:
            try:
                self.templates[template.name] = CompiledTemplate(template, seed)
            except TemplateError as err:
                self.broken[template.name] = err

    def render_batch(
        self, rows: Sequence[Mapping[str, Any]], start: int = 0
    ) -> dict[str, list[Outcome]]:
        """Outcomes per template name, one per row, rows numbered from `start`."""
        prepared = [prepare_row(row) for row in rows]
        return {
            name: [compiled.render_prepared(row, start + i) for i, row in enumerate(prepared)]
            for name, compiled in self.templates.items()
        }
