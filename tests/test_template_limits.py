"""Render limits: each way a template can run away fails its own row, quickly, naming the limit."""

from __future__ import annotations

import pytest

from p3data.dataset_key import DatasetKey
from p3data.datasets.samples import SAMPLES_DIR, sample_rows, sample_splits
from p3data.errors import RenderLimitError, TemplateError
from p3data.templates import Template, limits
from p3data.templates.collection import TemplateCollection
from p3data.templates.render import (
    RENDER_ERROR,
    CompiledTemplate,
    DatasetRenderer,
    Dropped,
    Rendered,
)

ROW = {"premise": "The man turned on the faucet.", "text": "a b c", "n": 3}
BUDGET = "work budget of 1,000,000 steps"
SIZE = "exceeds the limit of 10,000,000"
LIMIT = "10,000,000"  # the limit of one value, or of all the values of a row together


def template(jinja: str, answer_choices: str | None = None, name: str = "t") -> Template:
    return Template(id=name, name=name, jinja=jinja, dataset="toy", answer_choices=answer_choices)


def render(jinja: str, row: dict | None = None, answer_choices: str | None = None):
    return CompiledTemplate(template(jinja, answer_choices)).render(row or ROW, 7)


def assert_limited(outcome, *phrases: str) -> RenderLimitError:
    assert isinstance(outcome, Dropped) and outcome.reason == RENDER_ERROR, outcome
    error = outcome.error
    assert isinstance(error, RenderLimitError), error
    assert error.row == 7 and "template 't' (toy), row 7: " in str(error)
    for phrase in phrases:
        assert phrase in error.reason, error.reason
    return error


@pytest.mark.parametrize("jinja", [
    "{% for i in range(100000) %}{% for j in range(100000) %}x{% endfor %}{% endfor %} ||| y",
    # items skipped by a loop's condition still cost a step each
    "{% set xs = [0] * 100000 %}{% for a in xs %}{% for b in xs if b %}x{% endfor %}{% endfor %}"
    " ||| y",
    "{% for a in range(3000) %}{% for b in range(3000) %}{% endfor %}{% endfor %} ||| y",
    "{% for a in zip(range(90000), range(90000)) %}{% for b in zip(range(90000)) %}{% endfor %}"
    "{% endfor %} ||| y",  # iterators without a length are counted item by item
    "{% for x in [1, 2, 3, 4, 5, 6, 7, 8] recursive %}"
    "{% if loop.depth < 10 %}{{ loop([1, 2, 3, 4, 5, 6, 7, 8]) }}{% endif %}{% endfor %} ||| y",
    "{% macro m(n) %}{% if n %}{{ m(n - 1) }}{{ m(n - 1) }}{% endif %}{% endmacro %}{{ m(40) }}"
    " ||| y",
    "{% for i in range(10000000) %}{% endfor %} ||| y",
    # a macro called by sort(), not by the template, still pays for its body
    "{% macro key(x) %}{% endmacro %}{% set xs = [0] * 1000000 %}{{ xs.sort(key=key) }} ||| y",
    "{{ range(10**20) | length }} ||| y",
])
def test_runaway_work_stops_at_the_budget(jinja, monkeypatch):
    monkeypatch.setattr(limits, "MAX_SECONDS", 600.0)  # a loaded machine: the budget stops it
    assert_limited(render(jinja), BUDGET)


@pytest.mark.parametrize("jinja", [
    "{% macro m() %}{{ m() }}{% endmacro %}{{ m() }} ||| y",
    "{% for x in [1] recursive %}{{ loop([1]) }}{% endfor %} ||| y",
])
def test_endless_recursion_stops_at_the_call_depth(jinja):
    assert_limited(render(jinja), "calls nested more than 100 deep")


def test_the_clock_is_a_backstop(monkeypatch):
    monkeypatch.setattr(limits, "MAX_SECONDS", 0.0)
    assert_limited(render("{% for i in range(5000) %}{% endfor %} ||| y"),
                   "time limit of 0 seconds")
    assert isinstance(render("{% for i in range(100) %}{% endfor %}x ||| y"), Rendered)


def test_the_clock_is_read_during_a_long_loop_of_slow_steps(monkeypatch):
    monkeypatch.setattr(limits, "MAX_SECONDS", 0.0)  # `in` is work that steps do not see
    jinja = ("{% set xs = [0] * 100000 %}{% for x in xs %}{% if 1 in xs %}{% endif %}{% endfor %}"
             " ||| y")
    assert_limited(render(jinja), "time limit of 0 seconds")


# A body's `{{ x }}` becomes `{{ x | string | truncate(2048) }}` (as in promptsource), and the
# filters bind before operators: expressions below are in parentheses.


@pytest.mark.parametrize("jinja, digits", [
    ("{% set y = 9**(9**9) %}{{ y }} ||| y", "'**' would make an integer of 369,693,100 digits"),
    ("{{ (2 ** (10**15)) }} ||| y", "'**' would make an integer of"),
    ("{{ (10**5000 * 10**5000) }} ||| y", "'*' would make an integer of 10,002 digits"),
])
def test_integers_stay_small_enough_to_compute(jinja, digits):
    assert_limited(render(jinja), digits, "over the limit of 10,000")


@pytest.mark.parametrize("jinja, phrase", [
    ("{{ (premise * 30000000) | length }} ||| y", "'*' of 870,000,000"),
    ("{{ ('a' * 10**10) }} ||| y", "'*' of 10,000,000,000"),
    ("{{ ([premise] * 10**9) }} ||| y", "'*'"),
    ("{{ (premise + premise * 400000) }} ||| y", "'*'"),
    ("{{ ('%0999999999d' % 1) }} ||| y", "'%'"),
    ("{{ ('%*d' % (999999999, 1)) }} ||| y", "'%'"),
    ("{{ ('%(a)s' * 100 % {'a': premise * 300000}) }} ||| y", "'%'"),
    ("{{ '%.999999999f' | format(1.5) }} ||| y", "filter 'format'"),
])
def test_operators_refuse_huge_results_before_computing_them(jinja, phrase):
    assert_limited(render(jinja), phrase, SIZE)


@pytest.mark.parametrize("jinja, phrase", [
    ("{{ '{:>999999999}'.format('a') }} ||| y", "a format width of 999,999,999"),
    ("{{ ('{:{w}' ~ '}').format('a', w=10**9) }} ||| y", "a format width"),
    ("{{ '{a:.999999999}'.format_map({'a': 1.5}) }} ||| y", "a format width"),
    ("{{ ('{0}' * 400000).format(premise) }} ||| y", "a formatted string"),
    ("{{ (('{:>{w}' ~ '}') | attr('format'))('a', w=10**9) }} ||| y", "a format width"),
    ("{{ ('{:>999999999}' | safe).format('a') }} ||| y", "a format width"),
    ("{{ 'a'.ljust(10**10) }} ||| y", ".ljust()"),
    ("{% for i in range(2) %}{{ 'a'.ljust(10**10) }}{% endfor %} ||| y", ".ljust()"),
    ("{% for i in range(2) %}{{ (1).to_bytes(length=10**10) }}{% endfor %} ||| y", ".to_bytes()"),
    ("{{ 'ab'.center(10**10) }} ||| y", ".center()"),
    ("{{ '1'.zfill(10**10) }} ||| y", ".zfill()"),
    ("{{ ('a' | safe).center(10**10) }} ||| y", ".center()"),
    ("{{ ('\t' * 1000).expandtabs(10**8) }} ||| y", ".expandtabs()"),
    ("{{ ('x' * 100000).replace('', 'y' * 100000) }} ||| y", ".replace()"),
    ("{{ ('y' * 5000000).join(['a'] * 3) }} ||| y", ".join()"),
    ("{{ ('x' * 100000).translate({120: 'y' * 1000}) }} ||| y", ".translate()"),
    ("{{ (1).to_bytes(10**10, 'big') }} ||| y", ".to_bytes()"),
    ("{{ 'a' | center(10000000000) }} ||| y", "filter 'center'"),
    ("{{ ('a\n' * 1000) | indent(100000) }} ||| y", "filter 'indent'"),
    ("{{ (premise * 1000) | replace('e', premise * 1000) }} ||| y", "filter 'replace'"),
    ("{{ (['a'] * 20) | join(premise * 300000) }} ||| y", "filter 'join'"),
    ("{{ premise | wordwrap(1, wrapstring='x' * 1000000) }} ||| y", "filter 'wordwrap'"),
    ("{{ [[[1]]] | tojson(indent=10**7) }} ||| y", "printing a value"),
    ("{{ [1] | batch(10**10, 'x') | list }} ||| y", "filter 'batch'"),
    ("{{ [1] | slice(10**10) | list }} ||| y", "filter 'slice'"),
    ("{{ ([[1] * 1000000] * 20) | sum(start=[]) }} ||| y", "filter 'sum'"),
    ("{{ lipsum(10**6) }} ||| y", "lipsum()"),
])
def test_calls_and_filters_refuse_huge_results_before_making_them(jinja, phrase):
    assert_limited(render(jinja), phrase, SIZE)


@pytest.mark.parametrize("jinja", [
    # a value doubled in a loop
    "{% set ns = namespace(v=premise) %}{% for i in range(60) %}{% set ns.v = ns.v ~ ns.v %}"
    "{% endfor %}{{ ns.v | length }} ||| y",
    "{% set ns = namespace(v=[1]) %}{% for i in range(60) %}{% set ns.v = ns.v + ns.v %}"
    "{% endfor %}{{ ns.v | length }} ||| y",
    "{% set ns = namespace(v='\"') %}{% for i in range(60) %}{% set ns.v = ns.v | tojson %}"
    "{% endfor %}{{ ns.v | length }} ||| y",
    "{% set l = [premise] %}{% for i in range(60) %}{{ l.extend(l) or '' }}{% endfor %} ||| y",
    "{% set ns = namespace(v=premise) %}{% for i in range(60) %}"
    "{% set ns.v %}{{ ns.v ~ '' }}{{ ns.v ~ '' }}{% endset %}{% endfor %} ||| y",
])
def test_no_chain_of_operations_grows_without_bound(jinja):
    assert_limited(render(jinja), LIMIT)


def test_zip_of_many_counts_the_tuples_it_makes():
    jinja = ("{% set l = [] %}{% set rows = [[1] * 100] * 1000000 %}"
             "{% for t in zip(*rows) %}{{ l.append(t) or '' }}{% endfor %} ||| y")
    assert_limited(render(jinja), "created more than 10,000,000")
    assert render("{{ zip([1, 2], 'ab') | list }} ||| y").inputs == "[(1, 'a'), (2, 'b')]"


@pytest.mark.parametrize("jinja", [
    # shared parts: 2**60 copies of [1] to print, built in 60 steps
    "{% set ns = namespace(v=[1]) %}{% for i in range(60) %}{% set ns.v = [ns.v, ns.v] %}"
    "{% endfor %}{{ ns.v }} ||| y",
    "{% set ns = namespace(v={}) %}{% for i in range(60) %}{% set ns.v = dict(a=ns.v, b=ns.v) %}"
    "{% endfor %}{{ ns.v | string | length }} ||| y",
    "{% set h = namespace(v=none) %}{% for i in range(60) %}"
    "{% set h.v = namespace(a=h.v, b=h.v) %}{% endfor %}{{ 'x' ~ h.v }} ||| y",
    "{% set ns = namespace(v=[1]) %}{% for i in range(60) %}{% set ns.v = (ns.v, ns.v) %}"
    "{% endfor %}{{ ns.v | join(',') }} ||| y",
    "{% set ns = namespace(v=[1]) %}{% for i in range(60) %}{% set ns.v = [ns.v, ns.v] %}"
    "{% endfor %}{{ '%s' % (ns.v,) }} ||| y",
    "{% set ns = namespace(v=[1]) %}{% for i in range(60) %}{% set ns.v = [ns.v, ns.v] %}"
    "{% endfor %}{{ '{}'.format(ns.v) }} ||| y",
])
def test_printing_a_structure_with_shared_parts_is_sized_first(jinja):
    assert_limited(render(jinja), "printing a value of")


def test_deeply_nested_values_are_refused_when_printed():
    jinja = ("{% set ns = namespace(v=1) %}{% for i in range(500) %}{% set ns.v = [ns.v] %}"
             "{% endfor %}{{ ns.v }} ||| y")
    assert_limited(render(jinja), "nested more than 100 levels deep")


def test_many_values_kept_count_against_the_row_total():
    jinja = ("{% set l = [] %}{% for i in range(50) %}{{ l.append(premise * 300000) or '' }}"
             "{% endfor %} ||| y")
    assert_limited(render(jinja), "created more than 10,000,000 characters/items in all")
    literals = ("{% set l = [] %}{% for i in range(100000) %}{{ l.append([" + "i, " * 150
                + "]) or '' }}{% endfor %} ||| y")
    assert_limited(render(literals), "created more than")


@pytest.mark.parametrize("jinja, answer_choices", [
    ("{% for i in range(5000) %}{{ premise }}{% endfor %} ||| y", None),
    ("{% for i in range(200000) %}" + "constant text " * 10 + "{% endfor %} ||| y", None),
    ("{{ premise }} ||| {{ answer_choices[0] }}",
     "{% for i in range(400000) %}{{ premise }}{% endfor %} ||| b"),
])
def test_the_rendered_output_is_capped(jinja, answer_choices):
    row = {"premise": "x" * 2048}  # as long as a body's `{{ }}` prints
    assert_limited(render(jinja, row, answer_choices),
                   "the rendered output of", "characters exceeds the limit of 10,000,000")


def test_the_size_limit_grows_with_the_row():
    jinja = "{{ (text * n) | length }} ||| y"
    assert render(jinja, {"text": "x" * 20_000, "n": 600}) == Rendered(7, "12000000", "y", None)
    assert_limited(render(jinja, {"text": "x" * 20, "n": 600_000}), "'*' of 12,000,000", SIZE)
    assert_limited(render(jinja, {"text": "x" * 20_000, "n": 1_200}),
                   "exceeds the limit of 20,000,000")


def test_constant_parts_are_not_computed_while_compiling():
    compiled = CompiledTemplate(template("{{ 'a' | center(10000000000) }}{{ 9**(9**9) }} ||| y"))
    assert_limited(compiled.render(ROW, 7), "filter 'center'")


def test_fixed_answer_choices_past_a_limit_break_only_their_template():
    hostile = template("{{ premise }} ||| {{ answer_choices[0] }}",
                       "{% for i in range(10**7) %}x{% endfor %} ||| b", name="hostile")
    with pytest.raises(TemplateError, match=f"template 'hostile'.*answer_choices: .*{BUDGET}"):
        CompiledTemplate(hostile)
    renderer = DatasetRenderer([hostile, template("{{ premise }} ||| y", name="good")])
    assert list(renderer.templates) == ["good"] and list(renderer.broken) == ["hostile"]


def test_fixed_answer_choices_that_raise_break_only_their_template():
    broken = template("{{ premise }} ||| a", "{{ 1 / 0 }} ||| b", name="broken")
    renderer = DatasetRenderer([broken, template("{{ premise }} ||| y", name="good")])
    assert list(renderer.templates) == ["good"]
    assert "answer_choices cannot be rendered: ZeroDivisionError" in str(renderer.broken["broken"])


def test_a_template_over_its_limits_on_every_row_is_taken_out():
    """Each limit error may cost up to the time limit, so a template that exceeds its limits on
    each of its first rows is not tried on the thousands that follow."""
    from p3data.templates.render import LIMIT_STRIKES

    renderer = DatasetRenderer([template("{{ (text * 10**9) }} ||| y", name="t"),
                                template("{{ premise }} ||| y", name="good")])
    outcomes = renderer.render_batch([ROW] * (LIMIT_STRIKES + 5), start=0)
    assert all(isinstance(o, Dropped) for o in outcomes["t"])
    assert all("'*'" in o.error.reason for o in outcomes["t"][:LIMIT_STRIKES])
    assert "not rendered" in str(outcomes["t"][LIMIT_STRIKES].error)
    assert "taken out after exceeding its limits" in str(renderer.broken["t"])
    assert list(renderer.render_batch([ROW], start=20)) == ["good"]
    assert len(outcomes["good"]) == LIMIT_STRIKES + 5


def test_a_template_that_renders_some_rows_is_not_taken_out():
    renderer = DatasetRenderer([template("{{ (text * n) }} ||| y", name="t")])
    rows = [ROW] + [{**ROW, "n": 10**9}] * 30
    outcomes = renderer.render_batch(rows)
    assert isinstance(outcomes["t"][0], Rendered) and "t" not in renderer.broken
    assert all(isinstance(o.error, RenderLimitError) for o in outcomes["t"][1:])


def test_a_hostile_template_fails_only_its_own_rows():
    renderer = DatasetRenderer([
        template("{{ (text * n) }} ||| y", name="t"),
        template("{{ premise }} ||| {{ n }}", name="good"),
    ])
    rows = [ROW, {**ROW, "n": 10**9}, ROW]
    outcomes = renderer.render_batch(rows, start=6)
    assert [type(o).__name__ for o in outcomes["t"]] == ["Rendered", "Dropped", "Rendered"]
    assert_limited(outcomes["t"][1], "'*'")
    assert outcomes["good"] == [Rendered(6 + i, ROW["premise"], str(row["n"]), None)
                                for i, row in enumerate(rows)]


DOUBLED = "{% set w = 'a' %}" + "{% set w = w ~ w %}" * 17  # a word of 131,072 characters


@pytest.mark.parametrize("jinja", [
    # textwrap cuts a long word one line at a time, copying the rest of it each time: a word
    # of 2.4M characters took a minute in one call, where the clock is not read
    DOUBLED + "{{ w | wordwrap(1) }} ||| y",
    DOUBLED + "{{ ((w | replace('a', ' ')) ~ 'a') | wordwrap(1) }} ||| y",  # spaces: the same
    "{{ (premise * 40000) | wordwrap(1) }} ||| y",  # a line per character
    "{{ (text * 200000) | urlize }} ||| y",  # urlize works a word at a time
    "{{ (text * 800000) | title }} ||| y",
])
def test_one_huge_call_is_refused_before_it_runs(jinja):
    error = assert_limited(render(jinja), "would take about", "steps, over the work budget")
    assert "filter '" in error.reason


def test_filters_charged_up_front_still_render_what_real_rows_need():
    text = "The man turned on the faucet. " * 200
    out = render("{{ premise | wordwrap(20) }} {{ premise | urlize }} {{ premise | title }}"
                 " ||| y", {"premise": text})
    assert isinstance(out, Rendered), out


@pytest.mark.parametrize("payload", [  # each fails on its row, naming the refused access
    "{{ x | attr('__class__') }}",
    "{{ x.__class__ }}",
    "{% if x.__class__ %}a{% endif %}",
    "{{ ('{0.__class__.__mro__}' | attr('format'))(x) }}",
    "{{ '{a.__class__.__mro__}'.format_map({'a': x}) }}",
    "{{ ('{0.__class__.__mro__}' | safe).format(x) }}",
    "{{ '{0.__class__}'.format(namespace(a=1)) }}",
    "{{ '%s' % x.__class__ }}",
    "{{ (x ~ x).__class__.__mro__ }}",
    "{{ (x * 2).__class__ }}",
    "{{ range.__globals__ }}",
    "{{ lipsum.__globals__ }}",
    "{{ namespace.__init__.__globals__ }}",
])
def test_the_sandbox_still_refuses_escapes(payload):
    """A refused access fails its row (it used to render as "", so a template made only of
    refused accesses dropped every row as empty, silently)."""
    out = render("x" + payload + " ||| y", {"x": "a"})
    assert isinstance(out, Dropped) and out.reason == RENDER_ERROR, out
    assert "SecurityError" in str(out.error) and "is unsafe" in str(out.error), out.error


def _sample_keys():
    keys = []
    for path in sorted(SAMPLES_DIR.rglob("*.jsonl")):
        rel = path.parent.relative_to(SAMPLES_DIR).parts
        key = DatasetKey(rel[0], rel[1] if len(rel) > 1 else None)
        if key not in keys:
            keys.append(key)
    return keys


def test_every_sample_row_of_every_template_renders_within_the_limits():
    collection = TemplateCollection.default()
    checked = 0
    for key in _sample_keys():
        if key not in collection:
            continue
        rows = [row for split in sample_splits(key) for row in sample_rows(key, split)]
        renderer = DatasetRenderer(collection[key])
        for name, outcomes in renderer.render_batch(rows).items():
            limited = [o.error for o in outcomes if isinstance(o, Dropped)
                       and isinstance(o.error, RenderLimitError)]
            assert not limited, (key, name, limited[:1])
            checked += len(outcomes)
    assert checked > 10_000
