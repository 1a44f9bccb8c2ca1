"""`p3data export --shape prompt-completion|messages`: TRL's standard rows, loaded by `datasets`
(each task's config and every task as one), their texts exactly the cache's (p3data's reader)
and, in source order, exactly what p3data's renderer makes of the source rows; provenance right
for a zero-shot task, a few-shot variant and a task whose template leaves rows out (its rows
unknown, said in the card), and for a cache without a manifest; reruns in another shape."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest
import yaml
from helpers.cache import run_cache
from helpers.templates import template_entry, write_templates

from p3data.cli import main
from p3data.dataset_key import DatasetKey
from p3data.datasets.samples import sample_rows
from p3data.export import ExportSettings, export_tasks
from p3data.read import open_cache
from p3data.taskset import load_definitions
from p3data.templates.render import DatasetRenderer, Rendered

BASE = "super_glue_copa_C1_or_C2_premise_so_because_"
SHOT = BASE + "_1shot"
TWIN = BASE + "_score_eval"
HALF = "super_glue_copa_second_only"  # its template keeps the rows of label 1 only
SHAPES = ("prompt-completion", "messages")
FORMATS = ("parquet", "jsonl")
COPA = DatasetKey("super_glue", "copa")


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    """Three output shards per split: source order is read across them."""
    root = tmp_path_factory.mktemp("shapes")
    write_templates(root / "templates", "super_glue", "copa", template_entry(
        "half-1", "second only", "{% if label == 1 %}{{ premise }} ||| {{ choice2 }}{% endif %}",
        original_task=False))
    run_cache(root / "cache", "--tasks", f"{BASE}(_1shot|_score_eval)?|{HALF}", "--shards", "3",
              env={"P3DATA_TEMPLATE_DIRS": str(root / "templates")})
    return root / "cache"


@pytest.fixture(scope="module")
def exports(cache, tmp_path_factory) -> dict[tuple[str, str], Path]:
    root = tmp_path_factory.mktemp("shaped")
    for shape in SHAPES:
        for format_ in FORMATS:
            out = root / f"{shape}-{format_}"
            assert main(["export", str(cache), "--out", str(out), "--shape", shape,
                         "--format", format_]) == 0
    return {(shape, format_): root / f"{shape}-{format_}" for shape in SHAPES
            for format_ in FORMATS}


def load(*args, tmp_path: Path, **kwargs):
    import datasets

    return datasets.load_dataset(*args, cache_dir=str(tmp_path / "hf"), **kwargs)


def texts(row: dict) -> tuple[str, str]:
    """(inputs, targets) of a row of either shape."""
    if "messages" in row:
        user, assistant = row["messages"]
        assert (user["role"], assistant["role"]) == ("user", "assistant")
        return user["content"], assistant["content"]
    return row["prompt"], row["completion"]


def rendered(split: str) -> list[Rendered]:
    """The base template's render of each source row of `split` (p3data's renderer)."""
    template = load_definitions().task(BASE).template
    outcomes = DatasetRenderer([template]).render_batch(sample_rows(COPA, split))[template.name]
    assert all(isinstance(o, Rendered) for o in outcomes)
    return outcomes


@pytest.mark.parametrize("kind", [(s, f) for s in SHAPES for f in FORMATS], ids="-".join)
def test_rows_are_the_caches_texts_with_their_provenance(cache, exports, tmp_path, kind):
    out, reader = exports[kind], open_cache(str(cache))
    for task in (BASE, SHOT, HALF):
        manifest = reader.manifest(task)
        loaded = load(str(out), task, tmp_path=tmp_path)
        assert set(loaded) == {"train", "validation", "test"} - (
            {"test"} if task == HALF else set())  # copa's test rows are unlabelled: no file
        for split, rows in loaded.items():
            rows = list(rows)
            examples = list(reader.split(task, split))
            assert Counter(texts(row) for row in rows) == Counter(
                (e["inputs_pretokenized"], e["targets_pretokenized"]) for e in examples)
            common = {"task": task, "template_name": manifest.template.name,
                      "template_id": manifest.template.id, "dataset": "super_glue",
                      "subset": "copa", "split": split, "source_split": split,
                      "source_repo": None, "source_revision": None}
            for row in rows:
                assert {k: row["provenance"][k] for k in common} == common
            about = [row["provenance"] for row in rows]
            if task == HALF:  # rows were left out: which source row each is, is unknown
                assert manifest.splits[split].rows_kept < manifest.splits[split].rows_read
                assert {p["row"] for p in about} == {None}
                continue
            source = rendered(split)
            assert [p["row"] for p in about] == list(range(len(source)))  # source order
            if task == BASE:
                assert [texts(row) for row in rows] == [(r.inputs, r.targets) for r in source]
                assert {(p["num_shots"], p["exemplar_split"], p["exemplar_rows"])
                        for p in about} == {(None, None, None)}
            else:  # the query's render ends the prompt, after its exemplar's
                by_number = {tuple(e["exemplar_rows"]): e for e in examples}
                train = rendered("train")
                for row, p, query in zip(rows, about, source, strict=True):
                    prompt, completion = texts(row)
                    assert prompt.endswith(query.inputs) and completion == query.targets
                    assert (p["num_shots"], p["exemplar_split"]) == (1, "train")
                    assert train[p["exemplar_rows"][0]].inputs in prompt
                    assert p["row"] not in (p["exemplar_rows"] if split == "train" else [])
                    assert by_number[tuple(p["exemplar_rows"])]["num_shots"] == 1


def test_every_task_loads_as_one_and_twins_are_left_out(cache, exports, tmp_path, capsys):
    for (shape, format_), out in exports.items():
        together = load(str(out), "all_tasks", tmp_path=tmp_path)
        reader = open_cache(str(cache))
        for split, rows in together.items():
            tasks = Counter(row["provenance"]["task"] for row in rows)
            counts = {task: len(reader.split(task, split)) for task in (BASE, SHOT, HALF)}
            assert tasks == {task: n for task, n in counts.items() if n}, (shape, format_)
        assert not (out / TWIN).exists()
    out = exports["messages", "parquet"].parent / "again"
    assert main(["export", str(cache), "--out", str(out), "--shape", "messages"]) == 0
    assert f"1 score-eval twins left out, e.g. {TWIN}" in capsys.readouterr().err


def test_the_card_says_the_shape_the_columns_and_what_is_unknown(exports):
    for (shape, _), out in exports.items():
        text = (out / "README.md").read_text()
        header = yaml.safe_load(text.split("---\n")[1])
        assert [c["config_name"] for c in header["configs"]] == [BASE, SHOT, HALF, "all_tasks"]
        names = [f["name"] for f in header["dataset_info"][0]["features"]]
        assert names == (["prompt", "completion"] if shape == "prompt-completion"
                         else ["messages"]) + ["provenance"]
        assert f"Shape `{shape}`" in text
        assert ("no separator is added" in text) == (shape == "prompt-completion")
        lines = {line.split(" | ")[0].lstrip("| "): line for line in text.splitlines()
                 if line.startswith("| ")}
        assert lines[BASE].endswith("| source_repo, source_revision |")
        assert lines[HALF].endswith("| source_repo, source_revision, row |")
        assert 'datasets.load_dataset("path/to/this/folder", "all_tasks", split="train")' in text


def test_a_cache_without_manifest_says_what_it_does_not_know(cache, tmp_path):
    """A stock seqio cache (or a downloaded P3) records no template, dataset or rows."""
    source = tmp_path / "cache"
    shutil.copytree(cache / BASE, source / BASE)
    (source / BASE / "manifest.json").unlink()
    out = tmp_path / "out"
    assert main(["export", str(source), "--out", str(out), "--shape", "prompt-completion",
                 "--format", "jsonl"]) == 0
    rows = [json.loads(line) for line in (out / BASE / "train-00000-of-00001.jsonl").open()]
    examples = list(open_cache(str(source)).split(BASE, "train"))
    assert [texts(row) for row in rows] == [(e["inputs_pretokenized"],
                                             e["targets_pretokenized"]) for e in examples]
    assert {k for k, v in rows[0]["provenance"].items() if v is not None} == {"task", "split"}
    assert ("| template_name, template_id, dataset, subset, source_split, source_repo, "
            "source_revision, row |") in (out / "README.md").read_text()


def test_another_shape_exports_anew_and_one_card_holds_one_shape(cache, tmp_path):
    out = tmp_path / "out"
    assert main(["export", str(cache), "--out", str(out), "--tasks", BASE]) == 0
    assert main(["export", str(cache), "--out", str(out), "--tasks", BASE,
                 "--shape", "messages"]) == 0
    rows = load(str(out), BASE, split="train", tmp_path=tmp_path)
    assert rows.column_names == ["messages", "provenance"]
    record = json.loads((out / BASE / ".p3data-export.json").read_text())
    assert record["settings"]["shape"] == "messages"
    assert main(["export", str(cache), "--out", str(out), "--tasks", HALF,
                 "--shape", "prompt-completion"]) == 2  # BASE is in messages


def test_only_twins_asked_for_is_one_line(cache, tmp_path, capsys):
    """The command line refuses before writing; the API fails the twin's task, no other."""
    outcomes = export_tasks(open_cache(str(cache)), [TWIN, BASE], str(tmp_path / "api"),
                            settings=ExportSettings("parquet", shape="messages"))
    assert [(o.task, o.status) for o in outcomes] == [(TWIN, "failed"), (BASE, "exported")]
    assert outcomes[0].reason.startswith(f"{TWIN}: a score-eval twin")
    assert main(["export", str(cache), "--out", str(tmp_path / "out"), "--tasks", TWIN,
                 "--shape", "prompt-completion"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "all score-eval twins" in err and "--shape p3" in err
    assert not (tmp_path / "out").exists()


def test_rows_read_from_the_hub_name_its_repository_and_revision(tmp_path, monkeypatch):
    from helpers.hub import EXPORT, TREC_ROWS, trec_entry, write_trec_export

    from p3data.datasets.catalog import ENV_CATALOG
    from p3data.datasets.hub import ENV_HUB_ROOT
    from p3data.datasets.stores import ENV_DATA_DIR
    from p3data.vocab import SAMPLE_VOCAB

    monkeypatch.setenv(ENV_HUB_ROOT, str(tmp_path / "hub"))
    monkeypatch.delenv(ENV_DATA_DIR, raising=False)
    write_trec_export(tmp_path / "hub")
    trec_entry(tmp_path)  # writes the catalog file
    monkeypatch.setenv(ENV_CATALOG, str(tmp_path / "trec_catalog.yaml"))
    task = "trec_what_category_best_describe"
    assert main(["cache", "--tasks", task, "--output-dir", str(tmp_path / "cache"),
                 "--vocab", str(SAMPLE_VOCAB), "--progress-every", "100"]) == 0
    out = tmp_path / "out"
    assert main(["export", str(tmp_path / "cache"), "--out", str(out), "--shape", "messages",
                 "--format", "jsonl"]) == 0
    rows = [json.loads(line) for line in (out / task / "train-00000-of-00001.jsonl").open()]
    assert len(rows) == len(TREC_ROWS)
    assert {(p["dataset"], p["subset"], p["source_repo"], p["source_revision"])
            for p in (row["provenance"] for row in rows)} == {
        ("trec", None, "CogComp/trec", EXPORT)}
    assert [row["provenance"]["row"] for row in rows] == list(range(len(TREC_ROWS)))
    assert f"| {task} | train, test | 8 | none |" in (out / "README.md").read_text()
