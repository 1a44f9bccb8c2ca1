"""Few-shot variants at the edges of their exemplar pool: a missing or empty pool split fails a
variant as an empty split fails a T0 task (its `_0shot` task, which shows no exemplars, builds
as before); a narrowed rebuild never keeps a split whose exemplars left their pool; each
variant split's manifest records its pool, and `verify` names a split whose exemplars are not
from the pool rows the same build holds."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from helpers.cache import copy_samples, read_examples, run_cache, tree
from helpers.fewshot import TaskSplit

from p3data.builder.fingerprint import pool_fingerprint
from p3data.builder.jobs import CacheConfig
from p3data.cli import main
from p3data.datasets.stores import open_store
from p3data.format.manifest import parse_manifest
from p3data.format.verify import verify_task
from p3data.taskset import load_definitions
from p3data.vocab import SAMPLE_VOCAB

pytestmark = pytest.mark.usefixtures("samples_in_seqio")

RTE = "super_glue_rte_GPT_3_style"
ZERO, THREE, TWIN = f"{RTE}_0shot", f"{RTE}_3shot", f"{RTE}_score_eval_1shot"
SPLITS = ("train", "validation", "test")


def _rte(root: Path) -> Path:
    """A mirror of RTE's sample rows under `root`; returns the folder of its split files."""
    return copy_samples(root / "mirror", "super_glue", "rte")


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _change_train(rte: Path) -> list[dict]:
    """New train rows: the first two left out, so every row after them has a new number."""
    rows = _rows(rte / "train.jsonl")[2:]
    (rte / "train.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    return rows


def _failed_lines(result: subprocess.CompletedProcess) -> dict[str, str]:
    return {line.split()[1].rstrip(":"): line for line in result.stdout.splitlines()
            if line.startswith("FAILED ")}


def _manifest(folder: Path) -> dict:
    return json.loads((folder / "manifest.json").read_text())


def _seqio_finds(task: str, cache: Path) -> bool:
    """Whether stock seqio, looking for cached tasks in `cache`, finds this one (it takes a
    task folder only once it holds COMPLETED)."""
    import seqio

    registered = seqio.get_mixture_or_task(task)
    before = seqio.utils.get_global_cache_dirs()
    seqio.utils.set_global_cache_dirs([str(cache)])
    registered._cache_dir = None
    try:
        return registered.cache_dir is not None
    finally:
        registered._cache_dir = None
        seqio.utils.set_global_cache_dirs(before)


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[Path, Path]:
    """(a mirror of RTE, a complete cache of RTE, its 0- and 3-shot variants and its twin's
    1-shot variant from it)."""
    root = tmp_path_factory.mktemp("edges")
    rte = _rte(root)
    out = root / "out"
    run_cache(out, "--tasks", "|".join([RTE, ZERO, THREE, TWIN]), data_dir=rte.parents[1])
    return rte.parents[1], out


@pytest.mark.parametrize("damage", ["empty", "missing"])
def test_a_variant_whose_exemplars_split_is_empty_or_missing_fails_in_one_line(tmp_path,
                                                                                damage):
    rte = _rte(tmp_path)
    whole = tmp_path / "whole"  # the 0-shot task from the intact rows
    run_cache(whole, "--tasks", ZERO, "--splits", "validation", data_dir=rte.parents[1])
    if damage == "empty":
        (rte / "train.jsonl").write_text("")
        problem = "its exemplars' split 'train' has no rows (the catalog lists 2,490); check " \
                  "the data files"  # the words an empty split of a T0 task gets
    else:
        (rte / "train.jsonl").unlink()
        problem = "its exemplars' split 'train' cannot be read (super_glue/rte: no rows for " \
                  f"split 'train' in the mirror; expected {rte / 'train.parquet'} or"
    out = tmp_path / "out"
    result = run_cache(out, "--tasks", f"{RTE}_[03]shot", "--splits", "validation",
                       data_dir=rte.parents[1], check=False)
    assert result.returncode == 1, result.stdout
    assert "Traceback" not in result.stderr
    failed = _failed_lines(result)
    assert list(failed) == [THREE]
    assert f"FAILED {THREE}: validation: {problem}" in failed[THREE]
    assert failed[THREE].endswith(f"a 3-shot prompt needs exemplars: for prompts without "
                                  f"them, build {ZERO}")
    assert not (out / THREE / "COMPLETED").exists() and not _seqio_finds(THREE, out)
    # the 0-shot task shows no exemplars and reads no pool: built, the same bytes as before
    assert tree(out / ZERO) == tree(whole / ZERO)
    assert _seqio_finds(ZERO, out)
    assert len(read_examples(ZERO, "validation", out)) == 10


def test_a_narrowed_rebuild_never_keeps_exemplars_that_left_their_pool(tmp_path):
    rte = _rte(tmp_path)
    mirror, out = rte.parents[1], tmp_path / "out"
    tasks = ["--tasks", f"{RTE}|{THREE}"]
    run_cache(out, *tasks, data_dir=mirror)
    same = run_cache(out, *tasks, "--splits", "train", data_dir=mirror)
    assert "2 already complete" in same.stderr  # the same train rows: every split kept
    before, manifest_before = tree(out / THREE), _manifest(out / THREE)
    train = _change_train(rte)
    refused = run_cache(out, *tasks, "--splits", "train", data_dir=mirror, check=False)
    assert refused.returncode == 1
    assert list(_failed_lines(refused)) == [THREE]
    line = _failed_lines(refused)[THREE]
    assert "its validation, test splits, whose exemplars came from rows of 'train' that have " \
           "changed since" in line and line.endswith("add --splits validation --splits test")
    assert tree(out / THREE) == before  # touched nothing
    assert _manifest(out / RTE)["splits"]["train"]["rows_read"] == len(train)  # T0's: rebuilt
    assert verify_task(str(out / RTE)) == []

    run_cache(out, *tasks, "--splits", "train", "--splits", "validation", "--splits", "test",
              data_dir=mirror)
    assert verify_task(str(out / THREE)) == []
    pools = {split: record["pool"] for split, record in _manifest(out / THREE)["splits"].items()}
    assert pools["validation"] == pools["test"] == pools["train"] != (
        manifest_before["splits"]["validation"].get("pool"))
    for split in ("validation", "test"):  # every exemplar shown is in the new pool, as it is
        pool = TaskSplit("super_glue", "rte", "GPT-3 style", split, _rows(rte / f"{split}.jsonl"),
                         pool_rows=train).pool()
        examples = read_examples(THREE, split, out)
        assert len(examples) == 10 and sum(e["num_shots"] for e in examples) == 30
        for example in examples:
            inputs = example["inputs_pretokenized"].decode()
            for row in example["exemplar_rows"].tolist():
                position = pool.position_of_row(row)
                assert position is not None and pool.text(position) in inputs, (split, row)


def test_each_variant_split_records_its_exemplar_pool(built):
    mirror, out = built
    variant = load_definitions().task(THREE)
    config = CacheConfig(output_dir=str(out), vocab_model=SAMPLE_VOCAB.read_bytes(),
                         data_dir=str(mirror))
    identity = open_store(variant.entry, mirror).identity("train")
    expected = {"split": "train",
                "fingerprint": pool_fingerprint(config, variant, "train", identity)}
    for task in (THREE, TWIN):  # one pool: the same rows, template and separators
        manifest = _manifest(out / task)
        assert {split: r["pool"] for split, r in manifest["splits"].items()} == {
            split: expected for split in SPLITS}
    for task in (RTE, ZERO):  # no exemplars, no pool: their manifests as before
        assert '"pool":' not in (out / task / "manifest.json").read_text()
    # a manifest written before pools were recorded reads, and verifies, as it did
    old = _manifest(out / THREE)
    for record in old["splits"].values():
        del record["pool"]
    assert all(record.pool is None for record in parse_manifest(
        json.dumps(old).encode(), "old manifest").splits.values())
    folder = Path(shutil.copytree(out / THREE, out.parent / "old" / THREE))
    (folder / "manifest.json").write_text(json.dumps(old))
    assert verify_task(str(folder)) == []


def _stale(built: tuple[Path, Path], root: Path, case: str) -> Path:
    """A cache of the 3-shot variant built from new train rows whose validation split is the
    one built from the old rows, as a narrowed rebuild used to keep it (`case`: as it kept it,
    with no pool recorded, or without a train split); returns its task folder."""
    mirror, out = built
    rte = copy_samples(root / "new", "super_glue", "rte")
    _change_train(rte)
    run_cache(root / "cache", "--tasks", THREE, data_dir=rte.parents[1])
    folder, old = root / "cache" / THREE, out / THREE
    assert verify_task(str(folder)) == []
    for path in old.glob("*validation*"):
        shutil.copy(path, folder / path.name)
    manifest, kept = _manifest(folder), _manifest(old)
    manifest["splits"]["validation"] = kept["splits"]["validation"]
    manifest["sources"]["validation"] = kept["sources"]["validation"]
    if case == "no pool recorded":
        for record in manifest["splits"].values():
            record.pop("pool", None)
    if case == "no train split":
        for key in ("splits", "sources", "split_mapping"):
            del manifest[key]["train"]
        for path in folder.glob("*train*"):
            path.unlink()
    (folder / "manifest.json").write_text(json.dumps(manifest))
    return folder


@pytest.mark.parametrize("case", ["kept", "no pool recorded", "no train split"])
def test_verify_names_a_split_whose_exemplars_are_not_from_the_pool_rows_the_build_holds(
        built, tmp_path, capsys, case):
    folder = _stale(built, tmp_path, case)
    code = main(["verify", str(tmp_path / "cache")])
    lines = capsys.readouterr().out.splitlines()
    assert code == 1 and lines[-1] == "FAILED: 1 complete tasks checked, 0 unfinished, 1 problems"
    where = f"{folder / 'manifest.json'}: "
    if case == "no train split":
        assert lines[0].startswith(f"{where}splits test and validation show exemplars from "
                                   "different 'train' rows (pools ")
    else:
        pools = "" if case == "no pool recorded" else " (pools "
        assert lines[0].startswith(f"{where}split validation's exemplars are not from the "
                                   f"'train' rows split train holds{pools}")
    assert lines[0].endswith("rebuild the task")


def test_verify_names_a_pool_that_is_not_its_rows(built, tmp_path, capsys):
    """The same rows with another pool recorded (a manifest edited, or a bug): named too."""
    folder = Path(shutil.copytree(built[1] / THREE, tmp_path / "cache" / THREE))
    manifest = _manifest(folder)
    manifest["splits"]["test"]["pool"] = {"split": "train", "fingerprint": "0" * 64}
    (folder / "manifest.json").write_text(json.dumps(manifest))
    problems = verify_task(str(folder))
    assert len(problems) == 1
    train = manifest["splits"]["train"]["pool"]["fingerprint"]
    assert problems[0] == (
        f"{folder / 'manifest.json'}: split test's exemplars are not from the 'train' rows "
        f"split train holds (pools 000000000000 and {train[:12]}): its prompts show exemplars "
        "no longer in their pool; rebuild the task")
