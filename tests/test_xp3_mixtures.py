"""xP3's mixtures: each task weighed by the examples its build kept in `train`, all its
training splits (the recipe trains on them all, test splits included), read from the cache by seqio
(its cached stats), by p3data's sampler and by the report alike; a task without a cache by
its catalog-based placeholder. Each task records its language folder, in its spec and its
manifest."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.cache import run_cache, task_args

from p3data.format.manifest import read_manifest
from p3data.read import mixture_sampler
from p3data.report.collect import mixture_shares, read_folder
from p3data.taskset import Contribution, TaskSet, load_definitions
from p3data.templates.install import ENV_HOME
from p3data.xp3_recipe.tasks import KeptMixture

CAP = 3  # --cap 3: each 40-row train split keeps 3 examples, each test split its rows
ROWS = {"train": 40, "test": 2}
BUILT = ("xp3_glue_mrpc_equivalent", "xp3_glue_mrpc_paraphrase",
         "xp3mt_paws_x_es_paraphrase_task_esmt")  # paws-x: label 0 renders blank, dropped
UNBUILT = "xp3_glue_mrpc_replace"  # in the mixture, not in the cache
MIXTURE = "xp3_test_kept_rates"


def _mrpc(i: int) -> dict:
    return {"sentence1": f"Row {i} sat.", "sentence2": f"A cat {i}.", "label": i % 2, "idx": i}


def _paws(i: int) -> dict:
    return {"id": i, "sentence1": f"Fila {i}.", "sentence2": f"La casa {i}.", "label": i % 2}


@pytest.fixture(scope="module")
def definitions(xp3_home) -> TaskSet:
    """xP3's task set with a mixture of the tasks here (built and not), as `KeptMixture`."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(ENV_HOME, str(xp3_home))
        definitions = load_definitions(("xp3", "xp3mt"))
    return definitions.adding("test", Contribution(
        mixtures={MIXTURE: KeptMixture(MIXTURE, (*BUILT, UNBUILT))}))


@pytest.fixture(scope="module")
def cache(xp3_home, tmp_path_factory) -> Path:
    rows = tmp_path_factory.mktemp("mix_rows")
    for (dataset, subset), row in {("glue", "mrpc"): _mrpc, ("paws-x", "es"): _paws}.items():
        for split, count in ROWS.items():
            path = rows / dataset / subset / f"{split}.jsonl"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("".join(json.dumps(row(i)) + "\n" for i in range(count)))
    out = tmp_path_factory.mktemp("mix_cache")
    run_cache(out, *task_args(*BUILT), "--cap", str(CAP), data_dir=rows,
              env={ENV_HOME: str(xp3_home)})
    return out


def _kept(cache: Path, task: str) -> dict[str, int]:
    """The examples of the task's train split, by the source split that gave them."""
    manifest = read_manifest(str(cache / task))
    assert list(manifest.splits) == ["train"]
    record = manifest.splits["train"]
    assert sum(record.source_examples.values()) == record.rows_kept == record.examples
    return record.source_examples


def test_the_build_kept_differs_by_split_and_task(cache):
    """The counts the rates must follow: train capped, test whole, paws-x's blanks dropped;
    each source split capped apart."""
    kept = {task: _kept(cache, task) for task in BUILT}
    assert kept["xp3_glue_mrpc_equivalent"] == {"train": CAP, "test": ROWS["test"]}
    assert kept["xp3mt_paws_x_es_paraphrase_task_esmt"]["test"] < ROWS["test"]


def test_seqio_rates_are_the_kept_examples_of_every_training_split(definitions, cache):
    """Registered in seqio and read with `use_cached=True`, the mixture weighs each cached
    task by its train examples (seqio's cached stats): those of the source splits train and
    test; an uncached one by its placeholder cap."""
    import seqio

    from p3data.registry import register_mixture_spec, register_task

    for name in (*BUILT, UNBUILT):
        if name not in seqio.TaskRegistry.names():
            register_task(definitions.task(name))
    if MIXTURE not in seqio.MixtureRegistry.names():
        register_mixture_spec(definitions.mixture(MIXTURE), definitions.tasks)
    before = seqio.utils.get_global_cache_dirs()
    seqio.utils.set_global_cache_dirs([str(cache)])
    try:
        mixture = seqio.get_mixture_or_task(MIXTURE)
        for task in mixture.tasks:  # other modules may have pointed them at their caches
            task._cache_dir, task._stats = None, {}
        rates = {task.name: mixture.get_rate(task) for task in mixture.tasks}
    finally:
        seqio.utils.set_global_cache_dirs(before)
    assert rates == {**{task: sum(_kept(cache, task).values()) for task in BUILT},
                     UNBUILT: definitions.task(UNBUILT).cap}
    assert rates["xp3_glue_mrpc_equivalent"] == CAP + ROWS["test"]  # not train's alone


def test_the_sampler_and_the_report_rate_as_seqio_does(definitions, cache):
    kept = {task: sum(_kept(cache, task).values()) for task in BUILT}
    sampler = mixture_sampler(cache, MIXTURE, "train", seed=0, definitions=definitions,
                              allow_missing=True)
    assert sampler.rates == kept
    reports = [read_folder(str(cache / task), [p.name for p in (cache / task).iterdir()],
                           split="train", max_records=10)[0] for task in BUILT]
    shares = {share.name: share for share in mixture_shares(definitions, reports)}
    assert shares[MIXTURE].rates == kept
    assert shares["xp3"].rates == {task: kept[task] for task in BUILT[:2]}


def test_each_task_records_its_language(definitions, cache):
    assert [definitions.task(task).language for task in BUILT] == ["en", "en", "es"]
    assert [read_manifest(str(cache / task)).language for task in BUILT] == ["en", "en", "es"]
    t0 = load_definitions(("t0",)).task("super_glue_rte_GPT_3_style")
    assert t0.language is None


def test_the_report_gives_templates_tasks_and_kept_examples_per_language(definitions, cache):
    """`p3data report`'s Markdown has the table, from the manifests' languages and counts."""
    from p3data.quality.validate import Lengths
    from p3data.report.collect import collect
    from p3data.report.markdown import render_markdown

    report = collect(str(cache), split=None, lengths=Lengths(), max_records=10,
                     definitions=definitions)
    text = render_markdown(report)
    kept = {task: sum(_kept(cache, task).values()) for task in BUILT}
    english = kept[BUILT[0]] + kept[BUILT[1]]
    assert "## Languages" in text
    assert f"| en | 2 | 2 | {english} |" in text
    assert f"| es | 1 | 1 | {kept[BUILT[2]]} |" in text
    assert f"| total (2) | 3 | 3 | {english + kept[BUILT[2]]} |" in text


def test_plan_gives_templates_tasks_and_catalog_examples_per_language(definitions):
    """`p3data plan`'s table: each training split's catalog rows, at most the cap (100,000),
    a task of unknown size counted apart."""
    from p3data.quality.common import TokenCounter
    from p3data.quality.projection import catalog_examples, format_plan, plan

    result = plan(definitions, MIXTURE, TokenCounter())
    mrpc = definitions.task(BUILT[0]).entry.splits
    paws = definitions.task(BUILT[2]).entry.splits
    counts = {c.language: (len(c.templates), c.tasks, c.examples, c.unsized)
              for c in result.languages}
    assert counts == {"en": (3, 3, 3 * (mrpc["train"] + mrpc["test"]), 0),
                      "es": (1, 1, min(paws["train"], 100_000) + paws["test"], 0)}
    assert "per language folder" in format_plan(result)
    # wiki_lingua's sizes are not in the catalog
    assert catalog_examples(definitions.task("xp3_GEM_wiki_lingua_en_fr_tldr_en")) is None


def test_no_training_task_reads_an_evaluation_set(definitions):
    """The recipe's held-out evaluation sets (L1 and L2) are in no task of xP3 or xP3mt."""
    from p3data.xp3_recipe.recipe import EVAL_DATASETS_L1, EVAL_DATASETS_L2

    held_out = set(EVAL_DATASETS_L1 + EVAL_DATASETS_L2)
    for collection in ("xp3", "xp3mt"):
        read = {(s.entry.dataset, s.entry.subset)
                for s in definitions.part(collection).tasks.values()}
        assert len(read) > 2000 and not read & held_out


@pytest.fixture(scope="module")
def evaluation(xp3_home) -> TaskSet:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(ENV_HOME, str(xp3_home))
        return load_definitions(("xp3", "xp3eval"))


def test_xp3_eval_holds_the_l1_sets_as_score_eval_tasks(evaluation):
    """xmtf's L1 rank evaluation: 5 templates of each of the 32 sets (anli per round), on the
    validation split (anli's dev rounds, xwinograd's test), the xp3mt branch's templates of
    the English prompt folder; held out of xP3's training mixtures."""
    part = evaluation.part("xp3eval")
    assert len(part.tasks) == 31 * 5 + 3 * 5
    assert part.mixtures["xp3_eval"].tasks == tuple(part.tasks)
    assert all(name.endswith("_score_eval") and spec.score_eval and spec.template.answer_choices
               for name, spec in part.tasks.items())
    sw = evaluation.task("xp3_xcopa_sw_C1_or_C2_premise_so_because__score_eval")
    assert sw.split_mapping == {"validation": "validation"} and sw.language == "sw"
    assert sw.template.id == "5781b266-6eb9-49aa-880c-9669cbdb4017"  # xp3mt's, not tr13's
    assert evaluation.task("xp3_anli_GPT_3_style_r2_score_eval").split_mapping == {
        "validation": "dev_r2"}
    assert evaluation.task("xp3_Muennighoff_xwinograd_pt_Replace_score_eval").split_mapping == {
        "test": "test"}
    story = evaluation.task("xp3_Muennighoff_xstory_cloze_sw_Answer_Given_options_score_eval")
    assert story.split_mapping == {"validation": "eval"}  # the Hub copy's name
    training = {t for m in evaluation.part("xp3").mixtures.values() for t in m.tasks}
    assert not training & set(part.tasks)


def test_an_xp3_eval_task_ranks_its_answer_choices_in_seqio(evaluation, tmp_path):
    """Registered in seqio, an xcopa task's source and rank-classification preprocessor give
    one example per answer choice and row (tokenizing is T0's score-eval tasks' own)."""
    import seqio

    from p3data.registry import register_task

    name = "xp3_xcopa_sw_best_option_score_eval"
    rows = [{"premise": f"Mtu {i} alianguka.", "choice1": "Aliumia.", "choice2": "Alicheka.",
             "question": "effect", "label": i % 2, "idx": i} for i in range(3)]
    path = tmp_path / "xcopa" / "sw" / "validation.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    if name in seqio.TaskRegistry.names():
        seqio.TaskRegistry.remove(name)
    task = register_task(evaluation.task(name), data_dir=tmp_path)
    dataset = task.preprocessors[0](task.source.get_dataset("validation", shuffle=False))
    examples = list(dataset.as_numpy_iterator())
    assert len(examples) == 2 * len(rows)
    assert [bool(e["is_correct"]) for e in examples] == [True, False, False, True, True, False]
    assert examples[0]["targets"] == b"Aliumia."
    assert examples[0]["inputs"].startswith(b"Mtu 0 alianguka.")
