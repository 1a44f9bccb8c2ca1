"""Template collection: sources, overrides, provenance, metadata and file errors."""

from __future__ import annotations

import os

import pytest
from helpers.templates import template_entry, write_templates

from p3data.errors import NotFoundError, TemplateFileError
from p3data.templates import TemplateCollection
from p3data.templates.collection import ENV_TEMPLATE_DIRS, TemplateSource
from p3data.templates.render import CompiledTemplate


def test_promptsource_and_project_sources_are_loaded():
    collection = TemplateCollection.default()
    origins = [source.origin for source in collection.sources]
    assert origins[:2] == ["promptsource", "project"]
    copa = collection.get("super_glue", "copa")
    assert len(copa) == 12
    assert copa.names == sorted(copa.names)
    template = copa["exercise"]
    assert template.origin == "promptsource"
    assert template.source.name == "templates.yaml"
    assert template.metadata.original_task is True
    assert template.metadata.metrics == ("Accuracy",)
    assert template.answer_choices == "{{choice1}} ||| {{choice2}}"


def test_fixed_answer_choices_only_without_variables():
    rte = TemplateCollection.default().get("super_glue", "rte")
    fixed = [CompiledTemplate(t).fixed_answer_choices for t in rte]
    assert ["Yes", "No"] in fixed
    copa = TemplateCollection.default().get("super_glue", "copa")["exercise"]
    assert CompiledTemplate(copa).fixed_answer_choices is None


def test_later_source_overrides_by_id_and_adds_new_ids(tmp_path, monkeypatch):
    first, second, third = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    write_templates(first, "toy", None, template_entry("id-1", "one", "{{x}} ||| a")
                    + template_entry("id-2", "two", "{{x}} ||| b"))
    write_templates(second, "toy", None, template_entry("id-1", "one fixed", "{{x}} ||| A"))
    write_templates(third, "toy", None, template_entry("id-3", "three", "{{x}} ||| c"))
    monkeypatch.setenv(ENV_TEMPLATE_DIRS, str(second))
    collection = TemplateCollection(
        [TemplateSource(first, "first")]
        + [s for s in TemplateCollection.default([third]).sources if s.origin != "promptsource"]
    )
    toy = collection.get("toy")
    assert toy.names == ["one fixed", "three", "two"]
    assert toy["one fixed"].origin == str(second)
    assert toy["one fixed"].source == second / "toy" / "templates.yaml"
    assert toy["two"].origin == "first"
    assert toy["three"].origin == str(third)


def test_same_name_with_another_id_is_an_error(tmp_path):
    write_templates(tmp_path / "a", "toy", None, template_entry("id-1", "one", "{{x}} ||| a"))
    write_templates(tmp_path / "b", "toy", None, template_entry("id-9", "one", "{{x}} ||| b"))
    collection = TemplateCollection(
        [TemplateSource(tmp_path / "a", "a"), TemplateSource(tmp_path / "b", "b")])
    with pytest.raises(TemplateFileError, match="'one'.*id-9.*also used by id-1"):
        len(collection.get("toy"))


def test_malformed_yaml_names_file_and_line(template_dir):
    path = write_templates(template_dir, "toy", None, template_entry("id-1", "one", "x ||| y"))
    path.write_text(path.read_text() + "  broken: [unclosed\n")
    collection = TemplateCollection([TemplateSource(template_dir, "test")])
    with pytest.raises(TemplateFileError) as err:
        len(collection.get("toy"))
    assert str(path) in str(err.value)
    assert "malformed YAML: line" in str(err.value)


@pytest.mark.parametrize("entry, reason", [
    ("id-1: !Template\n  id: id-1\n  name: one\n", "'jinja' must be a string"),
    ("id-1: !Template\n  id: id-2\n  name: one\n  jinja: a\n", "differs from its id"),
    ("id-1: {id: id-1, name: one, jinja: a}\n", "expected a !Template entry"),
    ("id-1: !Template\n  id: id-1\n  name: one\n  jinja: a\n  metadata: {metrics: [1]}\n",
     "!TemplateMetadata"),
    ("id-1: !Template\n  id: id-1\n  name: one\n  jinja: a\n  colour: red\n", "unknown keys"),
])
def test_structural_errors_name_file_and_template(template_dir, entry, reason):
    path = write_templates(template_dir, "toy", None, entry)
    collection = TemplateCollection([TemplateSource(template_dir, "test")])
    with pytest.raises(TemplateFileError, match=reason) as err:
        len(collection.get("toy"))
    assert str(path) in str(err.value) and "'id-1'" in str(err.value)


def test_missing_extra_folder_is_an_error(tmp_path):
    with pytest.raises(TemplateFileError, match="does not exist"):
        TemplateCollection.default([tmp_path / "nope"])


def test_unknown_dataset_and_template_names():
    collection = TemplateCollection.default()
    with pytest.raises(NotFoundError, match="no templates for dataset 'nope/x'"):
        collection.get("nope", "x")
    with pytest.raises(NotFoundError, match="has no template named 'nope'"):
        collection.template("super_glue", "copa", "nope")
    with pytest.raises(NotFoundError, match="did you mean 'exercise'"):
        collection.template("super_glue", "copa", "exercice")


def test_a_template_file_changed_in_place_is_read_anew(template_dir):
    """A file's parse is kept by the digest of its bytes: rewritten within the same clock tick
    and at the same length, the new text is what the next collection reads."""
    path = write_templates(template_dir, "toy", None, template_entry("id-1", "one", "{{x}} ||| a"))
    collection = TemplateCollection([TemplateSource(template_dir, "test")])
    assert collection.get("toy")["one"].jinja == "{{x}} ||| a"
    before = path.stat()
    path.write_text(path.read_text().replace("||| a", "||| b"))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))  # as if in the same tick
    again = TemplateCollection([TemplateSource(template_dir, "test")])
    assert again.get("toy")["one"].jinja == "{{x}} ||| b"
