"""`lint`: find template bugs by reading the files, before hours of caching find them for you.

A template that reads a field its dataset lacks, has no `|||`, names an unknown metric or runs
past the render limits fails on every row or at evaluation time; here each shows up as one line
naming the file, the template and the reason (what only risks the limits is a warning).
Templates are layered like `TemplateCollection` does (promptsource, then the project's folder,
then the environment's, then the given paths), so a new template that reuses a name of an
installed one is caught too.
"""

from __future__ import annotations

import math
import operator
import os
import string
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import jinja2
import yaml
from jinja2 import nodes

from p3data.dataset_key import DatasetKey
from p3data.datasets.catalog import Catalog
from p3data.errors import TemplateError, TemplateFileError
from p3data.templates import Template
from p3data.templates.collection import TEMPLATE_FILENAME, default_sources
from p3data.templates.limits import (
    MAX_INT_DIGITS,
    MAX_STEPS,
    int_digits,
    largest_number,
    printf_widths,
)
from p3data.templates.render import RESERVED_FIELD, SEPARATOR, CompiledTemplate
from p3data.templates.sandbox import ENVIRONMENT
from p3data.templates.yaml_io import read_template_file

ERROR = "error"
WARNING = "warning"
# promptsource lists it among its metric names, though T0 maps it to no function.
EXTRA_METRICS = frozenset({"Mean Reciprocal Rank"})
# Render limits, read statically: a count or size above this is worth a look (promptsource's
# largest is 1,200); loops nested deeper than this multiply their work (promptsource: 2).
LARGE_CONSTANT = 100_000
LARGE_EXPONENT = 1_000
MAX_LOOP_NESTING = 2


@dataclass(frozen=True)
class Problem:
    where: str  # "<file>" or "<file>: template '<name>' (<dataset>[/<subset>])"
    severity: str
    reason: str

    def __str__(self) -> str:
        return f"{self.where}: {self.severity}: {self.reason}"


@dataclass(frozen=True)
class LintResult:
    files: int
    templates: int
    problems: list[Problem]

    @property
    def errors(self) -> int:
        return sum(p.severity == ERROR for p in self.problems)

    @property
    def warnings(self) -> int:
        return sum(p.severity == WARNING for p in self.problems)


def template_files(paths: Iterable[str | os.PathLike]) -> list[Path]:
    """`templates.yaml` files under folders, or the files themselves, in a stable order."""
    found: list[Path] = []
    for path in map(Path, paths):
        if path.is_dir():
            found += sorted(path.rglob(TEMPLATE_FILENAME))
        elif path.is_file():
            found.append(path)
        else:
            raise TemplateFileError(path, "no such file or folder")
    return list(dict.fromkeys(p.resolve() for p in found))


def lint(paths: Sequence[str | os.PathLike] = (), catalog: Catalog | None = None) -> LintResult:
    """Check the given files and folders, or every template source in effect when none."""
    catalog = catalog if catalog is not None else Catalog.load()
    default = template_files(source.root for source in default_sources())
    checked = template_files(paths) if paths else default
    mine = set(checked)
    context = list(dict.fromkeys([*default, *checked]))  # the layering order of the collection
    known_metrics = _known_metrics()
    problems: list[Problem] = []
    loaded: list[Template] = []
    count = 0
    for path in context:
        try:
            _, _, templates = read_template_file(path)
        except TemplateFileError as err:
            if path in mine:
                problems.append(Problem(str(path), ERROR, err.reason))
            continue
        loaded += templates
        if path not in mine:
            continue
        count += len(templates)
        problems += [Problem(str(path), ERROR, reason) for reason in _duplicate_keys(path)]
        for template in templates:
            features = _features(catalog, template)
            problems += [Problem(template.where, severity, reason) for severity, reason
                         in check_template(template, features, known_metrics)]
    problems += _name_clashes(loaded, mine)
    return LintResult(len(checked), count, problems)


def _known_metrics() -> frozenset[str]:
    from p3data.metrics import GET_METRICS  # scipy and scikit-learn: only when linting

    return frozenset(GET_METRICS) | EXTRA_METRICS


def _features(catalog: Catalog, template: Template) -> frozenset[str] | None:
    """Names a row offers a template (hyphens renamed as T0 did); None outside the catalog."""
    if template.key not in catalog:
        return None
    entry = catalog[template.key]
    return frozenset(name.replace("-", "_") for name in entry.features)


def check_template(
    template: Template, features: frozenset[str] | None, known_metrics: frozenset[str]
) -> Iterator[tuple[str, str]]:
    """(severity, reason) for everything wrong with one template on its own."""
    if template.name != template.name.strip():
        yield WARNING, "the name starts or ends with whitespace: selecting it by name needs it too"
    if SEPARATOR not in template.jinja:
        yield ERROR, f"no '{SEPARATOR}' between inputs and targets: every row would be dropped"
    elif not any(mark in template.jinja.rsplit(SEPARATOR, 1)[1] for mark in ("{{", "{%")):
        yield WARNING, "the target has no Jinja expression: every example gets the same target"
    yield from _check_metadata(template, known_metrics)
    asts: dict[str, nodes.Template] = {}
    for part, source in (("jinja", template.jinja), ("answer_choices", template.answer_choices)):
        if source is None:
            continue
        try:
            asts[part] = ENVIRONMENT.parse(source)
        except jinja2.TemplateSyntaxError as err:
            yield ERROR, f"Jinja syntax error in {part}, line {err.lineno}: {err.message}"
    if len(asts) < 1 + (template.answer_choices is not None):
        return
    for part, ast in asts.items():
        yield from dict.fromkeys(_limit_problems(ast, part))  # once each
    unknown: dict[str, None] = {}  # ordered and without repeats
    for part, ast in asts.items():
        for node in ast.find_all((nodes.Filter, nodes.Test)):
            kind, known = (("filter", ENVIRONMENT.filters) if isinstance(node, nodes.Filter)
                           else ("test", ENVIRONMENT.tests))
            if node.name not in known:
                unknown[f"unknown Jinja {kind} {node.name!r} in {part}"] = None
    if unknown:  # even inside an {% if %}, where Jinja would only fail on rendering
        yield from ((ERROR, reason) for reason in unknown)
        return
    try:
        compiled = CompiledTemplate(template)
    except (TemplateError, jinja2.TemplateError) as err:
        yield ERROR, f"does not compile: {getattr(err, 'reason', err)}"
        return
    except Exception as err:  # noqa: BLE001 - a fixed answer_choices is rendered on compile
        yield ERROR, f"answer_choices does not render: {type(err).__name__}: {err}"
        return
    if template.answer_choices is None and RESERVED_FIELD in compiled.variables:
        yield ERROR, "uses answer_choices but defines none: it renders as nothing"
    if features is not None:
        allowed = features | {RESERVED_FIELD} | set(ENVIRONMENT.globals)
        for name in sorted(compiled.variables - allowed):
            yield ERROR, (f"uses {name!r}, which rows of {template.key} do not have "
                          f"(fields: {', '.join(sorted(features))})")
    if compiled.fixed_answer_choices is not None and not all(compiled.fixed_answer_choices):
        yield ERROR, f"answer_choices has an empty choice: {compiled.fixed_answer_choices}"


def _limit_problems(ast: nodes.Template, part: str) -> Iterator[tuple[str, str]]:
    """What, read without a row, makes renders fail a render limit (errors) or risks it
    (warnings): big constants in `*`, `**`, `range()` and sizes, deep or recursive loops,
    macros calling themselves."""
    limits = "the render limits"
    for node in ast.find_all(nodes.Pow):
        value, exponent = _constant(node), _constant(node.right)
        if value == math.inf:
            yield ERROR, (f"'**' in {part} makes an integer of over {MAX_INT_DIGITS:,} digits: "
                          "every row would fail")
        elif exponent is not None and exponent >= LARGE_EXPONENT:
            yield WARNING, f"'**' with an exponent of {exponent:,} in {part} may exceed {limits}"
    for node in ast.find_all(nodes.Mul):
        factors = [_constant(side) for side in (node.left, node.right)]
        if math.inf in factors or _constant(node) == math.inf:
            yield ERROR, (f"'*' in {part} makes an integer of over {MAX_INT_DIGITS:,} digits: "
                          "every row would fail")
        elif any(f is not None and f >= LARGE_CONSTANT for f in factors):
            yield WARNING, f"'*' by {max(f for f in factors if f):,} in {part} may exceed {limits}"
    for node in ast.find_all((nodes.Call, nodes.Filter)):
        yield from _call_problems(node, part)
    for node in ast.find_all(nodes.Mod):
        if isinstance(node.left, nodes.Const) and isinstance(node.left.value, str):
            width = max(printf_widths(node.left.value), default=0)
            if width >= LARGE_CONSTANT:
                yield WARNING, f"a '%' format width of {width:,} in {part} may exceed {limits}"
    depth = _loop_depth(ast)
    if depth > MAX_LOOP_NESTING:
        yield WARNING, f"loops nested {depth} deep in {part}: their work multiplies"
    if any(loop.recursive for loop in ast.find_all(nodes.For)):
        yield WARNING, f"a recursive loop in {part}: only {limits} bound its work"
    for name in _recursive_macros(ast):
        yield WARNING, f"macro {name!r} in {part} calls itself: only {limits} bound its work"


def _constant(node: nodes.Node) -> int | float | None:
    """The number a constant expression makes (inf past what a render may compute), or None."""
    if isinstance(node, nodes.Const):
        return node.value if type(node.value) in (int, float) else None
    if isinstance(node, nodes.Neg):
        value = _constant(node.node)
        return None if value is None else -value
    if not isinstance(node, (nodes.Add, nodes.Sub, nodes.Mul, nodes.Pow)):
        return None
    left, right = _constant(node.left), _constant(node.right)
    if left is None or right is None:
        return None
    if math.inf in (left, right) or (isinstance(node, (nodes.Mul, nodes.Pow)) and int_digits(
            node.operator, left, right) > MAX_INT_DIGITS):
        return math.inf
    try:
        return _ARITHMETIC[node.operator](left, right)
    except (OverflowError, ZeroDivisionError):
        return math.inf


_ARITHMETIC = {"+": operator.add, "-": operator.sub, "*": operator.mul, "**": operator.pow}


def _call_problems(node: nodes.Call | nodes.Filter, part: str) -> Iterator[tuple[str, str]]:
    """A large constant count or size passed to a call or filter, or as a format width."""
    called = node.node
    if isinstance(node, nodes.Filter):
        what = f"filter {node.name!r}"
    elif isinstance(called, nodes.Name):
        what = f"{called.name}()"
    elif isinstance(called, nodes.Getattr):
        what = f".{called.attr}()"
    else:
        what = "a call"
    values = [_constant(arg) for arg in [*node.args, *(kw.value for kw in node.kwargs)]]
    values = [v for v in values if v is not None]
    if isinstance(called, nodes.Getattr) and called.attr in ("format", "format_map") \
            and isinstance(called.node, nodes.Const) and isinstance(called.node.value, str):
        values += _format_widths(called.node.value)
    if isinstance(node, nodes.Filter) and node.name == "format" \
            and isinstance(called, nodes.Const) and isinstance(called.value, str):
        values += printf_widths(called.value)
    if what == "range()" and values and all(isinstance(v, int) for v in values):
        try:
            numbers = range(*values)
        except (TypeError, ValueError):  # range() itself will say why
            numbers = range(0)
        count = max(0, -((numbers.start - numbers.stop) // numbers.step))  # len() may overflow
        if count > MAX_STEPS:
            yield ERROR, (f"range() of {count:,} numbers in {part}: every row would exceed the "
                          f"work budget of {MAX_STEPS:,} steps")
            return
    largest = max(values, default=0)
    if largest >= LARGE_CONSTANT:
        shown = f"{largest:,}" if largest != math.inf else "a number beyond the render limits"
        yield WARNING, f"{shown} given to {what} in {part} may exceed the render limits"


def _format_widths(text: str) -> list[int]:
    """The widths and precisions of a `str.format` template's fields (nested ones aside)."""
    try:
        return [largest_number(spec) for _, _, spec, _ in string.Formatter().parse(text) if spec]
    except ValueError:  # not a format template: format() itself will say so
        return []


def _loop_depth(node: nodes.Node) -> int:
    return max((_loop_depth(child) + isinstance(child, nodes.For)
                for child in node.iter_child_nodes()), default=0)


def _recursive_macros(ast: nodes.Template) -> list[str]:
    """Macros that call themselves, directly or through others."""
    calls = {macro.name: {call.node.name for call in macro.find_all(nodes.Call)
                          if isinstance(call.node, nodes.Name)}
             for macro in ast.find_all(nodes.Macro)}
    recursive = []
    for name in calls:
        seen, todo = set(), list(calls[name])
        while todo:
            callee = todo.pop()
            if callee not in seen:
                seen.add(callee)
                todo += calls.get(callee, ())
        if name in seen:
            recursive.append(name)
    return recursive


def _check_metadata(template: Template, known_metrics: frozenset[str]) -> Iterator[tuple[str, str]]:
    metadata = template.metadata
    for name in ("original_task", "choices_in_prompt"):
        value = getattr(metadata, name)
        if value is not None and not isinstance(value, bool):
            yield ERROR, f"metadata {name} must be true, false or empty, not {value!r}"
    for metric in metadata.metrics or ():
        if metric not in known_metrics:
            yield ERROR, (f"unknown metric {metric!r} (known: "
                          f"{', '.join(sorted(known_metrics))})")


def _duplicate_keys(path: Path) -> Iterator[str]:
    """Keys repeated in one YAML mapping: the loader silently keeps only the last one."""
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    pending = [yaml.compose(path.read_text(encoding="utf-8"), Loader=loader)]
    while pending:
        node = pending.pop()
        if isinstance(node, yaml.MappingNode):
            seen: set[str] = set()
            for key, value in node.value:
                if isinstance(key, yaml.ScalarNode):
                    if key.value in seen:
                        yield (f"line {key.start_mark.line + 1}: key {key.value!r} appears twice;"
                               " only the last one is kept")
                    seen.add(key.value)
                pending.append(value)
        elif isinstance(node, yaml.SequenceNode):
            pending += node.value


def _name_clashes(loaded: Sequence[Template], checked: set[Path]) -> Iterator[Problem]:
    """Two templates of one dataset with one name and different ids, once ids have overridden
    earlier ones: loading that dataset fails. Reported on a checked file's template."""
    by_key: dict[DatasetKey, dict[str, Template]] = {}
    for template in loaded:
        by_key.setdefault(template.key, {})[template.id] = template
    for by_id in by_key.values():
        by_name: dict[str, Template] = {}
        for template in by_id.values():
            other = by_name.setdefault(template.name, template)
            if other is template:
                continue
            if template.source not in checked:
                template, other = other, template
            if template.source in checked:
                yield Problem(template.where, ERROR, (
                    f"name also used by template {other.id} in {other.source}; give one of "
                    "them another name, or the same id to replace the other"))
