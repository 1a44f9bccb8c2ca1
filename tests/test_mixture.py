"""`p3data.read.MixtureSampler`: T0's mixture rule, seeded, resumable from a saved state; the
same stream, and the same packed rows, from a cache of either shard format."""

from __future__ import annotations

import itertools
import json
import math
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from helpers.cache import run_cache

from p3data.errors import P3DataError
from p3data.read import open_cache
from p3data.read.mixture import MissingTasksError, MixtureSampler, mixture_sampler
from p3data.read.packing import PackedStream

SIZES = {"alpha": 7, "beta": 50, "gamma": 3, "delta": 20}
RATES = {"alpha": 1, "beta": 2.5, "gamma": 0, "delta": 6.5}


def sources(sizes: dict[str, int] = SIZES) -> dict[str, list[dict]]:
    """In-memory tasks whose examples name themselves."""
    return {task: [{"id": f"{task}/{i}", "inputs": [i + 2, 1]} for i in range(size)]
            for task, size in sizes.items()}


def ids(sampler: MixtureSampler, count: int) -> list[str]:
    return [example["id"] for example in itertools.islice(sampler, count)]


def test_task_shares_converge_to_the_normalized_rates():
    """Over N draws a task's count is binomial(N, p) with p = rate / sum(rates): its share
    must lie within 5 standard deviations, sqrt(p (1 - p) / N), of p (a fixed seed makes the
    test deterministic; a correct sampler fails it with probability below 2e-6). A task of
    rate 0 is never drawn."""
    draws = 40_000
    counts = Counter(i.split("/")[0] for i in ids(MixtureSampler(sources(), RATES, seed=3), draws))
    total = sum(RATES.values())
    for task, rate in RATES.items():
        p = rate / total
        tolerance = 5 * math.sqrt(p * (1 - p) / draws)
        assert abs(counts[task] / draws - p) <= tolerance, (task, counts[task], p, tolerance)
    assert counts["gamma"] == 0


def test_each_epoch_is_a_fresh_permutation_of_the_task():
    sampler = MixtureSampler(sources(), RATES, seed=5, task_key="task")
    by_task: dict[str, list[str]] = {}
    for example in itertools.islice(sampler, 3000):
        by_task.setdefault(example["task"], []).append(example["id"])
    epochs = [by_task["alpha"][start:start + 7] for start in range(0, 7 * 5, 7)]
    assert all(sorted(epoch) == sorted(f"alpha/{i}" for i in range(7)) for epoch in epochs)
    assert len({tuple(epoch) for epoch in epochs}) > 1
    in_order = MixtureSampler(sources(), RATES, seed=5, shuffle=False, task_key="task")
    alpha = [e["id"] for e in itertools.islice(in_order, 3000) if e["task"] == "alpha"]
    assert alpha[:14] == [f"alpha/{i}" for i in range(7)] * 2


def test_examples_carry_their_task_only_when_asked():
    tasks = sources()
    plain = next(MixtureSampler(tasks, RATES, seed=0))
    assert set(plain) == {"id", "inputs"}
    tagged = next(MixtureSampler(tasks, RATES, seed=0, task_key="task"))
    assert tagged["task"] == tagged["id"].split("/")[0] and tagged["id"] == plain["id"]
    assert all("task" not in example for task in tasks.values() for example in task)


def test_a_seed_fixes_the_stream():
    first = ids(MixtureSampler(sources(), RATES, seed=11), 500)
    assert ids(MixtureSampler(sources(), RATES, seed=11), 500) == first
    assert ids(MixtureSampler(sources(), RATES, seed=12), 500) != first
    unshuffled = ids(MixtureSampler(sources(), RATES, seed=11, shuffle=False), 500)
    assert unshuffled != first


@pytest.mark.parametrize("stop", [1, 700, MixtureSampler.BLOCK + 33])
def test_a_restored_state_continues_the_same_stream(stop):
    """At the first step, after tasks wrapped into later epochs, and past a block of draws;
    through JSON, into a new sampler over new (equal) sources and into an existing one."""
    sampler = MixtureSampler(sources(), RATES, seed=7)
    ids(sampler, stop)
    state = json.loads(json.dumps(sampler.state()))
    expected = ids(sampler, 5000)
    restored = MixtureSampler.restore(sources(), RATES, state)
    assert restored.step == stop
    assert ids(restored, 5000) == expected
    reused = MixtureSampler(sources(), RATES, seed=7)
    ids(reused, 123)
    assert ids(reused.load_state(state), 5000) == expected
    if stop > 100:
        assert state["tasks"]["alpha"]["drawn"] > SIZES["alpha"]  # alpha is epochs ahead
    assert len(json.dumps(state)) < 500  # positions only, never a permutation


def test_a_state_is_refused_by_another_mixture():
    sampler = MixtureSampler(sources(), RATES, seed=7)
    ids(sampler, 50)
    state = sampler.state()
    with pytest.raises(P3DataError, match="task 'beta' has rate 2.5 and 50 examples there, "
                                          "rate 3 and 50 examples here"):
        MixtureSampler.restore(sources(), {**RATES, "beta": 3}, state)
    with pytest.raises(P3DataError, match="task 'delta' has rate 6.5 and 20 examples there, "
                                          "rate 6.5 and 21 examples here"):
        MixtureSampler.restore(sources({**SIZES, "delta": 21}), RATES, state)
    with pytest.raises(P3DataError, match="its seed is 7, this sampler's 8"):
        MixtureSampler(sources(), RATES, seed=8).load_state(state)
    with pytest.raises(P3DataError, match=r"not a mixture sampler state: .*\$\.step"):
        MixtureSampler.restore(sources(), RATES, {**state, "step": "50"})
    with pytest.raises(P3DataError, match="step 51 is not the sum"):
        MixtureSampler.restore(sources(), RATES, {**state, "step": 51})


def test_bad_mixtures_are_refused():
    with pytest.raises(P3DataError, match="task 'gamma' is only in the mixture's sources"):
        MixtureSampler(sources(), {k: v for k, v in RATES.items() if k != "gamma"}, seed=0)
    with pytest.raises(P3DataError, match="finite and non-negative: beta=-1"):
        MixtureSampler(sources(), {**RATES, "beta": -1}, seed=0)
    with pytest.raises(P3DataError, match="no task of the mixture has a positive"):
        MixtureSampler(sources(), dict.fromkeys(RATES, 0), seed=0)
    with pytest.raises(P3DataError, match="task 'alpha' has no examples but a mixing rate of 1"):
        MixtureSampler(sources({**SIZES, "alpha": 0}), RATES, seed=0)
    with pytest.raises(P3DataError, match="seed must be a non-negative integer"):
        MixtureSampler(sources(), RATES, seed=-1)


# A few tasks of three T0 mixtures, of datasets with different caps and sizes; story_cloze has
# no train split (seqio's example-count rate needs one); and few-shot variants of some of them
FEWSHOT = ["ag_news_classify_[0135]shot", "trec_fine_grained_open_[0135]shot",
           "super_glue_copa_exercise_score_eval_3shot"]
CACHED = ["ag_news_classify", "ag_news_classify_score_eval", "trec_fine_grained_open",
          "imdb_Movie_Expressed_Sentiment", "rotten_tomatoes_Movie_Expressed_Sentiment_score_eval",
          "super_glue_copa_exercise_score_eval", "story_cloze_2016_Answer_Given_options_score_eval",
          *FEWSHOT]


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("cache")
    run_cache(out, "--tasks", "|".join(CACHED))
    return out


@pytest.fixture(scope="module")
def arrayrecord_cache(tmp_path_factory) -> Path:
    """The same tasks with ArrayRecord shards."""
    out = tmp_path_factory.mktemp("arrayrecord")
    run_cache(out, "--tasks", "|".join(CACHED), "--shard-format", "arrayrecord")
    return out


@pytest.mark.parametrize(("mixture", "expected", "distinct"), [
    ("t0_train", {"ag_news_classify", "trec_fine_grained_open", "imdb_Movie_Expressed_Sentiment"},
     3),
    ("t0_train_score_eval", {"ag_news_classify_score_eval",
                             "rotten_tomatoes_Movie_Expressed_Sentiment_score_eval"}, 2),
    ("t0_eval_score_eval", {"super_glue_copa_exercise_score_eval"}, 1),  # story_cloze: no train
    # a task's T0 rate split: half to 0 shots, a sixth to each of 1, 3 and 5
    ("t0_train_fewshot", {f"{task}_{k}shot" for task in ("ag_news_classify",
                                                         "trec_fine_grained_open")
                          for k in (0, 1, 3, 5)}, 4),
    ("t0_eval_score_eval_3shot", {"super_glue_copa_exercise_score_eval_3shot"}, 1),
])
def test_mixture_sampler_rates_tasks_as_seqio_does(cache, taskset, *, mixture, expected,
                                                   distinct):
    import seqio

    sampler = mixture_sampler(cache, mixture, seed=0, allow_missing=True, definitions=taskset)
    assert set(sampler.rates) == expected
    registered = seqio.MixtureRegistry.get(mixture)
    for name, rate in sampler.rates.items():
        task = seqio.TaskRegistry.get(name)
        with pytest.MonkeyPatch.context() as patch:  # seqio reads this very cache
            patch.setattr(task, "_cache_dir", str(cache / name))
            patch.setattr(task, "_stats", {})
            assert rate == registered.get_rate(task), name
    assert len(set(sampler.rates.values())) == distinct  # the rates tell tasks apart
    reader = open_cache(str(cache))
    example = next(MixtureSampler.restore(
        {name: reader.split(name, "train") for name in expected}, sampler.rates,
        sampler.state(), task_key="task"))
    assert example["inputs_pretokenized"] in {
        e["inputs_pretokenized"] for e in reader.split(example["task"], "train")}


def test_mixture_sampler_names_the_tasks_a_cache_lacks(cache, taskset):
    with pytest.raises(MissingTasksError, match=r"lacks 310 of t0_train's 313 tasks with a "
                                                r"'train' split: glue_mrpc_equivalent, .* and "
                                                r"300 more; cache them") as caught:
        mixture_sampler(cache, "t0_train", seed=0, definitions=taskset)
    assert len(caught.value.missing) == 310 and "ag_news_classify" not in caught.value.missing
    with pytest.raises(P3DataError, match="story_cloze_2016_Answer_Given_options_score_eval: no "
                                          "'train' split, whose examples rate the task in "
                                          "t0_eval_score_eval"):
        mixture_sampler(cache, "t0_eval_score_eval", "validation", seed=0, allow_missing=True,
                        definitions=taskset)
    with pytest.raises(P3DataError, match="unknown mixture 't0_nope'"):
        mixture_sampler(cache, "t0_nope", seed=0, definitions=taskset)


def test_sampler_and_packing_draw_the_same_from_an_arrayrecord_cache(cache, arrayrecord_cache,
                                                                     taskset):
    """The same mixture stream, example for example, and the same packed rows, from either
    shard format; a packed stream's state saved over one restores over the other."""
    def sampler(folder: Path, **options) -> MixtureSampler:
        return mixture_sampler(folder, "t0_train_fewshot", seed=4, allow_missing=True,
                               definitions=taskset, **options)

    examples = [list(itertools.islice(sampler(folder, task_key="task"), 300))
                for folder in (cache, arrayrecord_cache)]
    assert [repr(e) for e in examples[0]] == [repr(e) for e in examples[1]]
    assert len({e["task"] for e in examples[0]}) == 8
    ours, theirs = PackedStream(sampler(arrayrecord_cache)), PackedStream(sampler(cache))
    rows = [[next(stream) for _ in range(30)] for stream in (ours, theirs)]
    assert [repr(row) for row in rows[0]] == [repr(row) for row in rows[1]]
    restored = PackedStream(sampler(arrayrecord_cache)).load_state(
        json.loads(json.dumps(theirs.state())))
    assert [repr(next(restored)) for _ in range(10)] == [repr(next(theirs)) for _ in range(10)]


@pytest.mark.parametrize("shard_format", ["tfrecord", "arrayrecord"])
def test_mixture_sampler_and_packing_run_without_tensorflow(shard_format, request):
    """The whole path, cache to packed rows, imports neither TensorFlow nor seqio."""
    cache = request.getfixturevalue("cache" if shard_format == "tfrecord" else
                                    "arrayrecord_cache")
    script = (
        "import itertools, sys\n"
        "from p3data.read.mixture import mixture_sampler\n"
        "from p3data.read.packing import pack\n"
        f"sampler = mixture_sampler({str(cache)!r}, 't0_train', seed=1, allow_missing=True)\n"
        "rows = list(itertools.islice(pack(sampler, {'inputs': 256, 'targets': 32}), 5))\n"
        "assert [row['encoder_input_tokens'].shape for row in rows] == [(256,)] * 5\n"
        "assert max(row['encoder_segment_ids'].max() for row in rows) >= 2\n"
        "print(sorted({'tensorflow', 'seqio'} & set(sys.modules)))\n")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip() == "[]"
