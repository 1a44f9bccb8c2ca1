"""`p3data lint`: each kind of template bug is reported once, on its template, with a reason."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from helpers.templates import template_entry, write_templates

from p3data.cli import main
from p3data.quality.lint import ERROR, WARNING, lint

COPA_BODY = "{{ premise }} {{ question }}? ||| {{ answer_choices[label] }}"
COPA_CHOICES = "{{ choice1 }} ||| {{ choice2 }}"


def problems_of(root: Path) -> dict[str, list[tuple[str, str]]]:
    """(severity, reason) per template name ("" for problems of a whole file)."""
    found: dict[str, list[tuple[str, str]]] = {}
    for problem in lint([root]).problems:
        match = re.search(r": template '(.*)' \(", problem.where)
        found.setdefault(match[1] if match else "", []).append((problem.severity, problem.reason))
    return found


def test_a_clean_template_has_no_problems(template_dir):
    write_templates(template_dir, "super_glue", "copa",
                    template_entry("id-good", "fixture good", COPA_BODY, COPA_CHOICES))
    result = lint([template_dir])
    assert (result.files, result.templates, result.problems) == (1, 1, [])


def test_each_bug_is_reported_on_its_template(template_dir):
    path = write_templates(template_dir, "super_glue", "copa", "".join([
        template_entry("id-undefined", "fixture undefined", "{{ premis }} ||| {{ choice1 }}"),
        template_entry("id-choices", "fixture choices", COPA_BODY, "{{ choice1 ||| {{ choice2 }}"),
        template_entry("id-nosep", "fixture no separator", "{{ premise }} {{ choice1 }}"),
        template_entry("id-filter", "fixture filter",
                       "{% if label == 0 %}{{ premise | shout }}{% endif %} ||| {{ choice1 }}"),
        template_entry("id-none", "fixture no choices",
                       "{{ premise }} ||| {{ answer_choices[0] }}"),
        template_entry("id-empty", "fixture empty choice", COPA_BODY, "Yes ||| No |||"),
        template_entry("id-const", "fixture constant", "{{ premise }} ||| Yes"),
        template_entry("id-space", "fixture space ", "{{ premise }} ||| {{ choice1 }}"),
    ]))
    found = problems_of(template_dir)
    assert set(found) == {"fixture undefined", "fixture choices", "fixture no separator",
                          "fixture filter", "fixture no choices", "fixture empty choice",
                          "fixture constant", "fixture space "}
    assert all(len(problems) == 1 for problems in found.values()), found
    [(severity, reason)] = found["fixture undefined"]
    assert severity == ERROR and "'premis'" in reason and "choice1" in reason  # lists the fields
    [(severity, reason)] = found["fixture choices"]
    assert severity == ERROR and "syntax error in answer_choices" in reason
    assert "'|||'" in found["fixture no separator"][0][1]
    assert "unknown Jinja filter 'shout'" in found["fixture filter"][0][1]
    assert "defines none" in found["fixture no choices"][0][1]
    assert "empty choice" in found["fixture empty choice"][0][1]
    assert found["fixture constant"] == [(WARNING, found["fixture constant"][0][1])]
    assert found["fixture space "][0][0] == WARNING
    line = next(str(p) for p in lint([template_dir]).problems if "premis" in p.reason)
    assert line.startswith(f"{path}: template 'fixture undefined' (super_glue/copa): error: ")


def test_fields_are_checked_only_for_catalog_datasets(template_dir):
    write_templates(template_dir, "not_in_catalog", None,
                    template_entry("id-free", "free", "{{ anything }} ||| {{ at_all }}"))
    assert lint([template_dir]).problems == []


def test_hyphenated_fields_are_read_with_underscores(template_dir):
    write_templates(template_dir, "trec", None, "".join([
        template_entry("id-underscore", "fine", "{{ text }} ||| {{ label_coarse }}"),
        template_entry("id-hyphen", "hyphen", "{{ text }} ||| {{ label-coarse }}"),
    ]))
    found = problems_of(template_dir)
    assert list(found) == ["hyphen"]  # `label-coarse` is `label - coarse` in Jinja


def test_metadata_values(template_dir):
    entry = template_entry("id-meta", "meta", COPA_BODY, COPA_CHOICES)
    entry = entry.replace("- Accuracy", "- Accuracy\n    - Precision").replace(
        "original_task: true", "original_task: maybe")
    write_templates(template_dir, "super_glue", "copa", entry)
    reasons = [reason for _, reason in problems_of(template_dir)["meta"]]
    assert len(reasons) == 2
    assert any("original_task" in r and "'maybe'" in r for r in reasons)
    assert any("'Precision'" in r for r in reasons)


def test_mean_reciprocal_rank_is_a_known_metric(template_dir):
    entry = template_entry("id-mrr", "mrr", COPA_BODY, COPA_CHOICES).replace(
        "- Accuracy", "- Mean Reciprocal Rank")
    write_templates(template_dir, "super_glue", "copa", entry)
    assert lint([template_dir]).problems == []


def test_duplicate_ids_and_names(template_dir):
    body = "{{ premise }} ||| {{ choice1 }}"
    path = write_templates(template_dir, "super_glue", "copa", "".join([
        template_entry("id-a", "first", body),
        template_entry("id-a", "second", body),  # the YAML key repeats: the loader keeps this one
        template_entry("id-b", "second", body),
    ]))
    problems = lint([template_dir]).problems
    assert [p.reason for p in problems if p.where == str(path)] == [
        "line 14: key 'id-a' appears twice; only the last one is kept"]
    [clash] = [p for p in problems if p.where != str(path)]
    assert "template 'second'" in clash.where and "name also used by template id-" in clash.reason


def test_a_new_template_may_not_take_an_installed_name(template_dir):
    # promptsource's COPA has a template named "best_option"; a new id with that name breaks
    # loading, while the same id replaces it (a fix).
    write_templates(template_dir, "super_glue", "copa",
                    template_entry("id-new", "best_option", COPA_BODY, COPA_CHOICES))
    [problem] = lint([template_dir]).problems
    assert "name also used by template" in problem.reason and "promptsource" in problem.reason


def test_malformed_yaml_is_one_error_for_the_file(template_dir):
    folder = template_dir / "super_glue" / "copa"
    folder.mkdir(parents=True)
    (folder / "templates.yaml").write_text("dataset: super_glue\nsubset: copa\ntemplates: [\n")
    [problem] = lint([template_dir]).problems
    assert problem.severity == ERROR and "malformed YAML" in problem.reason


def test_command_exit_codes(template_dir, capsys):
    write_templates(template_dir, "super_glue", "copa",
                    template_entry("id-good", "fixture good", COPA_BODY, COPA_CHOICES))
    assert main(["lint", str(template_dir)]) == 0
    write_templates(template_dir, "super_glue", "copa",
                    template_entry("id-bad", "fixture bad", "{{ premis }} ||| {{ choice1 }}"))
    assert main(["lint", str(template_dir)]) == 1
    out, err = capsys.readouterr()
    assert "template 'fixture bad' (super_glue/copa): error: uses 'premis'" in out
    assert "1 files, 1 templates: 1 errors, 0 warnings" in err


@pytest.mark.parametrize("dataset, subset", [("super_glue", "copa"), ("trec", None)])
def test_installed_t0_templates_have_no_errors(dataset, subset):
    from p3data.templates.collection import promptsource_dir

    folder = promptsource_dir() / dataset / (subset or "")
    result = lint([folder])
    assert result.templates > 10 and result.errors == 0


def test_templates_past_the_render_limits(template_dir):
    entries = {
        "fixture power": ("{% set y = 9**(9**9) %}{{ premise }}", ERROR,
                          "makes an integer of over 10,000 digits"),
        "fixture range": ("{% for i in range(10**7) %}{% endfor %}{{ premise }}", ERROR,
                          "range() of 10,000,000 numbers"),
        "fixture product": ("{{ (premise * 30000000) | length }}", WARNING, "'*' by 30,000,000"),
        "fixture width": ("{{ premise.ljust(10**6) }}", WARNING, "1,000,000 given to .ljust()"),
        "fixture nested": ("{% for a in premise %}{% for b in a %}{% for c in b %}{{ c }}"
                           "{% endfor %}{% endfor %}{% endfor %}", WARNING, "nested 3 deep"),
        "fixture recursive": ("{% for x in [premise] recursive %}{{ loop([]) }}{% endfor %}",
                              WARNING, "a recursive loop"),
        "fixture macro": ("{% macro m(n) %}{{ m(n) }}{% endmacro %}{{ premise }}", WARNING,
                          "macro 'm' in jinja calls itself"),
    }
    write_templates(template_dir, "super_glue", "copa", "".join(
        template_entry(f"id-{i}", name, body + " ||| {{ choice1 }}")
        for i, (name, (body, _, _)) in enumerate(entries.items())))
    found = problems_of(template_dir)
    assert set(found) == set(entries)
    for name, (_, severity, phrase) in entries.items():
        [(got_severity, reason)] = found[name]
        assert got_severity == severity and phrase in reason, (name, reason)


def test_ordinary_numbers_are_not_flagged(template_dir):
    body = ("{{ premise[:1200] }} {{ 2 ** 10 }} {{ '-' * 20 }} {{ premise.ljust(30) }}"
            "{% for a in premise %}{% for b in a %}{{ b }}{% endfor %}{% endfor %}"
            " ||| {{ choice1 }}")
    write_templates(template_dir, "super_glue", "copa", template_entry("id-ok", "ordinary", body))
    assert lint([template_dir]).problems == []
