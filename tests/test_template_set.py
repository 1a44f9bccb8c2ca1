"""A damaged install's template set fails every entry point in one line saying what is missing
and how to repair it: promptsource 0.1.0's folder present but empty, or without some of the
datasets T0 has templates for. Zero tasks is never a success. Run on a copy of the installed
package, damaged (the package itself is left alone); a user's own catalog entry without
templates still fails nothing. (No template folder at all: test_packaging.py.)"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.hub import catalog_entry

import p3data
from p3data.datasets.catalog import ENV_CATALOG
from p3data.errors import P3DataError
from p3data.taskset import load_definitions
from p3data.templates.collection import ENV_TEMPLATE_DIRS

CLI = "import sys; from p3data.cli import main; sys.exit(main(sys.argv[1:]))"
REINSTALL = "reinstall p3data: pip install --force-reinstall --no-deps p3data"


def run(*args: str, site: Path | None = None,
        env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    environment = {name: value for name, value in os.environ.items()
                   if name not in (ENV_CATALOG, ENV_TEMPLATE_DIRS)}
    if site is not None:
        environment["PYTHONPATH"] = str(site)
    return subprocess.run([sys.executable, *args], capture_output=True, text=True,
                          env={**environment, **(env or {})}, cwd=site or Path.cwd(),
                          timeout=600)


def emptied(folder: Path) -> str:
    for child in folder.iterdir():
        shutil.rmtree(child)
    return (f"{folder} holds no template files, where p3data's build put promptsource "
            f"0.1.0's (T0's templates): a damaged install; {REINSTALL}")


def partial(folder: Path) -> str:
    shutil.rmtree(folder / "super_glue" / "copa")
    shutil.rmtree(folder / "trec")
    return (f"{folder} (promptsource 0.1.0's templates) has none for 2 of the datasets T0 "
            f"has templates for (trec, super_glue/copa): a damaged install; {REINSTALL}")


@pytest.mark.parametrize("damage", [emptied, partial], ids=lambda damage: damage.__name__)
def test_a_damaged_template_set_fails_list_and_import_in_one_line(tmp_path, damage):
    site = tmp_path / "site"
    shutil.copytree(Path(p3data.__file__).parent, site / "p3data")  # compiled modules too
    problem = damage(site / "p3data" / "data" / "promptsource" / "templates")

    listed = run("-c", CLI, "list", site=site)
    assert (listed.returncode, listed.stdout) == (2, ""), listed.stderr[-3000:]
    assert listed.stderr.splitlines() == [f"p3data: error: {problem}"]
    imported = run("-c", "import p3data.tasks", site=site)
    assert imported.returncode == 1
    assert imported.stderr.splitlines()[-1] == (
        f"p3data.templates.collection.TemplateSetMissing: {problem}")


def test_a_users_dataset_without_templates_fails_nothing(tmp_path):
    """Only the bundled catalog's datasets are T0's: one of a user's catalog files may have
    no templates yet (it makes no task)."""
    catalog_entry(tmp_path, {"repo": "acme/toy", "revision": "main",
                             "files": {"train": "*.parquet"}})
    listed = run("-c", CLI, "list", env={ENV_CATALOG: str(tmp_path / "toy_catalog.yaml")})
    assert listed.returncode == 0, listed.stderr[-3000:]
    assert "super_glue_copa_choose" in listed.stdout.split()


def test_a_task_set_without_tasks_is_an_error():
    with pytest.raises(P3DataError, match=r"^the task collections chosen \(none\) define no "
                                          r"task$"):
        load_definitions(())
