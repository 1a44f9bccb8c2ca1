"""Shim for tools that want a setup.py, e.g. Dataflow's `--setup_file=./setup.py`, which builds
an sdist of p3data (templates, catalog, samples and vocabulary included) for its workers.
Everything is declared in setup.cfg."""

from setuptools import setup

setup()
