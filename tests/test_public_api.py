"""The public API a user can see: `p3data.__all__` names what is public, each name resolves
(loading its layer only then), has a docstring, and every package says what it exports."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import p3data

ROOT = Path(p3data.__file__).parent


def test_every_public_name_resolves_and_says_what_it_does():
    assert {"open_cache", "mixture_sampler", "export_tasks", "load_definitions"} <= set(
        p3data.__all__)
    for name in p3data.__all__:
        value = getattr(p3data, name)
        if name != "__version__":
            assert (value.__doc__ or "").strip(), name
    with pytest.raises(AttributeError, match="no attribute 'nosuch'"):
        p3data.nosuch  # noqa: B018 - the lookup is the test
    assert set(p3data.__all__) <= set(dir(p3data))


def test_importing_p3data_loads_no_heavy_layer():
    code = ("import sys, p3data; p3data.__all__; "
            "print([m for m in ('seqio', 'tensorflow', 'apache_beam', 'p3data.read') "
            "if m in sys.modules])")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True, timeout=120)
    assert result.stdout.strip() == "[]"


def test_every_package_has_all():
    packages = [info.name for info in pkgutil.walk_packages([str(ROOT)], "p3data.")
                if info.ispkg] + ["p3data", "p3data.pipelines"]
    assert len(packages) > 10
    for name in packages:
        module = importlib.import_module(name)
        assert isinstance(getattr(module, "__all__", None), list), name
        for exported in module.__all__:
            assert hasattr(module, exported), f"{name}.{exported}"


def test_a_package_offers_only_its_all():
    """What a package's `__init__` binds is what its `__all__` says users may use: the rest is
    imported from the module that defines it (ARCHITECTURE.md, "Public modules")."""
    packages = [info.name for info in pkgutil.walk_packages([str(ROOT)], "p3data.")
                if info.ispkg and info.name != "p3data.data"]
    for name in packages:
        module = importlib.import_module(name)
        offered = {key for key, value in vars(module).items()  # re-exported from its modules
                   if not key.startswith("_") and not inspect.ismodule(value)
                   and getattr(value, "__module__", "").startswith(f"{name}.")}
        assert offered <= set(module.__all__), (name, sorted(offered - set(module.__all__)))
    fewshot = importlib.import_module("p3data.fewshot")
    assert fewshot.__all__ == ["FewshotSettings", "VariantMixture", "VariantSpec",
                               "define_variant_mixture"]
