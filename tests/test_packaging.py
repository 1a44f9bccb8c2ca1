"""What `pip install` gives: a wheel (or an sdist, as Dataflow's workers get) carries
promptsource 0.1.0's templates, so every task is registered without the Makefile; the registry
installs without the builder's stack; and a missing template set is one clear error."""

from __future__ import annotations

import filecmp
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from helpers.venvs import ROOT, make_venv, source_copy

from p3data.templates.collection import BUNDLED_PROMPTSOURCE, promptsource_dir

BUILDER_ONLY = ("apache_beam", "pyarrow", "huggingface_hub", "gcsfs", "matplotlib")


def test_the_bundled_templates_are_promptsource_010s_own():
    """The build's copy equals, file for file, the promptsource 0.1.0 the Makefile installs as
    the tests' reference (found without importing it)."""
    import importlib.util

    assert promptsource_dir() == BUNDLED_PROMPTSOURCE
    reference = Path(importlib.util.find_spec("promptsource").origin).parent / "templates"
    ours = sorted(p.relative_to(BUNDLED_PROMPTSOURCE)
                  for p in BUNDLED_PROMPTSOURCE.rglob("templates.yaml"))
    theirs = sorted(p.relative_to(reference) for p in reference.rglob("templates.yaml"))
    assert ours == theirs and len(ours) == 272
    _, mismatch, errors = filecmp.cmpfiles(BUNDLED_PROMPTSOURCE, reference, ours, shallow=False)
    assert mismatch == errors == []


@pytest.mark.env  # pip installs the sdist into a folder of its own
def test_sdist_installs_everything_workers_need(tmp_path):
    subprocess.run([sys.executable, "setup.py", "-q", "sdist", "-d", str(tmp_path / "dist")],
                   cwd=source_copy(tmp_path / "source"), check=True, capture_output=True)
    sdist = next((tmp_path / "dist").glob("p3data-*.tar.gz"))
    with tarfile.open(sdist) as archive:
        names = archive.getnames()
    assert any(n.endswith("p3data/data/catalog.yaml") for n in names)
    assert any(n.endswith("pipelines/cache.py") for n in names)
    assert sum(n.endswith(".jsonl") for n in names) >= 150
    # promptsource's archive travels once, the templates are taken from it when installing
    assert sum(n.endswith("/promptsource-0.1.0.tar.gz") for n in names) == 1
    assert not any("/p3data/data/promptsource/" in n for n in names)
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                    "--no-build-isolation", "--target", str(target), str(sdist)],
                   check=True, capture_output=True)
    probe = (
        "import sys; sys.path.insert(0, sys.argv[1]);"
        "import p3data, p3data.pipelines.cache, p3data.project_templates;"
        "from p3data.datasets.samples import sample_splits;"
        "from p3data.datasets.catalog import Catalog;"
        "from p3data.dataset_key import DatasetKey;"
        "from p3data.vocab import SAMPLE_VOCAB;"
        "from p3data.templates.collection import promptsource_dir;"
        "assert p3data.__file__.startswith(sys.argv[1]), p3data.__file__;"
        "assert str(promptsource_dir()).startswith(sys.argv[1]), promptsource_dir();"
        "assert len(Catalog.load()) == 67 and sample_splits(DatasetKey('super_glue', 'copa'));"
        "assert SAMPLE_VOCAB.is_file(); print('ok')"
    )
    result = subprocess.run([sys.executable, "-c", probe, str(target)], capture_output=True,
                            text=True, cwd=tmp_path)
    assert result.stdout.strip().endswith("ok"), result.stderr[-2000:]
    # every package of the source tree is installed (a package missing from setup.cfg is not)
    packages = sorted(".".join(init.parent.relative_to(ROOT).parts)
                      for init in (ROOT / "p3data").rglob("__init__.py"))
    installed = [name for name in packages
                 if (target / name.replace(".", "/") / "__init__.py").is_file()]
    assert installed == packages and "p3data.report" in packages


@pytest.fixture(scope="module")
def wheel_venv(tmp_path_factory, p3data_wheel):
    """A clean environment where p3data is installed from its wheel, as `pip install` does:
    its own requirements only (no builder extra, no promptsource), under the pinned stack."""
    tmp = tmp_path_factory.mktemp("wheel")
    venv = make_venv(tmp / "venv", "-c", ROOT / "constraints.txt", p3data_wheel)
    print(f"\nclean environment with p3data's wheel installed in {venv.install_seconds:.0f} s")
    return venv


def test_a_wheel_alone_registers_every_task(wheel_venv):
    probe = ("import seqio, p3data.tasks;"
             "print(len(seqio.TaskRegistry.names()), len(seqio.MixtureRegistry.names()))")
    result = wheel_venv.run(wheel_venv.python, "-c", probe)
    assert result.stdout.split() == ["4915", "14"], result.stderr[-3000:]  # T0 and variants
    listed = wheel_venv.run(wheel_venv.bin("p3data"), "list", "--mixture", "t0_train")
    assert listed.returncode == 0 and len(listed.stdout.splitlines()) == 313
    installed = wheel_venv.run(wheel_venv.python, "-m", "pip", "list", "--format=freeze").stdout
    names = {line.split("==")[0].lower().replace("_", "-") for line in installed.splitlines()}
    assert "promptsource" not in names and "apache-beam" not in names
    assert not {"seqio-nightly", "tfds-nightly"} & names  # one package per import name


@pytest.mark.parametrize(("command", "needs"), [
    (["cache", "--samples", "--tasks", "super_glue_copa_exercise", "--output-dir", "out"],
     "apache_beam"),
    (["fetch", "super_glue/copa", "--to", "mirror"], "huggingface_hub"),
    (["report", "cache", "--out", "report.html"], "matplotlib"),
])
def test_builder_commands_name_the_extra_they_need(wheel_venv, tmp_path, command, needs):
    (tmp_path / "cache").mkdir()
    result = wheel_venv.run(wheel_venv.bin("p3data"), *command, cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"p3data: error: `p3data {command[0]}` needs {needs}, which p3data's 'builder' extra "
        "installs: pip install 'p3data[builder]'"]
    assert [p.name for p in tmp_path.rglob("*")] == ["cache"]  # refused before any work


def test_the_registry_and_the_reader_load_nothing_of_the_builder(wheel_venv):
    probe = ("import sys, p3data.tasks, p3data.read;"
             "print(sorted(m for m in sys.argv[1:] if m in sys.modules))")
    loaded = wheel_venv.run(wheel_venv.python, "-c", probe, *BUILDER_ONLY)
    assert loaded.stdout.strip() == "[]", loaded.stderr[-2000:]


def test_without_the_template_set_every_entry_point_says_how_to_fix_it(wheel_venv):
    """Last in this module: it removes the environment's templates."""
    site = wheel_venv.run(wheel_venv.python, "-c", "import p3data, os; print(os.path.dirname("
                          "p3data.__file__))").stdout.strip()
    bundled = Path(site, "data", "promptsource")
    assert (bundled / "templates" / "super_glue" / "copa" / "templates.yaml").is_file()
    subprocess.run(["rm", "-r", str(bundled)], check=True)
    fix = "pip install --no-deps --ignore-requires-python promptsource==0.1.0"
    listed = wheel_venv.run(wheel_venv.bin("p3data"), "list")
    assert listed.returncode == 2 and listed.stdout == ""
    [line] = listed.stderr.strip().splitlines()
    assert line.startswith("p3data: error: promptsource 0.1.0's templates (T0's) are not "
                           "installed") and fix in line
    imported = wheel_venv.run(wheel_venv.python, "-c", "import p3data.tasks")
    assert imported.returncode == 1 and "TemplateSetMissing" in imported.stderr
    assert fix in imported.stderr.strip().splitlines()[-1]
