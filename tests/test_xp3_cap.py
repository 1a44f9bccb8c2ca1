"""xP3's cap in the cache: a capped task split keeps at most `--cap` examples, rendered from
5 x `--cap` candidate rows, chosen by `--selection` (xP3's rule: the smallest inputs; uniform:
the smallest row hashes) as a pure function of the seed and the rows, so that every sharding
and runner writes the same bytes. A split with fewer rows than the cap keeps them all."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from helpers.cache import read_examples, render_collection, run_cache, task_args, tree

from p3data.builder import fingerprint
from p3data.builder.jobs import CacheConfig
from p3data.builder.selection import (
    NOT_SELECTED,
    OVER_CAP,
    last_candidate,
    plan_selection,
    row_hashes,
    selection_key,
)
from p3data.format.manifest import read_manifest
from p3data.taskset import SplitCap, TaskSet, load_definitions
from p3data.templates.install import ENV_HOME
from p3data.templates.render import BLANK

CAP, POOL, ROWS = 3, 15, 40  # --cap 3: 15 candidates of a 40-row train split
SMALL = 2  # rows of each test split: fewer than the cap
# task -> (collection, config as the recipe spells it)
TASKS = {
    "xp3_glue_mrpc_equivalent": ("xp3", "glue/mrpc"),
    "xp3_glue_mrpc_paraphrase": ("xp3", "glue/mrpc"),  # another template: other candidates
    # xP3's rule leaves label 0 blank: drops come before the cap
    "xp3mt_paws_x_es_paraphrase_task_esmt": ("xp3mt", "paws-x/es"),
}
# First words whose code point order is not the rows' order: digits, punctuation, upper and
# lower case, accented letters.
WORDS = ["mango", "Zebra", "42 birds", "(aside)", "über", "apple", "Apple", "ñandú", "123",
         "zero", "'quoted'", "Éclair", "banana"]


def _mrpc(i: int) -> dict:
    return {"sentence1": f"{WORDS[i * 7 % len(WORDS)]} {i} sat.", "sentence2": f"A cat {i}.",
            "label": i % 2, "idx": i}


def _paws(i: int) -> dict:
    return {"id": i, "sentence1": f"{WORDS[i * 5 % len(WORDS)]} {i} es grande.",
            "sentence2": f"La casa {i}.", "label": i % 3 % 2}


ROW_FILES = {("glue", "mrpc"): _mrpc, ("paws-x", "es"): _paws}


@pytest.fixture(scope="module")
def xp3_home(xp3_templates) -> Path:
    return xp3_templates["xp3"].parents[2]  # <home>/templates/<set>-<commit>/templates


@pytest.fixture(scope="module")
def definitions(xp3_home) -> TaskSet:
    """The task set, with the tasks built here registered in seqio (as `import p3data.xp3`
    would) to be read through stock seqio."""
    import seqio

    from p3data.registry import register_task

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(ENV_HOME, str(xp3_home))
        definitions = load_definitions(("t0", "xp3", "xp3mt"))
    for name in TASKS:
        if name not in seqio.TaskRegistry.names():
            register_task(definitions.task(name))
    return definitions


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("cap_rows")
    for (dataset, subset), row in ROW_FILES.items():
        for split, count in (("train", ROWS), ("test", SMALL)):
            path = root / dataset / subset / f"{split}.jsonl"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("".join(json.dumps(row(i), ensure_ascii=False) + "\n"
                                    for i in range(count)))
    return root


@dataclass(frozen=True)
class Build:
    out: Path
    summary: str


@pytest.fixture(scope="module")
def build(xp3_home, data_dir, tmp_path_factory):
    """A run over TASKS with `--cap CAP` and these options."""
    def run(*options: str) -> Build:
        out = tmp_path_factory.mktemp("capped")
        result = run_cache(out, *task_args(*TASKS), "--cap", str(CAP), *options,
                           data_dir=data_dir, env={ENV_HOME: str(xp3_home)})
        return Build(out, result.stdout)
    return run


@pytest.fixture(scope="module")
def built(build) -> Build:
    return build("--rows-per-shard", "4")


def _candidates(spec, split: str, rows: int, seed: int) -> list[int]:
    """The POOL rows of smallest hash, by sorting every row's hash."""
    hashes = row_hashes(selection_key(seed, spec.entry, split, spec.template.id),
                        np.arange(rows, dtype=np.uint64))
    return sorted(np.argsort(hashes, kind="stable")[:POOL].tolist())


@pytest.fixture(scope="module")
def expected(definitions, data_dir, xp3_home):
    """What a capped split keeps: `_expected` with this module's rows."""
    return lambda name, split, *, rule, seed: _expected(
        definitions.task(name), TASKS[name], split, rule=rule, seed=seed, data_dir=data_dir,
        home=xp3_home)


def _expected(spec, pair: tuple[str, str], split: str, *, rule: str, seed: int,
              data_dir: Path, home: Path) -> tuple[list[tuple[str, str]], dict]:
    """What a capped split keeps, from `p3data render --collection`'s output, in row order,
    and the manifest's counts of its drops."""
    rows = Path(spec.entry.key.folder(data_dir), f"{split}.jsonl")
    records = [r for r in render_collection(*pair, rows, home, "--seed", str(seed))
               if r["template"] == spec.template.name]
    count = len(records)
    chosen = set(_candidates(spec, split, count, seed)) if count > POOL else set(range(count))
    rendered = [r for r in records if "dropped" not in r and r["row"] in chosen]
    key = selection_key(seed, spec.entry, split, spec.template.id)
    if rule == "xp3":
        ranked = sorted(rendered, key=lambda r: (r["inputs"], r["row"]))
    else:
        ranked = sorted(rendered, key=lambda r: int(row_hashes(key, np.array([r["row"]]))[0]))
    kept = sorted(ranked[:CAP], key=lambda r: r["row"])
    dropped = {}
    for r in records:
        if r["row"] not in chosen:
            dropped[NOT_SELECTED] = dropped.get(NOT_SELECTED, 0) + 1
        elif "dropped" in r:
            dropped[r["dropped"]] = dropped.get(r["dropped"], 0) + 1
    if len(rendered) > CAP:
        dropped[OVER_CAP] = len(rendered) - CAP
    return [(r["inputs"], r["targets"]) for r in kept], dropped


def _read(out: Path, name: str, split: str) -> list[tuple[str, str]]:
    return [(e["inputs_pretokenized"].decode(), e["targets_pretokenized"].decode())
            for e in read_examples(name, split, out)]


def _expected_train(expected, name: str, *, rule: str, seed: int
                    ) -> tuple[list[tuple[str, str]], dict, dict[str, int]]:
    """What a task's `train` keeps: each source split's capped examples (`_expected`), train's
    then test's; their drops summed; the examples of each."""
    want, dropped, parts = [], Counter(), {}
    for split in ("train", "test"):
        part, part_dropped = expected(name, split, rule=rule, seed=seed)
        want, parts[split] = want + part, len(part)
        dropped.update(part_dropped)
    return want, dict(dropped), parts


@pytest.mark.parametrize("name", list(TASKS))
def test_xp3_rule_keeps_the_smallest_inputs_among_the_candidates(name, built, expected):
    """Stock seqio reads, of the task's `train`, the source split train's CAP examples of
    smallest inputs among the rendered candidates, in row order, then every example `p3data
    render` gives of the test split (fewer rows than the cap): each source split capped
    apart. The manifest counts what was not selected and what was past the cap."""
    want, dropped, parts = _expected_train(expected, name, rule="xp3", seed=0)
    assert _read(built.out, name, "train") == want, name
    record = read_manifest(str(built.out / name)).splits["train"]
    assert (record.dropped, record.rows_kept, record.source_examples) == (
        dropped, len(want), parts), name
    assert parts["train"] == CAP and dropped[NOT_SELECTED] == ROWS - POOL
    assert OVER_CAP in dropped and record.rows_read == ROWS + SMALL
    if name.startswith("xp3mt_paws"):
        assert read_manifest(str(built.out / name)).splits["train"].dropped[BLANK] > 0


def test_the_cap_is_not_the_first_rows(built, definitions):
    """The rows are such that the cap's sort matters: what is kept is neither the first rows
    nor the first candidates, and two templates of one split keep different rows."""
    kept = {name: _read(built.out, name, "train")[:CAP] for name in TASKS}  # source train's
    firsts = [r["sentence1"] for r in map(_mrpc, range(CAP))]
    assert not all(any(first in inputs for inputs, _ in kept["xp3_glue_mrpc_equivalent"])
                   for first in firsts)
    equivalent, paraphrase = (definitions.task(n) for n in list(TASKS)[:2])
    assert _candidates(equivalent, "train", ROWS, 0) != _candidates(paraphrase, "train", ROWS, 0)


def test_uniform_keeps_cap_examples_a_function_of_the_seed(build, expected):
    """`--selection uniform` keeps the CAP rendered candidates of smallest row hash: exactly
    CAP, the same for a seed, others for another seed."""
    kept = {}
    for seed in (0, 1):
        run = build("--selection", "uniform", "--seed", str(seed), "--rows-per-shard", "4")
        for name in TASKS:
            want, dropped, parts = _expected_train(expected, name, rule="uniform", seed=seed)
            kept[name, seed] = _read(run.out, name, "train")
            assert kept[name, seed] == want and parts["train"] == CAP, (name, seed)
            manifest = read_manifest(str(run.out / name))
            assert manifest.splits["train"].dropped == dropped
            assert manifest.selection == {"rule": "uniform", "cap": CAP, "pool": POOL}
    assert all(kept[name, 0] != kept[name, 1] for name in TASKS)


def test_same_bytes_whatever_the_sharding_and_the_runner(build, built):
    """Other source shards (one part per split: dealt straight into the output shards) and two
    worker processes write the very same cache."""
    for options in (["--rows-per-shard", "100"],
                    ["--rows-per-shard", "7", "--direct_num_workers=2",
                     "--direct_running_mode=multi_processing"]):
        assert tree(build(*options).out) == tree(built.out), options


def test_manifest_and_summary_say_how_splits_were_capped(built):
    assert read_manifest(str(built.out / "xp3_glue_mrpc_equivalent")).selection == {
        "rule": "xp3", "cap": CAP, "pool": POOL}
    lines = built.summary.splitlines()
    assert ("dropped: left out by the row rule, a dataset step or the cap · errors: failed to "
            "render · schema: rows unlike the catalog's schema") in lines
    reasons = next(line for line in lines if line.startswith("dropped by reason: "))
    assert f"{NOT_SELECTED} {3 * (ROWS - POOL)}" in reasons and OVER_CAP in reasons


def test_candidates_are_the_pool_smallest_hashes_whatever_the_shards():
    """The driver's threshold picks exactly `pool` rows, those of smallest hash, and every
    shard finds its own among them."""
    key, rows, pool = 12345, 1000, 37
    hashes = row_hashes(key, np.arange(rows, dtype=np.uint64))
    want = sorted(np.argsort(hashes)[:pool].tolist())
    last = last_candidate(key, rows, pool)
    assert last == int(np.sort(hashes)[pool - 1]) and last_candidate(key, pool, pool) is None
    for step in (1, 7, 1000):
        chosen = [start + k for start in range(0, rows, step) for k in np.flatnonzero(
            row_hashes(key, np.arange(start, min(rows, start + step), dtype=np.uint64))
            <= np.uint64(last)).tolist()]
        assert chosen == want, step
    assert len(set(hashes.tolist())) == rows  # a bijection: no two rows tie


def test_the_fingerprint_records_the_selection_of_capped_tasks_only(definitions):
    """A capped task's fingerprint changes with the rule, the cap and the seed; T0's tasks'
    fingerprints do not see the rule or the cap."""
    config = CacheConfig(output_dir="/cache", vocab_model=b"vocab")
    sources = {"train": {"rows": "a"}, "test": {"rows": "b"}}
    capped, t0 = definitions.task("xp3_glue_mrpc_equivalent"), definitions.task(
        "glue_mrpc_equivalent")
    assert capped.split_cap == SplitCap(100_000, 500_000) and t0.split_cap is None
    prints = {fingerprint.task_fingerprint(CacheConfig(
        output_dir="/cache", vocab_model=b"vocab", **settings), capped, sources)
        for settings in ({}, {"selection": "uniform"}, {"cap": 5}, {"seed": 1})}
    assert len(prints) == 4
    assert fingerprint.task_fingerprint(config, t0, sources) == fingerprint.task_fingerprint(
        CacheConfig(output_dir="/cache", vocab_model=b"vocab", selection="uniform", cap=5),
        t0, sources)
    wmt22 = definitions.task("xp3_allenai_wmt22_african_eng_ibo_text_translation_eng_ibo")
    assert wmt22.split_cap == SplitCap(100_000, 50_000)
    assert wmt22.split_cap.scaled(CAP) == SplitCap(CAP, 2) and capped.split_cap.scaled(
        CAP) == SplitCap(CAP, POOL)


def test_a_split_of_at_most_the_pool_is_all_candidates(definitions):
    """Rows up to the pool are all candidates; a split of at most the cap is never cut."""
    spec = definitions.task("xp3_glue_mrpc_equivalent")
    whole = plan_selection("xp3", SplitCap(CAP, POOL), seed=0, entry=spec.entry, split="train",
                           template_id=spec.template.id, rows=POOL)
    assert (whole.last, whole.cuts, whole.candidates(0, POOL)) == (None, True, None)
    assert not plan_selection("xp3", SplitCap(CAP, POOL), seed=0, entry=spec.entry,
                              split="test", template_id=spec.template.id, rows=CAP).cuts
