"""`p3data cache` builds xP3's tasks as `p3data render --collection` renders them: each row
through its dataset's step, then the row rule of its language folder, rows numbered as in
their split; drops counted by reason, in the manifest and the run's summary. T0's tasks
(T5's vocabulary) and xP3's (mT5's) are never one cache."""

from __future__ import annotations

import json
import os
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest
from helpers.cache import read_examples, render_collection, run_cache, task_args, tree
from helpers.crash_run import crash_points, crash_run, kind

from p3data.builder import fingerprint
from p3data.builder.jobs import CacheConfig
from p3data.datasets.catalog import Catalog
from p3data.format.manifest import read_manifest
from p3data.format.verify import verify_task
from p3data.t0 import TaskSpec
from p3data.taskset import TaskSet, load_definitions, source_splits
from p3data.templates import Template
from p3data.templates.install import ENV_HOME
from p3data.templates.render import (
    BLANK,
    RENDER_ERROR,
    STEP_DROPPED,
    TEMPLATE_SPLIT_ERROR,
    XP3Rule,
)
from p3data.vocab import SAMPLE_VOCAB
from p3data.xp3_recipe.steps import STEPS

T0_MRPC = "glue_mrpc_equivalent"
FLORES = "xp3_facebook_flores_eng_Latn_swh_Latn_prev_eng_Latn_swh_Latn"
# (collection, config as the recipe spells it) -> its tasks built here
CONFIGS = {
    ("xp3mt", "paws-x/es"): ["xp3mt_paws_x_es_paraphrase_task_esmt",  # Spanish prompts
                             "xp3mt_paws_x_es_Concatenation_esmt"],
    ("xp3", "codeparrot/apps/all"): ["xp3_codeparrot_apps_all_qsol"],
    ("xp3", "codeparrot/xlcost-text-to-code/Python-program-level"): [
        "xp3_codeparrot_xlcost_text_to_code_Python_program_level_solpy"],
    ("xp3", "GEM/wiki_lingua/en_fr"): ["xp3_GEM_wiki_lingua_en_fr_article_summary_en",
                                       "xp3_GEM_wiki_lingua_en_fr_tldr_en"],
    ("xp3", "mlqa/mlqa.es.es"): ["xp3_mlqa_mlqa.es.es_xp3longcontinue"],
    ("xp3", "glue/mrpc"): ["xp3_glue_mrpc_equivalent"],  # over T0's catalog entry
    # one template name, in English (xP3's) and Arabic (xP3mt's), over one split in one run
    ("xp3", "xquad/xquad.ar"): ["xp3_xquad_xquad.ar_read_passage"],
    ("xp3mt", "xquad/xquad.ar"): ["xp3mt_xquad_xquad.ar_read_passage"],
    # no train split: seqio's train is dev then devtest, each in shards of 2 rows
    ("xp3", "facebook/flores/eng_Latn-swh_Latn"): [FLORES],
}
XP3_TASKS = [task for tasks in CONFIGS.values() for task in tasks]


def _paws(i: int) -> dict:
    return {"id": i, "sentence1": f"La casa {i} es grande.", "sentence2": f"La casa {i} es "
            "enorme.", "label": i % 2}


def _apps(i: int, solutions: list[str] | str) -> dict:
    return {"problem_id": i, "question": f"Print {i}.", "difficulty": "introductory",
            "solutions": solutions if isinstance(solutions, str) else json.dumps(solutions),
            "input_output": "{}", "url": f"https://example.org/{i}", "starter_code": ""}


def _wiki(i: int, source: str, target: str) -> dict:
    return {"gem_id": f"w{i}", "gem_parent_id": f"w{i}", "source_language": source,
            "target_language": target, "source": f"Article {i}, in {source}.",
            "target": f"Summary {i}, in {target}.", "references": [f"Summary {i}."]}


def _flores(i: int, split: str) -> dict:
    return {"id": i, "URL": f"https://example.org/{i}", "domain": "wikinews", "topic": "news",
            "has_image": 0, "has_hyperlink": 0, "sentence_eng_Latn": f"Sentence {i} of {split}.",
            "sentence_swh_Latn": f"Sentensi {i} ya {split}."}


def _mlqa(i: int, answered: bool) -> dict:
    context = f"Contexto {i}: el río más largo de España es el Tajo, que pasa por Toledo."
    answers = ({"answer_start": [40], "text": ["el Tajo"]} if answered
               else {"answer_start": [], "text": []})
    return {"id": f"q{i}", "context": context, "question": "¿Cuál es el río más largo?",
            "answers": answers}


# Per dataset folder and split: the rows (apps: a row without solutions among others, so that
# the seeded pick of each later row shows it keeps its number; several shards of 2 rows).
ROWS = {
    ("paws-x", "es"): {split: [_paws(i) for i in range(4)] for split in ("train", "test")},
    ("codeparrot/apps", "all"): {split: [
        _apps(0, ["print(0)", "print('0')", "print(str(0))"]), _apps(1, "[]"), _apps(2, ""),
        *[_apps(i, [f"print({i})", f"print('{i}')", f"x = {i}\nprint(x)", f"print({i}+0)"])
          for i in range(3, 7)]] for split in ("train", "test")},
    ("codeparrot/xlcost-text-to-code", "Python-program-level"): {split: [
        {"text": "Check if a number is even", "code": "def is_even ( n ) : NEW_LINE INDENT "
         "return n % 2 == 0 NEW_LINE DEDENT print ( is_even ( 4 ) ) NEW_LINE"},
        {"text": "Print a string", "code": "print ( \" a ▁ b \" ) NEW_LINE"},
        {"text": "", "code": ""}] for split in ("train", "test")},
    ("GEM/wiki_lingua", "en_fr"): {split: [
        _wiki(i, *pair) for i, pair in enumerate([("en", "fr"), ("fr", "en"), ("en", "fr"),
                                                  ("fr", "en"), ("fr", "en"), ("en", "fr")])]
        for split in ("train", "test")},
    ("mlqa", "mlqa.es.es"): {"test": [_mlqa(0, True), _mlqa(1, False), _mlqa(2, True)]},
    ("facebook/flores", "eng_Latn-swh_Latn"): {split: [_flores(i, split) for i in range(3)]
                                               for split in ("dev", "devtest")},
    ("xquad", "xquad.ar"): {"validation": [
        {"id": f"q{i}", "context": f"نهر النيل {i} أطول نهر.", "question": "ما أطول نهر؟",
         "answers": {"text": ["النيل"], "answer_start": [4]}} for i in range(3)]},
    ("glue", "mrpc"): {split: [{"sentence1": f"The cat {i} sat.", "sentence2": f"A cat {i} "
                                "sat.", "label": i % 2, "idx": i} for i in range(3)]
                       for split in ("train", "validation", "test")},
}


@pytest.fixture(scope="module")
def definitions(xp3_home) -> TaskSet:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(ENV_HOME, str(xp3_home))
        return load_definitions(("t0", "xp3", "xp3mt"))


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("xp3_rows")
    for (dataset, subset), splits in ROWS.items():
        for split, rows in splits.items():
            path = root / dataset / subset / f"{split}.jsonl"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows))
    return root


@dataclass(frozen=True)
class Build:
    out: Path  # the cache
    summary: str  # what the run printed
    data: Path  # its rows
    home: Path  # its templates' P3DATA_HOME


@pytest.fixture(scope="module")
def built(xp3_home, data_dir, tmp_path_factory) -> Build:
    """xP3's tasks in one run, 2 rows per source shard."""
    out = tmp_path_factory.mktemp("xp3_cache")
    result = run_cache(out, *task_args(*XP3_TASKS), "--rows-per-shard", "2",
                       data_dir=data_dir, env={ENV_HOME: str(xp3_home)})
    return Build(out, result.stdout, data_dir, xp3_home)


@pytest.fixture(scope="module")
def registered(definitions) -> TaskSet:
    """The definitions, with xP3's tasks built here registered in seqio (by p3data's registry,
    as `import p3data.xp3` would) to be read through stock seqio."""
    import seqio

    from p3data.registry import register_task

    for name in XP3_TASKS:
        if name not in seqio.TaskRegistry.names():
            register_task(definitions.task(name))
    return definitions


@pytest.mark.parametrize("collection, config", list(CONFIGS))
def test_cached_examples_are_what_render_gives(collection, config, built, registered):
    """Stock seqio reads from the cache exactly the examples the render command gives for the
    same rows, in row order, source split after source split (xP3's `train`: each of the
    recipe's training splits); the manifest counts the pairs it drops under the same reasons."""
    for name in CONFIGS[collection, config]:
        spec = registered.task(name)
        assert list(spec.split_mapping) == ["train"]
        for split, sources in spec.split_mapping.items():
            per_source = [[r for r in render_collection(
                collection, config, Path(spec.entry.key.folder(built.data), f"{source}.jsonl"),
                built.home) if r["template"] == spec.template.name]
                for source in source_splits(sources)]
            records = [record for part in per_source for record in part]
            want = [(r["inputs"], r["targets"]) for r in records if "dropped" not in r]
            got = [(e["inputs_pretokenized"].decode(), e["targets_pretokenized"].decode())
                   for e in read_examples(name, split, built.out)]
            assert got == want and want, (name, split)
            record = read_manifest(str(built.out / name)).splits[split]
            reasons = Counter(r["dropped"] for r in records if "dropped" in r)
            assert record.render_errors == reasons.pop(RENDER_ERROR, 0)
            assert record.dropped == dict(reasons), (name, split)
            assert record.rows_read == sum(len({r["row"] for r in part}) for part in per_source)


def test_steps_rules_and_row_numbers_were_exercised(built, registered):
    """The rows above reach what they are for: xlcost keeps its connection (strip_connection
    False), wiki_lingua's step names languages and drops the other direction, apps' draw
    follows each row's number in its split across shards, xP3mt's prompts are Spanish."""
    out = built.out
    solpy = read_examples("xp3_codeparrot_xlcost_text_to_code_Python_program_level_solpy",
                          "train", out)
    assert solpy[0]["targets_pretokenized"].decode().startswith(" def is_even ( n ) :\n\t")
    summaries = read_examples("xp3_GEM_wiki_lingua_en_fr_article_summary_en", "train", out)
    assert [e["inputs_pretokenized"].decode() for e in summaries] == 2 * [  # train, then test
        f"Article in English: Article {i}, in en.\n\nSummary in French:" for i in (0, 2, 5)]
    spec = registered.task("xp3_codeparrot_apps_all_qsol")
    rows = ROWS["codeparrot/apps", "all"]["train"]
    picks = [STEPS["codeparrot/apps"](row, config="all", index=i) for i, row in enumerate(rows)]
    assert picks[1] is None and picks[2] is None
    apps = read_examples(spec.name, "train", out)
    assert [e["targets_pretokenized"].decode() for e in apps] == 2 * [  # rows numbered per split
        "\n" + pick["solution"] for pick in picks if pick is not None]
    assert spec.row_rule == XP3Rule(strip_connection=False)
    paws = read_examples("xp3mt_paws_x_es_paraphrase_task_esmt", "train", out)
    assert [e["inputs_pretokenized"].decode() for e in paws] == 2 * [
        "Parafrasea la oración: La casa 1 es grande.", "Parafrasea la oración: La casa 3 es "
        "grande."]
    manifest = read_manifest(str(out / "xp3mt_paws_x_es_paraphrase_task_esmt"))
    assert manifest.splits["train"].dropped == {BLANK: 4}


def test_a_task_without_a_train_split_caches_its_splits_as_train(built, registered):
    """flores has only dev and devtest: its task's one split, `train`, holds dev's examples
    then devtest's (read by stock seqio), in source shards of 2 rows each; the manifest says
    which source splits it read, their rows' identities and the examples each gave."""
    folder = built.out / FLORES
    assert sorted(p.name.split(".")[1] for p in folder.glob("info.*.json")) == ["train"]
    got = [e["targets_pretokenized"].decode() for e in read_examples(FLORES, "train", built.out)]
    assert got == [f"Sentensi {i} ya {split}." for split in ("dev", "devtest") for i in range(3)]
    manifest = read_manifest(str(folder))
    assert manifest.split_mapping == {"train": ["dev", "devtest"]}
    assert list(manifest.sources["train"]) == ["dev", "devtest"]
    assert manifest.splits["train"].source_examples == {"dev": 3, "devtest": 3}
    assert verify_task(str(folder)) == []
    # a single source split keeps T0's record: no per-source counts
    assert read_manifest(str(built.out / "xp3_mlqa_mlqa.es.es_xp3longcontinue")).splits[
        "train"].source_examples is None


@pytest.mark.crash
def test_every_crash_point_of_a_split_of_several_sources_resumes(xp3_home, data_dir, tmp_path,
                                                                 monkeypatch):
    """flores' train reads dev then devtest, 2 source shards each (its parts 0-1 and 2-3): a
    build killed before the first file operation of each kind, and before each part's record,
    then rerun, ends with the very files an uninterrupted build writes."""
    monkeypatch.setenv(ENV_HOME, str(xp3_home))
    args = ["--data-dir", str(data_dir), "--vocab", str(SAMPLE_VOCAB), "--progress-every", "60",
            *task_args(FLORES), "--rows-per-shard", "2"]
    assert crash_run("crash", tmp_path / "whole", [-1], args) == [0]
    expected = tree(tmp_path / "whole" / "-1")
    trace = tmp_path / "whole" / "-1.crash.trace"
    operations = [json.loads(line) for line in trace.read_text().splitlines()]
    parts = [point for point, operation in enumerate(operations)
             if kind(*operation) == "rename part meta"]
    assert len(parts) == 4
    points = sorted({*crash_points(trace), *parts})
    crashes = tmp_path / "crashes"
    assert crash_run("crash", crashes, points, args) == [137] * len(points)
    assert crash_run("rerun", crashes, points, args) == [0] * len(points)
    for point in points:
        assert tree(crashes / str(point)) == expected, point


def test_peek_reads_an_xp3_task(built):
    """`p3data peek` registers the task it is asked for, of whichever collection, and prints
    its first example as stock seqio reads it."""
    from helpers.command_server import run_p3data

    from p3data.vocab import SAMPLE_VOCAB

    task = CONFIGS["xp3mt", "paws-x/es"][0]
    result = run_p3data(["peek", str(built.out), task, "--vocab", str(SAMPLE_VOCAB), "-n", "1"],
                        env={**os.environ, ENV_HOME: str(built.home)})
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"--- {task} [train] example 0" in result.stdout
    assert "inputs_pretokenized" in result.stdout


def test_summary_counts_drops_by_reason(built):
    """The summary names each reason a row was dropped for, and each task split where xP3's
    recipe would have dropped the whole template split (here only the row is dropped)."""
    out, summary = built.out, built.summary
    reasons: Counter[str] = Counter()
    for folder in out.iterdir():
        if (folder / "manifest.json").exists():
            for record in read_manifest(str(folder)).splits.values():
                reasons.update(record.dropped)
    assert reasons[STEP_DROPPED] == 2 * 2 + 2 * 2 * 3  # apps 2 a split, wiki_lingua 3 x 2 tasks
    assert reasons[TEMPLATE_SPLIT_ERROR] == 1  # mlqa's row without an answer
    line = "dropped by reason: " + ", ".join(f"{reason} {count:,}"
                                             for reason, count in sorted(reasons.items()))
    assert line in summary.splitlines()
    assert ("TEMPLATE_SPLIT_ERROR xp3_mlqa_mlqa.es.es_xp3longcontinue train: 1 of 3 rows "
            "dropped alone (xP3's recipe dropped the template's whole split on one)"
            ) in summary.splitlines()
    assert ("dropped: left out by the row rule or a dataset step · errors: failed to render · "
            "schema: rows unlike the catalog's schema") in summary.splitlines()


def test_t0_and_xp3_tasks_are_not_one_cache(built, tmp_path):
    """T0's task over glue/mrpc and xP3's over the same split are tokenized with T5's and
    mT5's vocabularies: asked for together, the run refuses in one line and writes nothing."""
    out = tmp_path / "mixed"
    result = run_cache(out, *task_args(T0_MRPC, "xp3_glue_mrpc_equivalent"), data_dir=built.data,
                       env={ENV_HOME: str(built.home)}, check=False)
    assert result.returncode != 0
    assert ("p3data: error: the tasks asked for are tokenized with T5's and mT5's vocabularies: "
            "a cache has one; build one per collection") in result.stderr
    assert not out.exists() or not any(out.iterdir())


def test_t0_fingerprint_is_unchanged(monkeypatch):
    """A T0 task's fingerprint has no key for its row rule or step: it is the one computed
    before xP3's tasks were built (p3data's and the format's versions pinned), and an xP3 rule
    or step changes it."""
    monkeypatch.setattr(fingerprint, "__version__", "0")
    monkeypatch.setattr(fingerprint, "FORMAT_VERSION", 2)
    template = Template(id="t-1", name="t", jinja="{{sentence1}} ||| {{sentence2}}",
                        dataset="glue", subset="mrpc", answer_choices="no ||| yes")
    spec = TaskSpec("glue_mrpc_t", Catalog.load().get("glue", "mrpc"), template,
                    {"train": "train", "test": "test"}, cap=10)
    config = CacheConfig(output_dir="/cache", vocab_model=b"vocab", seed=3, shards=2)
    sources = {"train": {"rows": "a"}, "test": {"rows": "b"}}
    t0 = fingerprint.task_fingerprint(config, spec, sources)
    assert t0 == "d08b80962aa5c1fed9f86c45abfc3fd0bb28d939eef865e4c8d235aef78f1b27"
    others = {fingerprint.task_fingerprint(config, TaskSpec(
        spec.name, spec.entry, template, spec.split_mapping, cap=10, row_rule=rule,
        dataset_step=step), sources) for rule, step in [
            (XP3Rule(), None), (XP3Rule(False), None), (XP3Rule(), STEPS["GEM/wiki_lingua"])]}
    assert len(others) == 3 and t0 not in others
