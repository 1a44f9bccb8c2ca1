"""xP3's and xP3mt's tasks and mixtures (`xp3_recipe/tasks.py`, the collections `xp3` and
`xp3mt`): one task per pair of the recipe, with its entry, template, training splits, row rule
and dataset step; registered in seqio, they render rows as the fork's rule does."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from p3data.t0 import task_name
from p3data.taskset import CollectionUnavailable, TaskSet, load_definitions, source_splits
from p3data.templates.install import ENV_HOME
from p3data.templates.render import T0_RULE, CompiledTemplate, Rendered, XP3Rule
from p3data.xp3_recipe.pairs import prompt_pairs
from p3data.xp3_recipe.steps import STEPS, XLCOST, xlcost_code_clean
from p3data.xp3_recipe.tasks import CAP_PER_SPLIT, RATE_RULE

XLCOST_SOLPY = "xp3_codeparrot_xlcost_text_to_code_Python_program_level_solpy"


@pytest.fixture(scope="module")
def xp3_definitions(xp3_home) -> TaskSet:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(ENV_HOME, str(xp3_home))
        return load_definitions(("xp3", "xp3mt"))


@pytest.mark.parametrize("set_name, count", [("xp3", 8040), ("xp3mt", 7531)])
def test_one_task_per_pair_of_the_recipe(xp3_definitions, xp3_templates, set_name, count):
    part = xp3_definitions.part(set_name)
    pairs = prompt_pairs(set_name, xp3_templates[set_name])
    assert len(part.tasks) == len(pairs) == count
    assert list(part.tasks) == [f"{set_name}_" + task_name(p.dataset, p.config, p.template)
                                for p in pairs]
    assert part.mixtures[set_name].tasks == tuple(part.tasks)
    by_language = {name.removeprefix(f"{set_name}_"): len(mixture.tasks)
                   for name, mixture in part.mixtures.items() if name != set_name}
    assert by_language == dict(Counter(p.language for p in pairs))
    assert len(by_language) == 46 and by_language["code"] == 46
    assert by_language["en"] == {"xp3": 772, "xp3mt": 708}[set_name]
    assert not set(part.mixtures) & set(xp3_definitions.tasks)


def test_names_are_unique_across_t0_and_xp3(xp3_definitions):
    t0 = load_definitions(("t0", "fewshot")).tasks
    xp3 = xp3_definitions.part("xp3").tasks
    xp3mt = xp3_definitions.part("xp3mt").tasks
    assert len({*t0, *xp3, *xp3mt}) == len(t0) + len(xp3) + len(xp3mt)
    assert "xp3_glue_mrpc_equivalent" in xp3


def test_a_task_carries_its_entry_splits_rule_and_step(xp3_definitions):
    mrpc = xp3_definitions.task("xp3_glue_mrpc_equivalent")
    assert (mrpc.entry.dataset, mrpc.entry.subset) == ("glue", "mrpc")  # T0's catalog
    assert mrpc.split_mapping == {"train": ("train", "test")}  # one after the other
    assert mrpc.row_rule == XP3Rule(strip_connection=True) and mrpc.dataset_step is None
    assert mrpc.cap == 3668 + 1725 and not mrpc.score_eval
    solpy = xp3_definitions.task(XLCOST_SOLPY)
    assert solpy.row_rule == XP3Rule(strip_connection=False)
    assert solpy.dataset_step is STEPS[XLCOST] and solpy.template.name == "solpy"
    assert solpy.split_mapping == {"train": ("train", "test")}
    assert solpy.cap == 9263 + 887
    # an unknown size counts the cap; wiki_lingua's sampled splits do not train
    cross = next(s for s in xp3_definitions.part("xp3").tasks.values()
                 if s.entry.dataset == "GEM/wiki_lingua" and s.entry.subset == "en_fr")
    assert cross.split_mapping == {"train": ("train", "test")}
    assert cross.cap == 2 * CAP_PER_SPLIT
    # a template the recipe skips on test (hidden labels) trains on train only
    piqa = next(s for s in xp3_definitions.part("xp3").tasks.values()
                if s.entry.dataset == "piqa")
    assert piqa.split_mapping == {"train": "train"}  # one source split: as T0's record it
    # only validation and test: both train, in the config's order (the recipe's)
    flores = next(s for s in xp3_definitions.part("xp3").tasks.values()
                  if s.entry.dataset == "facebook/flores")
    assert flores.split_mapping == {"train": ("dev", "devtest")}
    mixture = xp3_definitions.mixture("xp3mt_sw")
    assert mixture.rate_rule == RATE_RULE and mixture.rate(solpy) == solpy.cap


def test_t0s_specs_keep_t0s_rule():
    t0 = load_definitions(("t0",)).part("t0")
    assert all(s.row_rule is T0_RULE and s.dataset_step is None for s in t0.tasks.values())


def _write_rows(folder: str, split: str, rows: list[dict]) -> None:
    path = Path(folder) / f"{split}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))


def test_seqio_renders_as_the_fork_rule_does(xp3_definitions, tmp_path):
    """Rows read through seqio's `get_dataset` give what the dataset step and `XP3Rule` give:
    its `train` split, the source split train then test, rows numbered per source split."""
    import seqio

    from p3data.registry import register_task

    spec = xp3_definitions.task(XLCOST_SOLPY)
    rows = [{"text": "Check if a number is even",
             "code": "def is_even ( n ) : NEW_LINE INDENT return n % 2 == 0 NEW_LINE DEDENT "
                     "print ( is_even ( 4 ) ) NEW_LINE"},
            {"text": "Print a string", "code": "print ( \" a ▁ b \" ) NEW_LINE"},
            {"text": "", "code": ""}]
    _write_rows(spec.entry.key.folder(tmp_path), "train", rows)
    _write_rows(spec.entry.key.folder(tmp_path), "test", rows[::-1])
    seqio.TaskRegistry.remove(spec.name)
    task = register_task(spec, data_dir=tmp_path)
    assert task.source.num_input_examples("train") == 9263 + 887  # the catalog's train + test
    got = [{k: v.decode() for k, v in example.items()} for example in
           task.source.get_dataset("train", shuffle=False).as_numpy_iterator()]
    compiled = CompiledTemplate(spec.template, rule=XP3Rule(strip_connection=False))
    outcomes = [compiled.render(xlcost_code_clean(row, config=spec.entry.subset, index=i), i)
                for split in (rows, rows[::-1]) for i, row in enumerate(split)]
    want = [{"inputs": o.inputs, "targets": o.targets} for o in outcomes
            if isinstance(o, Rendered)]
    assert got == want and len(want) == 4
    assert want[0]["targets"].startswith(" def is_even")


def test_seqio_applies_the_dataset_step_that_drops_rows(xp3_definitions, tmp_path):
    """wiki_lingua's cross pair en_fr keeps only the rows from en to fr."""
    import seqio

    from p3data.registry import register_task

    spec = next(s for s in xp3_definitions.part("xp3").tasks.values()
                if s.entry.dataset == "GEM/wiki_lingua" and s.entry.subset == "en_fr")
    rows = [{"gem_id": str(i), "gem_parent_id": str(i), "source_language": source,
             "target_language": target, "source": f"source text {i}",
             "target": f"target text {i}", "references": [f"target text {i}"]}
            for i, (source, target) in enumerate([("en", "fr"), ("fr", "en"), ("en", "fr")])]
    for split in source_splits(spec.split_mapping["train"]):  # train, then test
        _write_rows(spec.entry.key.folder(tmp_path), split, rows)
    seqio.TaskRegistry.remove(spec.name)
    task = register_task(spec, data_dir=tmp_path)
    got = list(task.source.get_dataset("train", shuffle=False).as_numpy_iterator())
    compiled = CompiledTemplate(spec.template, rule=XP3Rule())
    want = []
    for i, row in [*enumerate(rows), *enumerate(rows)]:
        stepped = STEPS["GEM/wiki_lingua"](row, config="en_fr", index=i)
        if stepped is not None and isinstance(o := compiled.render(stepped, i), Rendered):
            want.append((o.inputs, o.targets))
    assert [(e["inputs"].decode(), e["targets"].decode()) for e in got] == want
    assert len(want) == 4


def test_without_templates_xp3_says_how_to_install_them(tmp_path):
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(ENV_HOME, str(tmp_path))
        with pytest.raises(CollectionUnavailable,
                           match=r"^xp3's templates .* run `p3data templates install xp3`$"):
            load_definitions(("xp3",))
    result = subprocess.run([sys.executable, "-c", "import p3data.xp3"], capture_output=True,
                            text=True, env={**os.environ, ENV_HOME: str(tmp_path)})
    assert result.returncode != 0
    assert "run `p3data templates install xp3`" in result.stderr.splitlines()[-1]


def test_render_command_renders_as_the_collection_does(xp3_home, tmp_path, capsys, monkeypatch):
    from p3data.cli import main

    monkeypatch.setenv(ENV_HOME, str(xp3_home))
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps({"text": "Check if a number is even",
                                "code": "def is_even ( n ) : NEW_LINE INDENT return n % 2 == 0 "
                                        "NEW_LINE DEDENT print ( is_even ( 4 ) ) NEW_LINE"}) + "\n")
    assert main(["render", "--collection", "xp3", "--template", "solpy", "--rows", str(rows),
                 "codeparrot/xlcost-text-to-code/Python-program-level"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out) == {
        "dataset": "codeparrot/xlcost-text-to-code", "subset": "Python-program-level",
        "template": "solpy", "row": 0,
        "inputs": "\"Check if a number is even\"\nSolution in Python:\n",
        "targets": " def is_even ( n ) :\n\treturn n % 2 == 0\nprint ( is_even ( 4 ) )",
        "answer_choices": None}
    assert err.endswith("1 rows x 1 templates: kept 1\n")
    rows.write_text("".join(json.dumps(
        {"gem_id": "0", "gem_parent_id": "0", "source_language": source,
         "target_language": target, "source": "s", "target": "t", "references": ["t"]}) + "\n"
        for source, target in [("en", "hi"), ("hi", "en")]))
    assert main(["render", "--collection", "xp3", "GEM/wiki_lingua/hi_en", "--dropped",
                 "--rows", str(rows)]) == 0
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert {r["row"] for r in records if r.get("dropped") == "dataset_step"} == {0}
    assert len([r for r in records if r["row"] == 1 and "inputs" in r]) == 7
    assert main(["render", "--collection", "xp3mt", "GEM/wiki_lingua/hi_en",
                 "--rows", str(rows)]) == 2
    assert "unknown xp3mt dataset 'GEM/wiki_lingua/hi_en'" in capsys.readouterr().err
