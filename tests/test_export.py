"""`p3data export`: P3's Hub layout read back by `datasets` exactly as p3data's reader reads the
cache (parquet and JSON lines, both ways of loading, unusual and empty splits), typed columns,
the card's sizes, shards and row groups, resuming after a failure, and `--mixture`."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from helpers.cache import run_cache, tree
from helpers.templates import template_entry, write_templates

from p3data.cli import main
from p3data.export.exported import ExportSettings
from p3data.export.folder import export_tasks
from p3data.export.formats import EXPORT_FORMATS, ExportFormat
from p3data.lock import output_lock
from p3data.read import open_cache

# A task with answer choices, its score-eval twin, one with an unusual split name
# (`unsupervised`), and one whose test split is empty (every test row has label -1).
TASKS = ["super_glue_copa_exercise", "super_glue_copa_exercise_score_eval",
         "imdb_Movie_Expressed_Sentiment", "super_glue_copa_labelled"]
LABELLED = template_entry(
    "labelled-1", "labelled",
    "{% if label != -1 %}{{ premise }} ||| {{ answer_choices[label] }}{% endif %}",
    "{{ choice1 }} ||| {{ choice2 }}", original_task=False)
SCHEMA = {"inputs": pa.list_(pa.int32()), "targets": pa.list_(pa.int32()),
          "inputs_pretokenized": pa.string(), "targets_pretokenized": pa.string()}
CHOICES = {"answer_choices": pa.list_(pa.string())}
TWIN = {"idx": pa.list_(pa.int32()), "is_correct": pa.bool_(), "weight": pa.float32()}


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("export")
    write_templates(root / "templates", "super_glue", "copa", LABELLED)
    run_cache(root / "cache", "--tasks", "|".join(TASKS),
              env={"P3DATA_TEMPLATE_DIRS": str(root / "templates")})
    return root / "cache"


@pytest.fixture(scope="module")
def parquet_dir(cache, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("parquet")
    assert main(["export", str(cache), "--out", str(out)]) == 0
    return out


def reader_examples(cache: Path, task: str, split: str) -> list[dict]:
    return list(open_cache(str(cache)).split(task, split).examples())


def assert_same_rows(rows, examples: list[dict]) -> None:
    """`datasets` rows equal the reader's examples, in order, feature by feature."""
    rows = list(rows)
    assert len(rows) == len(examples)
    for row, example in zip(rows, examples, strict=True):
        assert row.keys() == example.keys()
        for name, value in example.items():
            expected = value.tolist() if isinstance(value, np.ndarray | np.generic) else value
            assert row[name] == expected, name


def load(*args, tmp_path: Path, **kwargs):
    import datasets

    return datasets.load_dataset(*args, cache_dir=str(tmp_path / "hf"), **kwargs)


def test_datasets_loads_what_the_reader_reads(cache, parquet_dir, tmp_path):
    reader = open_cache(str(cache))
    for task in TASKS:
        splits = reader.splits(task)
        by_card = load(str(parquet_dir), task, tmp_path=tmp_path)
        assert set(by_card) == {split for split in splits if len(reader.split(task, split))}
        by_folder = load("parquet", data_dir=str(parquet_dir / task), tmp_path=tmp_path)
        for split in splits:
            examples = reader_examples(cache, task, split)
            if examples:
                assert_same_rows(by_card[split], examples)
            if split in by_folder:  # `datasets` names a folder's splits by keyword only
                assert_same_rows(by_folder[split], examples)
    assert "unsupervised" in load(str(parquet_dir), "imdb_Movie_Expressed_Sentiment",
                                  tmp_path=tmp_path)
    # an empty split has no file, as in P3 (`datasets` fails on a split without rows)
    assert len(reader.split("super_glue_copa_labelled", "test")) == 0
    assert not list((parquet_dir / "super_glue_copa_labelled").glob("test-*"))


def test_columns_are_typed_from_the_info_files(parquet_dir):
    expected = {"super_glue_copa_exercise": SCHEMA | CHOICES,
                "super_glue_copa_exercise_score_eval": SCHEMA | TWIN,
                "super_glue_copa_labelled": SCHEMA | CHOICES}
    for task, types in expected.items():
        for path in (parquet_dir / task).glob("*.parquet"):
            schema = pq.read_schema(path)
            assert dict(zip(schema.names, schema.types, strict=True)) == types, path
            assert schema.names == sorted(types)  # P3's column order on the Hub


def test_card_sizes_are_the_caches_stats(cache, parquet_dir):
    text = (parquet_dir / "README.md").read_text()
    header = yaml.safe_load(text.split("---\n")[1])
    assert [c["config_name"] for c in header["configs"]] == sorted(TASKS)
    for info in header["dataset_info"]:
        folder = cache / info["config_name"]
        stats = {p.name[len("stats."):-len(".json")]: json.loads(p.read_text())["examples"]
                 for p in folder.glob("stats.*.json")}
        assert {s["name"]: s["num_examples"] for s in info["splits"]} == {
            split: examples for split, examples in stats.items() if examples}
        assert info["download_size"] == sum(
            p.stat().st_size for p in (parquet_dir / info["config_name"]).glob("*.parquet"))


def test_jsonl_round_trip(cache, tmp_path):
    out = tmp_path / "jsonl"
    assert main(["export", str(cache), "--out", str(out), "--format", "jsonl",
                 "--tasks", "super_glue_copa_exercise_score_eval|imdb.*"]) == 0
    for task in ("super_glue_copa_exercise_score_eval", "imdb_Movie_Expressed_Sentiment"):
        by_card = load(str(out), task, tmp_path=tmp_path)
        by_folder = load("json", data_dir=str(out / task), tmp_path=tmp_path)
        for split in open_cache(str(cache)).splits(task):
            examples = reader_examples(cache, task, split)
            assert_same_rows(by_card[split], examples)
            if split in by_folder:
                assert_same_rows(by_folder[split], examples)
    twin = load(str(out), "super_glue_copa_exercise_score_eval", split="train", tmp_path=tmp_path)
    assert twin.features["weight"].dtype == "float32"  # typed by the card, not inferred


def test_shards_and_row_groups_are_bounded(cache, tmp_path):
    task = "super_glue_copa_exercise_score_eval"
    settings = ExportSettings("parquet", examples_per_shard=8, row_group_examples=3)
    outcomes = export_tasks(open_cache(str(cache)), [task], str(tmp_path), settings=settings)
    assert [o.status for o in outcomes] == ["exported"]
    examples = reader_examples(cache, task, "train")
    files = sorted((tmp_path / task).glob("train-*.parquet"))
    count = -(-len(examples) // 8)
    assert [f.name for f in files] == [f"train-{i:05d}-of-{count:05d}.parquet"
                                       for i in range(count)]
    for path in files:
        metadata = pq.ParquetFile(path).metadata
        assert metadata.num_rows <= 8
        assert all(metadata.row_group(i).num_rows <= 3 for i in range(metadata.num_row_groups))
    assert_same_rows(load(str(tmp_path), task, split="train", tmp_path=tmp_path), examples)


def test_resume_after_a_failure_redoes_only_what_failed(cache, parquet_dir, tmp_path, capsys):
    source = tmp_path / "cache"
    shutil.copytree(cache, source)
    shard = source / "super_glue_copa_exercise" / "test.tfrecord-00000-of-00001"
    intact = shard.read_bytes()
    shard.write_bytes(intact[:40] + bytes([intact[40] ^ 0xFF]) + intact[41:])
    out = tmp_path / "out"

    assert main(["export", str(source), "--out", str(out)]) == 1
    printed = capsys.readouterr().out
    failure = [line for line in printed.splitlines() if line.startswith("FAILED")]
    assert len(failure) == 1 and "super_glue_copa_exercise:" in failure[0]
    assert re.search(rf"{re.escape(str(shard))}: .*byte \d+", failure[0])  # file, offset
    card = yaml.safe_load((out / "README.md").read_text().split("---\n")[1])
    assert "super_glue_copa_exercise" not in [c["config_name"] for c in card["configs"]]
    assert not list(out.rglob(".p3data-tmp-*"))
    before = {p: (p.stat().st_ino, p.stat().st_mtime_ns) for p in out.rglob("*.parquet")}
    failed = out / "super_glue_copa_exercise"
    assert failed / "train-00000-of-00001.parquet" in before  # written before the failure
    assert not (failed / "test-00000-of-00001.parquet").exists()

    shard.write_bytes(intact)
    assert main(["export", str(source), "--out", str(out)]) == 0
    lines = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()}
    assert {task: lines[task].endswith("already exported") for task in TASKS} == {
        task: task != "super_glue_copa_exercise" for task in TASKS}
    after = {p: (p.stat().st_ino, p.stat().st_mtime_ns) for p in out.rglob("*.parquet")}
    assert all(after[p] == before[p] for p in before)  # nothing done was written again
    assert tree(out) == tree(parquet_dir)


def test_mixtures_select_their_tasks_present(cache, tmp_path):
    from p3data.taskset import load_definitions

    mixtures = load_definitions().mixtures
    names = ("t0_train", "t0_eval_score_eval")
    wanted = sorted({t for m in names for t in mixtures[m].tasks} & set(TASKS))
    assert 0 < len(wanted) < len(TASKS)
    out = tmp_path / "out"
    assert main(["export", str(cache), "--out", str(out), "--mixture", names[0],
                 "--mixture", names[1]]) == 0
    assert sorted(p.name for p in out.iterdir() if p.is_dir()) == wanted
    card = yaml.safe_load((out / "README.md").read_text().split("---\n")[1])
    assert [c["config_name"] for c in card["configs"]] == wanted


class TsvRows:
    """A format registered by a test: tab-separated texts, one line per example."""

    def __init__(self, handle, schema):
        self.handle, self.names = handle, [n for n in schema.names if n.endswith("_pretokenized")]

    def write(self, examples):
        self.handle.write(b"".join(b"\t".join(e[n].encode() for n in self.names) + b"\n"
                                   for e in examples))
        return 0

    def close(self):
        pass


def test_a_format_is_one_registered_entry(cache, tmp_path, monkeypatch):
    """The command line's choices, the writer and which files are exported data all follow
    the registry: a format added there is exported, and its files replaced like any other's."""
    monkeypatch.setitem(EXPORT_FORMATS, "tsv", ExportFormat("tsv", ".tsv", TsvRows))
    task = "super_glue_copa_exercise"
    out = tmp_path / "out"
    assert main(["export", str(cache), "--out", str(out), "--tasks", task, "--format", "tsv",
                 "--examples-per-shard", "4"]) == 0
    texts = "".join(f"{e['inputs_pretokenized']}\t{e['targets_pretokenized']}\n"
                    for e in reader_examples(cache, task, "train"))
    files = sorted((out / task).glob("train-*"))
    assert all(p.suffix == ".tsv" for p in files)
    assert len(files) > 1 and "".join(p.read_text() for p in files) == texts
    assert main(["export", str(cache), "--out", str(out), "--tasks", task, "--format",
                 "tsv"]) == 0
    assert [p.name for p in (out / task).glob("train-*")] == ["train-00000-of-00001.tsv"]


def test_other_settings_export_anew_and_leave_no_stale_files(cache, tmp_path):
    task = "super_glue_copa_exercise"
    out = tmp_path / "out"
    assert main(["export", str(cache), "--out", str(out), "--tasks", task]) == 0
    assert main(["export", str(cache), "--out", str(out), "--tasks", task,
                 "--examples-per-shard", "4"]) == 0
    count = -(-len(reader_examples(cache, task, "train")) // 4)
    assert sorted(p.name for p in (out / task).glob("train-*")) == [
        f"train-{i:05d}-of-{count:05d}.parquet" for i in range(count)]
    # one card loads one format
    assert main(["export", str(cache), "--out", str(out), "--format", "jsonl",
                 "--tasks", "imdb.*"]) == 2


def test_a_held_lock_is_one_line(cache, tmp_path, capsys):
    with output_lock(str(tmp_path), command="p3data export elsewhere"):
        assert main(["export", str(cache), "--out", str(tmp_path)]) == 2
    error = capsys.readouterr().err.strip()
    assert "\n" not in error and "p3data export elsewhere" in error
    assert "wait for it to end" in error and "--force" not in error  # a live run keeps its lock


def test_export_imports_neither_tensorflow_nor_seqio(cache, tmp_path):
    code = ("import sys; from p3data.cli import main; "
            f"assert main(['export', {str(cache)!r}, '--out', {str(tmp_path)!r}, "
            "'--tasks', 'imdb.*']) == 0; "
            "print([m for m in ('tensorflow', 'seqio', 'apache_beam') if m in sys.modules])")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True, timeout=300)
    assert result.stdout.splitlines()[-1] == "[]"


TEMPORARY = f".p3data-tmp-{'0' * 31}1-train-00000-of-00001.parquet"  # p3data's exact shape


def snapshot(root: Path) -> dict[str, bytes | None]:
    """Every file (bytes) and folder (None) under root, by relative path."""
    return {str(p.relative_to(root)): p.read_bytes() if p.is_file() else None
            for p in sorted(root.rglob("*"))}


@pytest.mark.parametrize("plant", [
    {"README.md": "my notes\n"},
    {".p3data-tmp-mine.txt": "mine"},  # named like a temporary, but not of p3data's shape
    {"super_glue_copa_exercise/notes.txt": "x"},  # a folder named like a task
    {"logs/run.txt": "x", "super_glue_copa_exercise/.p3data-export.json": "{}"},
])
def test_a_folder_export_did_not_write_is_refused_untouched(cache, tmp_path, capsys, plant):
    out = tmp_path / "mine"
    for name, text in plant.items():
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        (out / name).write_text(text)
    before = snapshot(out)
    assert main(["export", str(cache), "--out", str(out)]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "not written by p3data export" in error
    assert "export to an empty folder or one p3data export wrote" in error
    assert snapshot(out) == before  # nothing written, nothing deleted, no lock left


@pytest.mark.parametrize("where", [".", "exported", "super_glue_copa_exercise", ".."])
def test_export_never_writes_into_its_cache(cache, tmp_path, capsys, where):
    source = tmp_path / "cache"
    shutil.copytree(cache, source)
    says = {".": "is the cache itself", "..": "holds the cache"}.get(where,
                                                                     "is inside the cache")
    before = snapshot(tmp_path)
    assert main(["export", str(source), "--out", str(source / where)]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and says in error
    assert snapshot(tmp_path) == before


def test_only_p3datas_own_temporaries_are_swept(cache, parquet_dir, tmp_path):
    """A rerun sweeps what a dead export left (names of exactly p3data's shape) and keeps a
    file of the user's that only looks like one."""
    out = tmp_path / "out"
    shutil.copytree(parquet_dir, out)
    folder = out / "super_glue_copa_exercise"
    (folder / TEMPORARY).write_bytes(b"half a shard")
    for name in (".p3data-tmp-mine.txt", ".p3data-tmp-0123abcd-train-00000-of-00001.parquet"):
        (folder / name).write_text("mine")
    assert main(["export", str(cache), "--out", str(out)]) == 0
    assert not (folder / TEMPORARY).exists()
    assert (folder / ".p3data-tmp-mine.txt").read_text() == "mine"
    assert (folder / ".p3data-tmp-0123abcd-train-00000-of-00001.parquet").read_text() == "mine"


def test_a_missing_shard_fails_its_task_only(cache, tmp_path, capsys):
    source = tmp_path / "cache"
    shutil.copytree(cache, source)
    shard = source / "super_glue_copa_exercise" / "train.tfrecord-00000-of-00001"
    shard.unlink()
    out = tmp_path / "out"
    assert main(["export", str(source), "--out", str(out)]) == 1
    printed = capsys.readouterr().out.splitlines()
    assert [line for line in printed if line.startswith("FAILED")] == [
        f"FAILED super_glue_copa_exercise: {shard}: missing (listed in manifest.json); check "
        "the cache with p3data verify"]
    assert printed[-1].startswith("3 exported, 0 already exported, 1 failed")
    assert sorted(p.name for p in out.iterdir() if p.is_dir()) == sorted(
        set(TASKS) - {"super_glue_copa_exercise"})


@pytest.mark.parametrize("selection", [[], ["--tasks", "super_glue_copa_.*"],
                                       ["--mixture", "t0++_train"]])
def test_an_unfinished_task_asked_for_is_named_and_fails_the_run(cache, tmp_path, capsys,
                                                                 selection):
    source = tmp_path / "cache"
    shutil.copytree(cache, source)
    (source / "super_glue_copa_exercise" / "COMPLETED").unlink()
    out = tmp_path / "out"
    assert main(["export", str(source), "--out", str(out), *selection]) == 1
    printed = capsys.readouterr().out.splitlines()
    assert [line for line in printed if line.startswith("FAILED")] == [
        f"FAILED super_glue_copa_exercise: {source / 'super_glue_copa_exercise'}: not complete "
        "(no COMPLETED: a run is writing it or crashed); rerun p3data cache to finish it"]
    assert " 1 failed" in printed[-1]
    assert not (out / "super_glue_copa_exercise").exists()


@pytest.mark.crash  # kills the command before each of its file operations
def test_a_killed_export_is_finished_by_a_rerun(cache, tmp_path):
    """Killed before any of its file operations, an export leaves a folder its rerun knows
    as its own (not refused as the user's), and the rerun (taking over the dead run's lock)
    writes exactly what an uninterrupted export does."""
    crash = str(Path(__file__).parent / "helpers" / "crash_command.py")
    (tmp_path / "empty").mkdir()
    args = ["export", str(cache), "--out", "{out}", "--tasks", "super_glue_copa_exercise"]

    def crash_export(outputs: Path, points: list[int]) -> list[int]:
        subprocess.run([sys.executable, crash, str(outputs), ",".join(map(str, points)),
                        str(tmp_path / "empty"), "--", *args], check=True, timeout=900)
        return [int((outputs / f"{point}.code").read_text()) for point in points]

    assert crash_export(tmp_path / "whole", [-1]) == [0]
    whole = tree(tmp_path / "whole" / "-1")
    points = list(range(len((tmp_path / "whole" / "-1.trace").read_text().splitlines())))
    assert len(points) == 2 + 2 + 3 * 4 + 2 + 2  # lock, record, per split: shard and record,
    assert crash_export(tmp_path / "runs", points) == [137] * len(points)  # record, card
    for point in points:
        out = tmp_path / "runs" / str(point)
        rerun = [arg.replace("{out}", str(out)) for arg in args]
        assert main([*rerun, "--force"]) == 0, point
        assert tree(out) == whole, point
