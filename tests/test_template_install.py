"""`p3data templates install`: xP3's template sets fetched at their pinned commit (from a local
archive, or over HTTP as from GitHub), checked by what they hold, installed atomically; a
tampered archive refused in one line with nothing installed; a missing or damaged set one line
saying how to get it; and every file of both sets read by p3data's template loader. Nothing is
sent beyond 127.0.0.1."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
import yaml
from helpers.template_sets import read_members, serving, shared_archive, write_archive

from p3data.cli import main
from p3data.errors import P3DataError
from p3data.templates.collection import TemplateSetMissing
from p3data.templates.install import (
    ENV_ARCHIVE_URL,
    ENV_HOME,
    TEMPLATE_SETS,
    install,
    installed,
    p3data_home,
)
from p3data.templates.parse_index import INDEX_FILE
from p3data.templates.yaml_io import read_template_file

XP3 = TEMPLATE_SETS["xp3"]
# Deep folders (<org>/<dataset>/<config>): the ones the fork's own non-editable install drops.
DEEP = ("facebook/flores/eng_Latn-swh_Latn", "GEM/wiki_lingua/hi", "allenai/wmt22_african/eng-swh")


@pytest.fixture(scope="module")
def sets_home(tmp_path_factory) -> Path:
    """Both sets installed from the shared archives, once for the module."""
    home = tmp_path_factory.mktemp("home")
    for spec in TEMPLATE_SETS.values():
        assert not install(spec.name, archive=shared_archive(spec), home=home).already
    return home


def files_under(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())


def test_installed_from_the_archive_whole_and_in_promptsource_layout(sets_home):
    for spec in TEMPLATE_SETS.values():
        templates = installed(spec.name, home=sets_home)
        folder = templates.parent
        assert folder == sets_home / "templates" / f"{spec.name}-{spec.commit}"
        files = files_under(folder)
        assert len(files) == spec.files + 2 and {"LICENSE", INDEX_FILE} <= set(files)
        assert all(f in ("LICENSE", INDEX_FILE)
                   or f.startswith("templates/") and f.endswith("/templates.yaml") for f in files)
        assert "Apache License" in (folder / "LICENSE").read_text()
        for deep in DEEP:
            assert (templates / deep / "templates.yaml").is_file()
    # nothing else beside them: the scratch folders are gone
    assert sorted(p.name for p in (sets_home / "templates").iterdir()) == sorted(
        spec.folder_name for spec in TEMPLATE_SETS.values())


@pytest.mark.parametrize("name", sorted(TEMPLATE_SETS))
def test_every_file_read_by_the_loader_but_two_it_refuses(sets_home, name):
    """Every template file of the fork parses with p3data's loader (metadata's `languages`
    included) but two: head_qa/en (a `task_template` key) and multi_eurlex/all_languages (a
    template whose key is not its id); with those two, the reference's count of templates."""
    spec = TEMPLATE_SETS[name]
    templates = installed(name, home=sets_home)
    read, refused = 0, {}
    for path in sorted(templates.rglob("templates.yaml")):
        try:
            read += len(read_template_file(path, name)[2])
        except P3DataError as err:
            refused[path.parent.relative_to(templates).as_posix()] = str(err)
    assert sorted(refused) == ["head_qa/en", "multi_eurlex/all_languages"]
    assert "unknown keys ['task_template']" in refused["head_qa/en"]
    assert "differs from its id" in refused["multi_eurlex/all_languages"]
    in_refused = sum(len(yaml.load((templates / folder / "templates.yaml").read_text(),
                                   Loader=_AnyTag)["templates"]) for folder in refused)
    assert read + in_refused == spec.templates


class _AnyTag(yaml.SafeLoader):
    """Reads promptsource's tags as plain mappings (to count entries the loader refuses)."""


_AnyTag.add_multi_constructor("!", lambda loader, suffix, node: loader.construct_mapping(node))


def test_missing_set_is_one_line_saying_how_to_get_it(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(ENV_HOME, str(tmp_path))
    with pytest.raises(TemplateSetMissing) as err:
        installed("xp3mt")
    assert "\n" not in str(err.value)
    assert "run `p3data templates install xp3mt`" in str(err.value)
    assert main(["templates", "list"]) == 0
    listing = capsys.readouterr().out
    assert "not installed" in listing and str(tmp_path / "templates" / XP3.folder_name) in listing
    with pytest.raises(P3DataError, match="unknown template set 'xp4'.*known: xp3, xp3mt"):
        installed("xp4")


def test_home_is_p3data_home_else_the_user_cache(tmp_path, monkeypatch):
    monkeypatch.delenv(ENV_HOME, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert p3data_home() == tmp_path / "cache" / "p3data"
    monkeypatch.setenv(ENV_HOME, str(tmp_path / "mine"))
    assert p3data_home() == tmp_path / "mine"


@pytest.mark.server  # an HTTP server on 127.0.0.1, laid out as GitHub's archives
def test_download_over_http_rerun_no_op_damage_and_repair(tmp_path, monkeypatch, capsys):
    """Through the real download code, from a server on 127.0.0.1 laid out as GitHub's archive
    URLs; a rerun does nothing; a damaged copy is one line, and installing again repairs it."""
    for proxy in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy",
                  "ALL_PROXY"):
        monkeypatch.delenv(proxy, raising=False)
    served = tmp_path / "github"
    served.mkdir()
    shutil.copyfile(shared_archive(XP3), served / f"{XP3.commit}.tar.gz")
    home = tmp_path / "home"
    monkeypatch.setenv(ENV_HOME, str(home))
    with serving(served) as url:
        monkeypatch.setenv(ENV_ARCHIVE_URL, url)
        assert main(["templates", "install", "xp3"]) == 0
        assert capsys.readouterr().out.startswith(
            "installed xp3 (Muennighoff/promptsource@03e22cf, branch tr13): 2,597 templates.yaml")
        folder = installed("xp3").parent
        before = folder.stat().st_ino, folder.stat().st_mtime_ns

        assert main(["templates", "install", "xp3"]) == 0
        assert "already installed, and sound" in capsys.readouterr().out
        assert (folder.stat().st_ino, folder.stat().st_mtime_ns) == before

        (folder / "templates" / DEEP[0] / "templates.yaml").unlink()
        with pytest.raises(TemplateSetMissing, match=r"holds 2,596 of the 2,597 templates\.yaml "
                           r"files of xp3 .*: a damaged install; run `p3data templates install "
                           r"xp3` again$"):
            installed("xp3")
        assert main(["templates", "list"]) == 0
        assert "damaged: holds 2,596 of the 2,597" in capsys.readouterr().out
        assert main(["templates", "install", "xp3"]) == 0
        assert capsys.readouterr().out.startswith("installed xp3")
        assert len(files_under(installed("xp3"))) == XP3.files
        assert sorted(p.name for p in (home / "templates").iterdir()) == [XP3.folder_name]

        monkeypatch.setenv(ENV_ARCHIVE_URL, url + "/elsewhere")
        assert main(["templates", "install", "xp3mt", "--dir", str(tmp_path / "other")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "HTTP Error 404" in err and "--archive FILE" in err
    assert not (tmp_path / "other" / "templates").exists() or not any(
        (tmp_path / "other" / "templates").iterdir())


@pytest.fixture(scope="module")
def members():
    return read_members(shared_archive(XP3))


def _changed(name: str, data: bytes) -> bytes:
    return data + b"# one more line\n" if name.endswith("/xnli/en/templates.yaml") else data


def _fork_install(name: str, data: bytes) -> bytes | None:
    """What the fork's setup.py ships: templates/*/*.yaml and templates/*/*/*.yaml only."""
    inside = name.split("/promptsource/templates/", 1)
    return data if len(inside) == 1 or inside[1].count("/") <= 2 else None


def _escaping(members):
    """One member whose path leads out of the folder it is extracted into."""
    info, data = next(m for m in members if m[0].name.endswith("/xnli/en/templates.yaml"))
    top = info.name.split("/", 1)[0]
    name = f"{top}/promptsource/templates/../../../../../escaped/templates.yaml"
    return [(info.replace(name=name, deep=False), data)]


TAMPERED = {  # how each archive is made, and what the one line says
    "changed": (lambda path, members: write_archive(path, members, _changed),
                r"differ from Muennighoff/promptsource@03e22cf, branch tr13's \(digest \w{12}, "
                r"expected 28dc308288dc\): a file was changed"),
    "fork install": (lambda path, members: write_archive(path, members, _fork_install),
                     r"holds 423 of the 2,597 templates\.yaml files of xp3"),
    "no license": (lambda path, members: write_archive(
        path, members, lambda name, data: None if name.endswith("/LICENSE") else data),
                   r"holds no LICENSE"),
    "escape": (lambda path, members: write_archive(path, _escaping(members)),
               r"would be extracted to .*escaped/templates\.yaml', which is outside the "
               r"destination"),
    "not a tarball": (lambda path, members: path.write_bytes(b"<html>Not Found</html>\n"),
                      r"not a tar archive \(gzip, bzip2, xz or plain\)"),
}


@pytest.mark.parametrize("case", list(TAMPERED))
def test_tampered_archive_refused_in_one_line_nothing_installed(case, members, tmp_path, capsys):
    make, expected = TAMPERED[case]
    archive = tmp_path / "promptsource.tar.gz"
    make(archive, members)
    home = tmp_path / "home"
    assert main(["templates", "install", "xp3", "--archive", str(archive),
                 "--dir", str(home)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"p3data: error: {archive}")
    assert re.search(expected + r".*; nothing installed$", err.strip()), err
    assert not any((home / "templates").iterdir())
    assert not list(tmp_path.glob("**/escaped"))
    with pytest.raises(TemplateSetMissing, match="not installed"):
        installed("xp3", home=home)
