"""What Dataflow workers get: the sdist built from setup.py installs p3data with its
templates, catalog, samples, vocabulary and the Beam pipeline."""

from __future__ import annotations

import subprocess
import sys
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_sdist_installs_everything_workers_need(tmp_path):
    subprocess.run([sys.executable, "setup.py", "-q", "sdist", "-d", str(tmp_path / "dist")],
                   cwd=ROOT, check=True, capture_output=True)
    sdist = next((tmp_path / "dist").glob("p3data-*.tar.gz"))
    with tarfile.open(sdist) as archive:
        names = archive.getnames()
    assert any(n.endswith("p3data/data/catalog.yaml") for n in names)
    assert any(n.endswith("pipelines/cache.py") for n in names)
    assert sum(n.endswith(".jsonl") for n in names) >= 150
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
        "assert p3data.__file__.startswith(sys.argv[1]), p3data.__file__;"
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
