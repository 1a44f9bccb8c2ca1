"""An installed set's parse index (`templates/parse_index.py`): used when it matches a file's
text, never for a file changed since (that file is parsed again), ignored with no error when it
is damaged, written by another parser, or missing (an older install, to which installing again
adds it). Real sets, installed from the fork's archives."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest

from p3data.templates import parse_index, yaml_io
from p3data.templates.install import install
from p3data.templates.parse_index import INDEX_FILE

XNLI_EN = Path("xnli", "en", "templates.yaml")


@pytest.fixture
def fresh_reader(monkeypatch):
    """The template reader as a new process has it: nothing parsed, no index taken."""
    monkeypatch.setattr(yaml_io, "_PARSED", {})
    monkeypatch.setattr(yaml_io, "_INDEXED", {})


@pytest.fixture
def parses(monkeypatch) -> list[Path]:
    """The files the reader parses from their YAML (not from an index)."""
    parsed: list[Path] = []
    real = yaml_io.parse_text

    def counting(path, text, origin=""):
        parsed.append(path)
        return real(path, text, origin)

    monkeypatch.setattr(yaml_io, "parse_text", counting)
    return parsed


@pytest.fixture
def set_copy(xp3_templates, tmp_path) -> Path:
    """A copy of xP3's installed set folder (LICENSE, templates/, its index), to change."""
    copy = tmp_path / "xp3"
    shutil.copytree(xp3_templates["xp3"].parent, copy)
    return copy


def _read_all(templates: Path) -> dict[Path, tuple]:
    found = {}
    for path in sorted(templates.rglob("templates.yaml")):
        try:
            found[path] = yaml_io.read_template_file(path, "xp3")
        except yaml_io.TemplateFileError:
            continue  # the two files the loader refuses (test_template_install)
    return found


def test_the_index_is_used_and_gives_what_parsing_gives(xp3_templates, fresh_reader, parses):
    folder = xp3_templates["xp3"].parent
    assert (folder / INDEX_FILE).is_file()  # written by the install
    assert parse_index.load(folder) == 2595  # 2,597 files, less the two the loader refuses
    from_index = _read_all(folder / "templates")
    assert len(parses) == 2  # only the refused files were parsed
    yaml_io._PARSED.clear()
    yaml_io._INDEXED.clear()
    assert _read_all(folder / "templates") == from_index  # parsed anew: the same templates
    template = from_index[folder / "templates" / XNLI_EN][2][0]
    assert (template.source, template.origin) == (folder / "templates" / XNLI_EN, "xp3")
    assert (template.dataset, template.subset) == ("xnli", "en")


def test_a_changed_file_is_parsed_again_never_served_stale(set_copy, fresh_reader, parses):
    path = set_copy / "templates" / XNLI_EN
    text = path.read_text()
    first = yaml_io.parse_text(path, text)[2][0]
    path.write_text(text.replace(f"name: {first.name}", "name: renamed since the install", 1))
    parses.clear()
    assert parse_index.load(set_copy) > 0
    names = [template.name for template in yaml_io.read_template_file(path)[2]]
    assert "renamed since the install" in names and first.name not in names
    assert parses == [path]
    other = set_copy / "templates" / "xnli" / "fr" / "templates.yaml"
    assert yaml_io.read_template_file(other)[2] and parses == [path]  # the rest: from the index


@pytest.mark.parametrize("damage", [
    lambda data: data[: len(data) // 2],
    lambda data: b"not an index at all",
    lambda data: b"",
    lambda data: data.replace(parse_index.parser_stamp(), b"x" * 16, 1),  # another parser's
])
def test_a_damaged_or_foreign_index_is_ignored_with_no_error(set_copy, fresh_reader, parses,
                                                             damage):
    index = set_copy / INDEX_FILE
    index.write_bytes(damage(index.read_bytes()))
    assert parse_index.load(set_copy) == 0
    path = set_copy / "templates" / XNLI_EN
    assert yaml_io.read_template_file(path)[2] and parses == [path]


def test_an_install_without_an_index_works_and_installing_again_adds_it(
        fresh_reader, parses, tmp_path, xp3_templates):
    installed_folder = xp3_templates["xp3"].parent
    folder = tmp_path / "home" / "templates" / installed_folder.name
    shutil.copytree(installed_folder, folder)
    (folder / INDEX_FILE).unlink()
    assert parse_index.load(folder) == 0
    path = folder / "templates" / XNLI_EN
    assert yaml_io.read_template_file(path)[2] and parses == [path]
    assert install("xp3", home=tmp_path / "home").already
    assert parse_index.load(folder) == 2595


def test_templates_from_the_index_carry_their_own_file(set_copy, xp3_templates, fresh_reader):
    """Two copies of one file (same text): each template names the file it was read from."""
    parse_index.load(set_copy)
    here = yaml_io.read_template_file(set_copy / "templates" / XNLI_EN)[2]
    there = yaml_io.read_template_file(xp3_templates["xp3"] / XNLI_EN)[2]
    assert [dataclasses.replace(t, source=None) for t in here] == [
        dataclasses.replace(t, source=None) for t in there]
    assert {t.source for t in here} == {set_copy / "templates" / XNLI_EN}
