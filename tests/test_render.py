"""Rendering: T0's row rule, clear row errors, the sandbox, the deterministic `choice` and
the batches rows are rendered in."""

from __future__ import annotations

import pytest

from p3data import batching
from p3data.errors import TemplateError
from p3data.templates import Template
from p3data.templates.render import (
    EMPTY_INPUTS,
    EXTRA_SEPARATOR,
    NO_LABEL,
    NO_SEPARATOR,
    RENDER_ERROR,
    CompiledTemplate,
    DatasetRenderer,
    Dropped,
    Rendered,
)


def compiled(jinja: str, answer_choices: str | None = None, tid: str = "t-1") -> CompiledTemplate:
    return CompiledTemplate(Template(id=tid, name="toy template", jinja=jinja, dataset="toy",
                                     answer_choices=answer_choices))


def test_row_rule_keeps_two_parts_and_fills_missing_label():
    template = compiled("{{ text }} ||| {% if label != -1 %}{{ answer_choices[label] }}{% endif %}",
                        answer_choices="no ||| yes")
    kept = template.render({"text": " hello ", "label": 1}, 0)
    assert kept == Rendered(0, "hello", "yes", ["no", "yes"])
    hidden = template.render({"text": "hello", "label": -1}, 1)
    assert hidden == Rendered(1, "hello", NO_LABEL, ["no", "yes"])


@pytest.mark.parametrize("jinja, reason", [
    ("{% if flag %}{{ text }} ||| x{% endif %}", NO_SEPARATOR),
    ("{{ text }} ||| a ||| b", EXTRA_SEPARATOR),
    (" ||| {{ text }}", EMPTY_INPUTS),
])
def test_dropped_pairs_say_why(jinja, reason):
    assert compiled(jinja).render({"text": "t", "flag": False}, 4) == Dropped(4, reason)


def test_field_separator_is_protected_but_answer_choice_separator_is_not():
    template = compiled("{{ a }} ||| {{ b }}")
    assert template.render({"a": "x ||| y", "b": "z"}) == Rendered(0, "x ||| y", "z", None)


def test_truncation_follows_jinja_truncate():
    template = compiled("{{ text }} ||| y")
    words = ("abcd " * 1000).strip()
    out = template.render({"text": words})
    assert len(out.inputs) <= 2048 and out.inputs.endswith("...")
    assert template.render({"text": "a" * 2053}).inputs == "a" * 2053


def test_undefined_field_names_the_field_and_template():
    template = compiled("{{ question }} ||| {{ answer }}")
    out = template.render({"question": "q"}, 7)
    assert isinstance(out, Dropped) and out.reason == RENDER_ERROR
    assert out.error.field == "answer" and out.error.row == 7
    assert "toy template" in str(out.error) and "'answer'" in str(out.error)


def test_none_value_failure_names_the_field():
    out = compiled("{{ question.split()[0] }} ||| x").render({"question": None}, 2)
    assert isinstance(out, Dropped) and out.error.field == "question"
    assert "None" in str(out.error)


def test_none_value_renders_like_promptsource_when_it_can():
    assert compiled("{{ q }} ||| x").render({"q": None}) == Rendered(0, "None", "x", None)


def test_missing_attribute_of_existing_value_is_lenient_like_promptsource():
    out = compiled("{{ q.nope }}{{ items[5] }}q ||| x").render({"q": "a", "items": [1]})
    assert out == Rendered(0, "q", "x", None)


def test_answer_choices_field_in_row_is_refused():
    out = compiled("{{ a }} ||| b").render({"a": "x", "answer_choices": "y"}, 3)
    assert out.reason == RENDER_ERROR and out.error.field == "answer_choices"


def test_syntax_error_names_file_template_and_line():
    with pytest.raises(TemplateError, match=r"toy template.*line 2"):
        compiled("ok\n{% if x %} ||| y")


def test_one_bad_row_does_not_stop_the_others():
    renderer = DatasetRenderer([Template(id="t", name="n", jinja="{{ a.upper() }} ||| x",
                                         dataset="toy")])
    outcomes = renderer.render_batch([{"a": "x"}, {"b": 1}, {"a": "z"}], start=10)["n"]
    assert [type(o).__name__ for o in outcomes] == ["Rendered", "Dropped", "Rendered"]
    assert outcomes[2] == Rendered(12, "Z", "x", None)


def test_broken_template_is_reported_and_others_render():
    renderer = DatasetRenderer([
        Template(id="a", name="good", jinja="{{ x }} ||| y", dataset="toy"),
        Template(id="b", name="bad", jinja="{% if %}", dataset="toy"),
    ])
    assert list(renderer.templates) == ["good"] and list(renderer.broken) == ["bad"]


SANDBOX_ESCAPES = [
    "{{ ''.__class__.__mro__[1].__subclasses__() }}",
    "{{ x.__class__.__init__.__globals__ }}",
    "{{ cycler.__init__.__globals__.os.popen('id').read() }}",
    "{{ joiner.__init__.__globals__['os'].system('id') }}",
    "{{ lipsum.__globals__['os'].popen('id').read() }}",
    "{{ namespace.__init__.__globals__ }}",
    "{{ zip.__self__.__import__('os').popen('id').read() }}",
    "{{ x.format.__globals__ }}",
    "{{ '{0.__class__.__mro__}'.format(x) }}",
]


@pytest.mark.parametrize("payload", SANDBOX_ESCAPES)
def test_sandbox_refuses_known_escapes(payload):
    out = compiled(payload + " ||| y").render({"x": "a"})
    if isinstance(out, Rendered):  # an unsafe attribute may only render as nothing
        assert out.inputs == ""
    else:
        assert out.reason in (RENDER_ERROR, EMPTY_INPUTS)
        if out.error is not None:
            assert "uid=" not in str(out.error)


CHOICE = "{{ options | choice }} ||| x"


def test_choice_is_a_member_and_deterministic():
    row = {"options": list("abcdefghij")}
    first = [compiled(CHOICE).render(row, i).inputs for i in range(50)]
    again = [compiled(CHOICE).render(row, i).inputs for i in range(50)]
    assert first == again and set(first) <= set(row["options"]) and len(set(first)) > 3


def test_choice_depends_on_seed_and_template_not_global_random():
    import random

    row = {"options": list("abcdefghij")}
    base = [compiled(CHOICE).render(row, i).inputs for i in range(50)]
    random.seed(12345)
    assert base == [compiled(CHOICE).render(row, i).inputs for i in range(50)]
    other_seed = CompiledTemplate(compiled(CHOICE).template, seed=1)
    assert base != [other_seed.render(row, i).inputs for i in range(50)]
    other_template = compiled(CHOICE, tid="t-2")
    assert base != [other_template.render(row, i).inputs for i in range(50)]


def test_rows_are_batched_by_count_and_by_text_size(monkeypatch):
    """A batch of long articles stops at about `CHARS_PER_BATCH` characters (every template
    renders a batch at once), one of short rows at `ROWS_PER_BATCH`; no row is cut or lost."""
    monkeypatch.setattr(batching, "CHARS_PER_BATCH", 1_000)
    rows = ([{"label": i, "text": "w"} for i in range(1_100)]
            + [{"article": "x" * 300, "summary": "y" * 30, "id": i} for i in range(6)]
            + [{"article": "z" * 5_000}, {"text": "w"}])
    sizes = [len(batch) for batch in batching.row_batches(iter(rows))]
    assert sizes == [512, 512, 79, 4, 1]  # 76 short rows and 3 articles: 1,066 characters
    assert [row for batch in batching.row_batches(rows) for row in batch] == rows
    assert list(batching.row_batches([])) == []
