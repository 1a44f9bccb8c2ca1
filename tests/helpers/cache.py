"""Shared helpers for the cache builder's tests."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from helpers.command_server import P3DATA, run_p3data
from p3data.datasets.catalog import Catalog
from p3data.datasets.samples import SAMPLES_DIR, generate_rows, sample_splits
from p3data.vocab import SAMPLE_VOCAB


def t0_only(pattern: str) -> str:
    """A `--tasks` pattern matching only T0's tasks of those `pattern` matches: a pattern
    matches few-shot variants' names (`<task>_<k>shot`) too, as seqio's `--tasks` does."""
    return rf"(?!.*_[0-9]+shot$)(?:{pattern})"


def task_args(*names: str) -> list[str]:
    """`--tasks` options choosing exactly these tasks."""
    return [arg for name in names for arg in ("--tasks", re.escape(name))]


def cache_command(output: Path, *args: str, data_dir: Path | None = None) -> list[str]:
    source = ["--data-dir", str(data_dir)] if data_dir else ["--samples"]
    return [P3DATA, "cache", "--output-dir", str(output), "--vocab", str(SAMPLE_VOCAB),
            *source, "--progress-every", "1", *args]


def run_cache(output: Path, *args: str, data_dir: Path | None = None, check: bool = True,
              env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    result = run_p3data(cache_command(output, *args, data_dir=data_dir)[1:],
                        env={**os.environ, **(env or {})})
    if check:
        assert result.returncode == 0, result.stderr[-4000:] + result.stdout[-2000:]
    return result


def write_mirror(root: Path, dataset: str, subset: str | None, rows: int, *,
                 seed: int = 0) -> None:
    """A local mirror of generated rows for every split of a dataset."""
    entry = Catalog.load().get(dataset, subset)
    folder = Path(entry.key.folder(root))
    folder.mkdir(parents=True, exist_ok=True)
    for split in sample_splits(entry.key):
        with (folder / f"{split}.jsonl").open("w") as handle:
            for row in generate_rows(entry, split, rows, seed):
                handle.write(json.dumps(row) + "\n")


def copy_samples(root: Path, dataset: str, subset: str | None = None) -> Path:
    source = SAMPLES_DIR / dataset / subset if subset else SAMPLES_DIR / dataset
    target = root / dataset / subset if subset else root / dataset
    target.mkdir(parents=True, exist_ok=True)
    for path in source.glob("*.jsonl"):
        (target / path.name).write_text(path.read_text())
    return target


def tree(root: Path) -> dict[str, bytes]:
    """Every file under root, by relative path."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


def env_without_mirror() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "P3DATA_DATA_DIR"}


def read_examples(name: str, split: str, cache: Path | None = None) -> list[dict]:
    """A task's examples through stock seqio: from `cache` (a task folder's root) or on the fly."""
    import seqio

    task = seqio.get_mixture_or_task(name)
    if cache is not None:
        task._cache_dir = str(cache / name)  # read this very cache, whatever else is registered
    dataset = task.get_dataset(None, split=split, shuffle=False, use_cached=cache is not None,
                               try_in_mem_cache=False)
    return list(dataset.as_numpy_iterator())


def assert_same_examples(a: list[dict], b: list[dict]) -> None:
    """Equal multisets of examples, every feature compared."""
    import numpy as np

    key = lambda e: (e["inputs_pretokenized"], e["targets_pretokenized"])  # noqa: E731
    assert len(a) == len(b) > 0
    for x, y in zip(sorted(a, key=key), sorted(b, key=key), strict=True):
        assert x.keys() == y.keys()
        for feature in x:
            np.testing.assert_array_equal(x[feature], y[feature], err_msg=feature)


def assert_packs(name: str, split: str, cache: Path) -> None:
    """seqio's packing EncDecFeatureConverter reads the cache into model features."""
    import seqio
    import tensorflow as tf

    seqio.get_mixture_or_task(name)._cache_dir = str(cache / name)
    dataset = seqio.get_dataset(
        name, task_feature_lengths={"inputs": 256, "targets": 32}, dataset_split=split,
        shuffle=False, use_cached=True, feature_converter=seqio.EncDecFeatureConverter(pack=True))
    batch = next(iter(dataset.batch(2)))
    assert batch["encoder_input_tokens"].shape == (2, 256)
    assert batch["decoder_target_tokens"].dtype == tf.int32
    assert tf.reduce_max(batch["encoder_segment_ids"]) >= 2  # several examples packed per row


_RENDERED: dict[tuple, str] = {}  # what `render_collection`'s command printed, by its input


def render_collection(collection: str, config: str, rows: Path, home: Path,
                      *options: str) -> list[dict]:
    """`p3data render --collection ... --dropped`'s records, with the templates of `home` (a
    session's install, never changed). The command loads the collection's task set as it
    starts (some 2 s for xP3's): it runs once a process for the same arguments and rows."""
    from p3data.cli import main
    from p3data.templates.install import ENV_HOME

    key = (collection, config, str(rows), rows.read_bytes(), str(home), options)
    if key not in _RENDERED:
        out = io.StringIO()
        with pytest.MonkeyPatch.context() as patch, contextlib.redirect_stdout(out), \
                contextlib.redirect_stderr(io.StringIO()):
            patch.setenv(ENV_HOME, str(home))
            assert main(["render", "--collection", collection, config, "--rows", str(rows),
                         "--dropped", *options]) == 0
        _RENDERED[key] = out.getvalue()
    return [json.loads(line) for line in _RENDERED[key].splitlines()]
