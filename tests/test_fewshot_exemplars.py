"""Exemplar choice: the rules as properties over generated rows (duplicates, missing labels,
over-long passages), uniform draws over the whole pool, and the same bytes whatever the
sharding, batching, order, worker or pool storage. Real templates, rows and vocabulary."""

from __future__ import annotations

import random
import tempfile
from collections import Counter

import numpy as np
import pytest
from helpers.cache import tree
from helpers.fewshot import TaskSplit, catalog, example_bytes, new_tokenizer, normalized, tokens
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from p3data import fs
from p3data.builder import pool_work
from p3data.datasets.samples import generate_rows, sample_rows
from p3data.fewshot import FewshotSettings
from p3data.fewshot.draws import Draws, draw_key
from p3data.fewshot.example import assemble, per_choice
from p3data.fewshot.pool import POOL_FILES, ExemplarPool, PoolBuilder, input_key
from p3data.fewshot.stats import FewshotStats
from p3data.templates.render import NO_LABEL, Rendered

RTE = ("super_glue", "rte")
RTE_ROWS = {split: sample_rows(catalog().get(*RTE).key, split)
            for split in ("train", "validation", "test")}
WORDS = sorted({word for rows in RTE_ROWS.values() for row in rows
                for word in f"{row['premise']} {row['hypothesis']}".split()})

_text = st.lists(st.sampled_from(WORDS), min_size=1, max_size=30).map(" ".join)
_passage = st.lists(st.sampled_from(WORDS), min_size=250, max_size=700).map(" ".join)
_row = st.fixed_dictionaries({"premise": st.one_of(_text, _text, _passage), "hypothesis": _text,
                              "label": st.sampled_from([-1, 0, 1])})


def _spaced(row: dict, wide: bool) -> dict:
    """The row, its premise's spaces doubled if `wide`: the same input, normalized."""
    return {**row, "premise": row["premise"].replace(" ", "  ")} if wide else dict(row)


# Rows drawn with repeats from a few distinct ones, some respaced: duplicates of every kind.
rows_strategy = st.lists(_row, min_size=1, max_size=12).flatmap(
    lambda distinct: st.lists(st.tuples(st.sampled_from(distinct), st.booleans()), min_size=1,
                              max_size=24)).map(
    lambda picks: [{**_spaced(row, wide), "idx": i} for i, (row, wide) in enumerate(picks)])


def _oracle_exemplar(task: TaskSplit, row: dict, number: int) -> Rendered:
    outcome = task.renders([row], number)[0]
    assert isinstance(outcome, Rendered) and outcome.targets != NO_LABEL
    return outcome


def check_rules(task: TaskSplit, examples: dict) -> None:
    """Every rule of exemplar choice and fitting, re-derived for each example."""
    settings, tok = task.settings, task.tokenizer
    queries = task.queries()
    pool_rows = task.rows if task.pool_rows is None else task.pool_rows
    usable = {}  # row -> (normalized input, exemplar text, cost): the oracle's pool
    for outcome in task.renders(pool_rows):
        if isinstance(outcome, Rendered) and outcome.targets != NO_LABEL:
            text = outcome.inputs + settings.exemplar_separator + outcome.targets
            usable[outcome.index] = (normalized(outcome.inputs), text,
                                     tokens(tok, text + settings.example_separator))
    largest = examples[settings.max_shots]
    for k in settings.shots:
        assert len(examples[k]) == len(queries)  # a query is never dropped
        for (_, query), zero, example, most in zip(queries, examples[0], examples[k], largest,
                                                   strict=True):
            alone = zero.inputs  # the query as fitted, without exemplars
            assert (example.row, example.targets) == (query.index, query.targets)
            assert example.answer_choices == query.answer_choices
            rows = example.exemplar_rows
            assert example.num_shots == len(rows) <= k
            assert rows == most.exemplar_rows[:len(rows)]  # k shots: the first k of the most
            assert len(set(rows)) == len(rows)
            if task.source.same_split:
                assert query.index not in rows
            inputs = [usable[r][0] for r in rows]  # KeyError: not a usable pool row
            assert normalized(query.inputs) not in inputs
            assert len(set(inputs)) == len(inputs)
            texts = [_oracle_exemplar(task, pool_rows[r], r) for r in rows]
            assert [t.inputs + settings.exemplar_separator + t.targets for t in texts] == [
                usable[r][1] for r in rows]
            assert example.inputs == assemble([usable[r][1] for r in rows], alone, settings)
            n = tokens(tok, example.inputs)
            assert n == tokens(tok, alone) + sum(usable[r][2] for r in rows)  # exact estimate
            if tokens(tok, alone) <= settings.input_length:
                assert n <= settings.input_length
            if len(rows) < k:  # no allowed exemplar fits the room left, or none is left
                room = settings.input_length - n
                taken = {normalized(query.inputs), *inputs}
                allowed = [r for r, (key, _, _) in usable.items() if key not in taken
                           and not (task.source.same_split and r == query.index)]
                assert all(usable[r][2] > room for r in allowed), (room, allowed)


# Derandomized: the same 40 cases on every run, so `make test` passes or fails reproducibly.
@settings(max_examples=40, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(case=st.fixed_dictionaries({
    "rows": rows_strategy, "pool_rows": st.none() | rows_strategy,
    "shots": st.sampled_from([(0, 1, 3, 5), (0, 2, 7)]),
    "length": st.sampled_from([64, 160, 400, 1024]),
    "template": st.sampled_from(["GPT-3 style", "MNLI crowdsource", "does this imply"])}))
def test_exemplar_rules_hold_for_any_rows(case):
    length = case["length"]
    fewshot = FewshotSettings(shots=case["shots"], input_length=length,
                              label="" if length == 1024 else "short")
    split = "train" if case["pool_rows"] is None else "validation"
    task = TaskSplit(*RTE, case["template"], split, case["rows"], case["pool_rows"], fewshot)
    prompter = task.prompter()
    examples = prompter.prompts(task.queries())
    check_rules(task, examples)
    for k, stats in prompter.stats.items():
        assert stats.examples == len(examples[k])
        assert stats.shots == Counter(e.num_shots for e in examples[k])
        assert stats.short_pool + stats.no_room == sum(e.num_shots < k for e in examples[k])


def test_real_rte_validation_draws_from_train_and_twins_share_exemplars():
    task = TaskSplit(*RTE, "GPT-3 style", "validation", RTE_ROWS["validation"], RTE_ROWS["train"])
    assert (task.source.split, task.source.same_split) == ("train", False)
    examples = task.examples()
    check_rules(task, examples)
    assert [e.num_shots for e in examples[5]] == [5] * 10
    choices = per_choice(examples[3][0])
    assert [c.targets for c in choices] == ["True", "False"]
    assert [c.is_correct for c in choices] == [c.targets == examples[3][0].targets
                                                for c in choices]
    assert {c.example.exemplar_rows for c in choices} == {examples[3][0].exemplar_rows}
    features = examples[3][0].features()
    assert features["num_shots"].dtype == np.int32 and features["num_shots"] == 3
    assert features["exemplar_rows"].dtype == np.int64
    assert features["exemplar_rows"].tolist() == list(examples[3][0].exemplar_rows)


def test_story_cloze_without_a_train_split_draws_from_its_own_split_minus_the_query():
    key = catalog().get("story_cloze", "2016").key
    rows = sample_rows(key, "validation")
    task = TaskSplit("story_cloze", "2016", "Answer Given options", "validation", rows, rows)
    assert (task.source.split, task.source.same_split) == ("validation", True)
    examples = task.examples()
    check_rules(task, examples)
    assert all(e.row not in e.exemplar_rows for e in examples[5])
    assert [e.num_shots for e in examples[5]] == [5] * 10


def test_hidden_test_labels_are_never_exemplars_and_a_short_pool_is_recorded():
    # rte's test split has no labels: as a pool (same split) it has no usable exemplar
    task = TaskSplit(*RTE, "GPT-3 style", "test", RTE_ROWS["test"])
    prompter = task.prompter()
    examples = prompter.prompts(task.queries())
    assert len(prompter.pool) == 0
    assert {e.num_shots for k in (1, 3, 5) for e in examples[k]} == {0}
    assert prompter.stats[5].short_pool == 10 and prompter.stats[5].shots == {0: 10}
    # two labelled rows, one of them the query's own input: at most one exemplar
    pool_rows = [RTE_ROWS["train"][0], RTE_ROWS["train"][1]]
    rows = [RTE_ROWS["train"][0]]
    task = TaskSplit(*RTE, "GPT-3 style", "validation", rows, pool_rows)
    prompter = task.prompter()
    examples = prompter.prompts(task.queries())
    assert examples[3][0].exemplar_rows == (1,)
    assert prompter.stats[3].short_pool == 1 and prompter.stats[1].short_pool == 0


def test_an_exemplar_is_found_even_when_the_querys_duplicates_crowd_the_pool():
    query, other = RTE_ROWS["train"][0], RTE_ROWS["train"][1]
    pool_rows = [_spaced(query, wide=i % 2 == 1) for i in range(300)] + [other]
    rows = [query] * 20  # 20 queries, each drawing its own stream
    task = TaskSplit(*RTE, "GPT-3 style", "validation", rows, pool_rows)
    prompter = task.prompter()
    examples = prompter.prompts(task.queries())
    assert {e.exemplar_rows for e in examples[1]} == {(300,)}  # past 32 rejected draws
    assert {e.exemplar_rows for e in examples[5]} == {(300,)}
    assert prompter.stats[5].short_pool == 20


def test_draws_are_uniform_over_the_whole_pool_not_a_window():
    entry = catalog().get(*RTE)
    rows = list(generate_rows(entry, "train", 600, seed=5))
    for i, row in enumerate(rows):  # distinct inputs, so every row is a possible exemplar
        row["hypothesis"] += f" ({i})"
        row["label"] = i % 2
    task = TaskSplit(*RTE, "GPT-3 style", "train", rows)
    prompter = task.prompter()
    examples = prompter.prompts(task.queries())
    assert len(prompter.pool) == 600
    distances = [abs(r - e.row) for e in examples[5] for r in e.exemplar_rows]
    assert len(distances) == 3000
    assert np.mean(distances) > 170  # ~ 600 / 3 if uniform; a window of 1,000 rows: no limit
    counts = np.bincount([r for e in examples[5] for r in e.exemplar_rows], minlength=600)
    expected = 3000 / 600
    chi2 = float(((counts - expected) ** 2 / expected).sum())
    assert chi2 < 700, chi2  # 599 degrees of freedom: 700 is beyond the 0.3% tail
    # a small pool, many queries: each of its 10 rows drawn about equally often
    small = TaskSplit(*RTE, "GPT-3 style", "validation", rows, RTE_ROWS["train"])
    firsts = Counter(e.exemplar_rows[0] for e in small.examples()[1])
    assert set(firsts) == set(range(10)) and max(firsts.values()) < 2 * min(firsts.values())


def _long_task(**kwargs) -> TaskSplit:
    entry = catalog().get("quoref")
    rows = list(generate_rows(entry, "train", 40, seed=11))
    return TaskSplit("quoref", None, "Answer Question Given Context", "train", rows, **kwargs)


@pytest.mark.parametrize("make", [
    lambda: _long_task(),
    lambda: TaskSplit(*RTE, "can we infer", "validation", RTE_ROWS["validation"] * 3,
                      RTE_ROWS["train"]),
], ids=["quoref-long", "rte"])
def test_same_bytes_whatever_the_sharding_batching_order_worker_or_pool_storage(make, tmp_path):
    task = make()
    rows = len(task.rows)
    # the pool from shards given in reverse order, saved and memory-mapped
    shards = [(a, min(a + 7, rows)) for a in range(0, rows, 7)][::-1]
    task.pool(shards).save(tmp_path / "pool")
    mapped = ExemplarPool.load(tmp_path / "pool")
    assert mapped.rows.tolist() == task.pool().rows.tolist()
    # queries in shards of 5, shards shuffled, each shard by a fresh worker's tokenizer
    starts = list(range(0, rows, 5))
    random.Random(3).shuffle(starts)
    pieces: dict[int, dict[int, tuple]] = {k: {} for k in task.settings.shots}
    totals = {k: None for k in task.settings.shots}
    for start in starts:
        prompter = task.prompter(pool=mapped, tokenizer=new_tokenizer())
        for k, examples in prompter.prompts(task.queries(start, start + 5)).items():
            pieces[k].update((e.row, example_bytes(e)) for e in examples)
            totals[k] = (prompter.stats[k] if totals[k] is None
                         else totals[k].merge(prompter.stats[k]))
    whole_prompter = task.prompter()
    whole = whole_prompter.prompts(task.queries())
    for k in task.settings.shots:
        assert [pieces[k][e.row] for e in whole[k]] == [example_bytes(e) for e in whole[k]]
        assert totals[k].as_dict() == whole_prompter.stats[k].as_dict()
        assert FewshotStats.from_dict(totals[k].as_dict()) == totals[k]


def test_pool_is_the_same_whichever_order_its_batches_came_in():
    task = _long_task()
    one = task.pool()
    other = task.pool([(30, 40), (0, 13), (13, 30)])
    assert one.rows.tolist() == other.rows.tolist()
    assert one.costs.tolist() == other.costs.tolist()
    assert [one.text(p) for p in range(len(one))] == [other.text(p) for p in range(len(other))]
    assert list(one.costs) == sorted(one.costs)


def test_draws_are_keyed_exact_and_unambiguous():
    key = draw_key(0, "task", "train", 17)
    first = [Draws(key).below(10) for _ in range(3)]
    assert len(set(first)) == 1
    stream = Draws(key)
    assert [stream.below(1000) for _ in range(5)] != [stream.below(1000) for _ in range(5)]
    assert draw_key(0, "ab", "c", 1) != draw_key(0, "a", "bc", 1)
    assert draw_key(1, "task", "train", 17) != key
    with pytest.raises(ValueError, match="n=0"):
        Draws(key).below(0)
    assert input_key("a  b\nc ") == input_key("a b c")


def test_a_pool_collected_in_files_saves_the_same_pool(tmp_path):
    """The pool stage's builders keep texts and ids in local files, not memory: the pool they
    save is byte for byte the one built in memory, whatever order the batches came in."""
    task = _long_task()
    rows = len(task.rows)
    spilled = PoolBuilder(task.settings, task.tokenizer, spill=tmp_path / "spill")
    for start in reversed(range(0, rows, 7)):
        spilled.add(task.renders(task.rows[start:start + 7], start))
    assert len(spilled) == len(task.pool())
    assert (tmp_path / "spill" / "texts.bin").stat().st_size > 20_000  # the texts went there
    spilled.save(tmp_path / "spilled")
    task.pool().save(tmp_path / "memory")
    assert tree(tmp_path / "spilled") == tree(tmp_path / "memory")


def test_a_pool_off_this_disk_is_mapped_from_a_copy_that_leaves_no_files(tmp_path, monkeypatch):
    """A worker maps a pool kept off this machine's disk (here `memory://`) through a local
    copy whose names it removes once mapped: the pool reads as saved, and however many pools
    a worker opens, its temporary folder keeps nothing."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    _long_task().pool().save(tmp_path / "saved")
    folder = f"memory://{tmp_path.name}/pool"
    for name in POOL_FILES:
        fs.write_bytes(fs.join(folder, name), (tmp_path / "saved" / name).read_bytes())
    pool = pool_work._open(folder)
    assert list((tmp_path / "tmp").iterdir()) == []
    pool.save(tmp_path / "again")
    assert tree(tmp_path / "again") == tree(tmp_path / "saved")
