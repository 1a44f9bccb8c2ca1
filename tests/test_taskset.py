"""The task set: every task and mixture p3data defines, one lookup by name, one `select`, used
by every command; collections added through the `p3data.collections` entry points."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from helpers.cache import P3DATA, run_cache

from p3data.cli import main
from p3data.commands.fetch import selection
from p3data.datasets.catalog import Catalog
from p3data.errors import NotFoundError, P3DataError
from p3data.fewshot import VariantSpec
from p3data.taskset import (
    CollectionUnavailable,
    Contribution,
    TaskSet,
    chosen,
    define,
    in_order,
    installed_collections,
    load_definitions,
)
from p3data.templates.install import ENV_HOME


@pytest.fixture(scope="module")
def no_templates_home(tmp_path_factory) -> Path:
    """A P3DATA_HOME without xP3's templates, for the module: its collections cannot load."""
    with pytest.MonkeyPatch.context() as patch:
        home = tmp_path_factory.mktemp("no_templates_home")
        patch.setenv(ENV_HOME, str(home))
        yield home


@pytest.fixture(scope="module")
def definitions(no_templates_home) -> TaskSet:
    return load_definitions()


def test_every_collection_is_in_the_one_set(definitions):
    assert list(definitions.parts) == ["t0", "fewshot"]
    assert list(definitions.unavailable) == ["xp3", "xp3eval", "xp3mt"]
    assert len(definitions.tasks) == 983 + 3932 and len(definitions.mixtures) == 8 + 6
    assert set(installed_collections()) >= {"t0", "fewshot"}
    assert [c.name for c in in_order(installed_collections(), ["fewshot"])] == ["t0", "fewshot"]
    import p3data

    assert p3data.load_definitions().tasks.keys() == definitions.tasks.keys()


def test_one_lookup_of_tasks_and_mixtures(definitions):
    assert definitions.mixture("t0_train") is definitions.mixtures["t0_train"]
    assert definitions.task("imdb_Movie_Expressed_Sentiment").entry.dataset == "imdb"
    variant = definitions.task("super_glue_copa_exercise_3shot")
    assert isinstance(variant, VariantSpec) and variant.base.name == "super_glue_copa_exercise"
    assert definitions.mixture_tasks("t0_eval_score_eval_3shot")[0].name.endswith(
        "_score_eval_3shot")
    with pytest.raises(NotFoundError, match=r"^unknown mixture 't0_trian'; did you mean "
                                            r"t0_train.*\?$") as err:
        definitions.mixture("t0_trian")
    assert err.value.setting == "tasks"
    with pytest.raises(NotFoundError, match=r"^unknown mixture 'zzzzqqq'; see p3data list "
                                            r"--mixtures$"):
        definitions.mixture("zzzzqqq")
    with pytest.raises(NotFoundError, match=r"^unknown task 'super_glue_copa_exrcise'; did you "
                                            r"mean super_glue_copa_exercise"):
        definitions.task("super_glue_copa_exrcise")
    with pytest.raises(NotFoundError, match=r"^unknown task 'zzzzqqq'; see p3data list$"):
        definitions.task("zzzzqqq")
    with pytest.raises(NotFoundError, match="'t0_train_fewshot' is a mixture, not a task"):
        definitions.task("t0_train_fewshot")


def test_select_chooses_among_every_collection(definitions):
    chosen = definitions.select(["t0_eval_score_eval_3shot", "t0_eval_score_eval"],
                                ["super_glue_copa_.*"])
    assert [spec.name for spec in chosen] == [
        "super_glue_copa_C1_or_C2_premise_so_because__score_eval",
        "super_glue_copa_C1_or_C2_premise_so_because__score_eval_3shot",
        "super_glue_copa__As_a_result_C1_or_C2__score_eval",
        "super_glue_copa__As_a_result_C1_or_C2__score_eval_3shot",
        "super_glue_copa__What_could_happen_next_C1_or_C2__score_eval",
        "super_glue_copa__What_could_happen_next_C1_or_C2__score_eval_3shot",
        "super_glue_copa__which_may_be_caused_by_score_eval",
        "super_glue_copa__which_may_be_caused_by_score_eval_3shot",
        "super_glue_copa__why_C1_or_C2_score_eval",
        "super_glue_copa__why_C1_or_C2_score_eval_3shot",
        "super_glue_copa_best_option_score_eval",
        "super_glue_copa_best_option_score_eval_3shot",
        "super_glue_copa_cause_effect_score_eval",
        "super_glue_copa_cause_effect_score_eval_3shot",
        "super_glue_copa_choose_score_eval",
        "super_glue_copa_choose_score_eval_3shot",
        "super_glue_copa_exercise_score_eval",
        "super_glue_copa_exercise_score_eval_3shot",
        "super_glue_copa_i_am_hesitating_score_eval",
        "super_glue_copa_i_am_hesitating_score_eval_3shot",
        "super_glue_copa_more_likely_score_eval",
        "super_glue_copa_more_likely_score_eval_3shot",
        "super_glue_copa_plausible_alternatives_score_eval",
        "super_glue_copa_plausible_alternatives_score_eval_3shot",
    ]
    with pytest.raises(P3DataError, match="no task in t0_train_fewshot fully matches zz.*"):
        definitions.select(["t0_train_fewshot"], ["zz.*"])
    with pytest.raises(P3DataError, match="no tasks chosen"):
        definitions.select()


@dataclass(frozen=True)
class Toy:
    """A collection of one task and one mixture, built on T0's (a stand-in for another
    template collection)."""

    name: str = "toy"
    requires: tuple[str, ...] = ("t0",)
    task_name: str = "toy_copa"

    def define(self, base: TaskSet) -> Contribution:
        from p3data.t0 import MixtureSpec

        spec = base.part("t0").tasks["super_glue_copa_exercise"]
        task = type(spec)(self.task_name, spec.entry, spec.template, spec.split_mapping, cap=7)
        return Contribution({task.name: task},
                            {"toy_mix": MixtureSpec("toy_mix", (task.name,), True)})


def test_a_collection_adds_tasks_and_mixtures_and_a_name_twice_is_one_line():
    collections = {**installed_collections(), "toy": Toy()}
    taskset = define(in_order(collections, ["toy"]))
    assert list(taskset.parts) == ["t0", "toy"]
    assert [s.name for s in taskset.select(["toy_mix"])] == ["toy_copa"]
    assert taskset.rate("toy_mix", "toy_copa") == 7
    clash = {**installed_collections(), "toy": Toy(task_name="super_glue_copa_exercise")}
    with pytest.raises(P3DataError, match=r"^the task 'super_glue_copa_exercise' is defined by "
                                          r"the collections 't0' and 'toy'; rename one"):
        define(in_order(clash, ["toy"]))
    loop = {"a": Toy(name="a", requires=("b",)), "b": Toy(name="b", requires=("a",))}
    with pytest.raises(P3DataError, match="require each other: a -> b -> a"):
        in_order(loop)


@dataclass(frozen=True)
class Unloadable:
    """A collection that cannot load here, saying why."""

    name: str = "later"
    requires: tuple[str, ...] = ()

    def define(self, base: TaskSet) -> Contribution:
        raise CollectionUnavailable("later's files are missing: run `get later`",
                                    claims=r"later(_.*)?")


def test_a_collection_that_cannot_load_says_why_for_its_names(definitions):
    """Every command works with the collections that load; a name another would define, or
    asking for it by name, gives its one-line reason."""
    install = r"xp3's templates \(.*\) are not installed in .*: run `p3data templates install xp3`"
    with pytest.raises(NotFoundError, match=rf"^the task 'xp3_glue_mrpc_equivalent' is the "
                                            rf"collection 'xp3''s, which cannot load: {install}$"):
        definitions.task("xp3_glue_mrpc_equivalent")
    with pytest.raises(NotFoundError, match=r"^the mixture 'xp3mt_sw' is the collection "
                                            r"'xp3mt''s, which cannot load: .*install xp3mt`$"):
        definitions.select(["xp3mt_sw"])
    with pytest.raises(CollectionUnavailable, match=f"^{install}$"):
        definitions.part("xp3")
    with pytest.raises(CollectionUnavailable, match=f"^{install}$"):
        load_definitions(("xp3",))
    with pytest.raises(NotFoundError, match=r"^unknown task 'xp3mtx'"):
        definitions.task("xp3mtx")  # a claim matches whole names
    collections = {**installed_collections(), "later": Unloadable(),
                   "toy": Toy(requires=("later",))}
    taskset = define(in_order(collections, ["t0", "later", "toy"]), optional=True)
    assert list(taskset.parts) == ["t0"] and list(taskset.unavailable) == ["later", "toy"]
    with pytest.raises(NotFoundError, match="'later_x' is the collection 'later''s, which "
                                            "cannot load: later's files are missing"):
        taskset.task("later_x")
    with pytest.raises(CollectionUnavailable, match="run `get later`"):
        define(in_order(collections, ["toy"]))


def test_a_collection_registers_in_seqio_beside_t0s(t0_tasks):
    import seqio

    from p3data.registry import register_definitions

    taskset = define(in_order({**installed_collections(), "toy": Toy(task_name="toy_reg")},
                              ["toy"]))
    register_definitions(taskset, collections=["toy"])  # T0's are registered already
    mixture = seqio.get_mixture_or_task("toy_mix")
    assert [(task.name, mixture.get_rate(task)) for task in mixture.tasks] == [("toy_reg", 7)]


TOY_MODULE = '''
from p3data.t0 import MixtureSpec
from p3data.taskset import Contribution


class Mine:
    name = "mine"
    requires = ("t0",)

    def define(self, base):
        spec = base.part("t0").tasks["super_glue_rte_GPT_3_style"]
        task = type(spec)("mine_rte", spec.entry, spec.template, spec.split_mapping, cap=5)
        return Contribution({task.name: task},
                            {"mine_mix": MixtureSpec("mine_mix", (task.name,), True)})


COLLECTION = Mine()
'''


def test_an_installed_package_adds_a_collection_that_every_command_sees(tmp_path):
    """A package of the user's own declares an entry point: nothing of p3data is edited, and
    `list`, `show` and `cache --mixture` know its tasks and mixture."""
    site = tmp_path / "site"
    (site / "mine_pkg").mkdir(parents=True)
    (site / "mine_pkg" / "__init__.py").write_text(TOY_MODULE)
    info = site / "mine_pkg-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: mine-pkg\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[p3data.collections]\nmine = mine_pkg:COLLECTION\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), *sys.path])}

    def p3data(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([P3DATA, *args], capture_output=True, text=True, env=env,
                              timeout=300)

    listed = p3data("list", "--mixtures")
    assert listed.returncode == 0, listed.stderr
    assert any(line.split()[:4] == ["mine_mix", "1", "mine", "T0's"]
               for line in listed.stdout.splitlines())
    assert p3data("list", "--mixture", "mine_mix").stdout.split() == ["mine_rte"]
    assert "rate:      5 (T0's cap)" in p3data("show", "mine_rte").stdout
    out = tmp_path / "cache"
    built = subprocess.run([*_cache_args(out), "--mixture", "mine_mix"], capture_output=True,
                           text=True, env=env, timeout=600)
    assert built.returncode == 0, built.stderr[-3000:]
    manifest = json.loads((out / "mine_rte" / "manifest.json").read_text())
    assert manifest["task"] == "mine_rte"
    assert manifest["splits"]["validation"]["stats"]["examples"] > 0


def _cache_args(out: Path) -> list[str]:
    from p3data.vocab import SAMPLE_VOCAB

    return [P3DATA, "cache", "--samples", "--vocab", str(SAMPLE_VOCAB), "--output-dir", str(out)]


def test_fetch_chooses_the_datasets_of_a_few_shot_mixture():
    catalog = Catalog.load()
    fewshot = selection(catalog, [], ["t0_eval_score_eval_3shot"], [])
    plain = selection(catalog, [], ["t0_eval_score_eval"], [])
    assert [e.key for e in fewshot] == [e.key for e in plain] and len(plain) > 5
    # a variant's exemplars come from its dataset's train split: its dataset is fetched whole
    assert all("train" in entry.splits for entry in fewshot if entry.dataset == "super_glue")


@pytest.fixture(scope="module")
def fewshot_cache(tmp_path_factory) -> Path:
    """COPA's `exercise` task with its twin, and the twin's 1-, 3- and 5-shot variants."""
    out = tmp_path_factory.mktemp("fewshot") / "cache"
    run_cache(out, "--tasks", "super_glue_copa_exercise(_score_eval(_[135]shot)?)?")
    return out


def test_export_and_report_know_few_shot_mixtures(fewshot_cache, tmp_path, capsys):
    out = tmp_path / "export"
    assert main(["export", str(fewshot_cache), "--out", str(out), "--mixture",
                 "t0_eval_score_eval_3shot", "--format", "jsonl"]) == 0
    assert sorted(p.name for p in out.iterdir() if p.is_dir()) == [
        "super_glue_copa_exercise_score_eval_3shot"]
    assert "the cache lacks 115 of the tasks asked for" in capsys.readouterr().err
    page = tmp_path / "report.html"
    main(["report", str(fewshot_cache), "--out", str(page)])
    markdown = page.with_suffix(".md").read_text()
    for k in (1, 3, 5):
        assert f"### t0_eval_score_eval_{k}shot" in markdown
    assert "### t0_eval_score_eval\n" in markdown


def test_peek_and_list_take_a_variant_and_a_few_shot_mixture(fewshot_cache, capsys):
    assert main(["list", "--mixture", "t0_train_fewshot"]) == 0
    listed = capsys.readouterr().out.split()
    assert len(listed) == 4 * 313 and "ag_news_classify_5shot" in listed
    assert main(["peek", str(fewshot_cache), "super_glue_copa_exercise_score_eval_3shot",
                 "--split", "validation", "-n", "1"]) == 0
    assert "num_shots: 3" in capsys.readouterr().out


@pytest.mark.parametrize(("mixtures", "patterns"), [
    (["t0_train"], []), (["xp3_zh"], []), (["xp3mt_zh"], []), (["xp3_eval"], []),
    (["t0_eval_score_eval_3shot"], ["super_glue_copa_.*"]),
    ([], ["xp3_GEM_xlsum_(?:chinese_simplified|chinese_traditional)_.*"]),
    ([], ["super_glue_copa_.*|xp3mt_paws_x_es_.*"]), ([], ["[x]p3mt_paws_x_es_.*"]),
    ([], ["xp3m?t?_glue_mrpc_.*"]), ([], ["xp3mx?t_paws_x_es_.*"]), ([], [".*_score_eval"]),
    ([], ["xp3mt_paws_x_es_.*", "super_glue_copa_.*"]),
])
def test_chosen_tasks_are_the_whole_sets(xp3_home, monkeypatch, mixtures, patterns):
    """Defining only the collections a request reaches chooses what the whole set chooses
    (names, mixtures, regexes whose head is literal, quantified, alternated or bracketed)."""
    monkeypatch.setenv(ENV_HOME, str(xp3_home))
    whole = [spec.name for spec in load_definitions().select(mixtures, patterns)]
    assert whole and [spec.name for spec in chosen(mixtures, patterns)] == whole


def test_chosen_defines_no_collection_its_names_cannot_reach(xp3_home, monkeypatch):
    """A T0 mixture defines none of xP3's collections (~1 CPU-s), an xP3 pattern not xP3mt's."""
    from p3data.xp3_recipe import collections

    monkeypatch.setenv(ENV_HOME, str(xp3_home))

    def refused(self, base):
        raise AssertionError(f"{self.name} defined")

    monkeypatch.setattr(collections.XP3Collection, "define", refused)
    monkeypatch.setattr(collections.XP3EvalCollection, "define", refused)
    assert len(chosen(["t0_train"])) == 313
    monkeypatch.undo()
    monkeypatch.setenv(ENV_HOME, str(xp3_home))
    monkeypatch.setattr(collections.XP3MT, "define", refused.__get__(collections.XP3MT))
    assert len(chosen([], ["xp3_GEM_xlsum_chinese_simplified_.*"])) == 9
    with pytest.raises(AssertionError, match="xp3mt defined"):
        chosen(["xp3mt_zh"])
