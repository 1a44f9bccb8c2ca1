"""A build beside P3: `verify --against-p3-counts` (P3's published counts) and `compare` (a
downloaded copy of P3, as seqio TFRecords or as the Hub's parquet files). The copies of P3 are
made from a real cache: its task folders in P3's layout, or its examples written as parquet,
with planted differences (a dropped example, a changed token id, a leading newline)."""

from __future__ import annotations

import io
import json
import re
import shutil
import warnings
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from helpers.cache import run_cache

from p3data.cli import main
from p3data.format import layout
from p3data.format.example import encode_example
from p3data.format.example_decoding import decode_example
from p3data.format.shard_format import shard_name
from p3data.format.tfrecord import read_records, write_framed
from p3data.p3_release.compare import compare_with_p3
from p3data.p3_release.counts import check_counts, p3_counts

TASKS = ("super_glue_copa_choose", "super_glue_copa_choose_score_eval",
         "super_glue_copa_exercise", "super_glue_copa_exercise_score_eval")
SPLITS = ("test", "train", "validation")
# P3's TFRecords as p3data writes them; as seqio wrote P3's (TensorFlow's serialization, its
# own feature order); the Hub's parquet files, without and with the data/ prefix.
LAYOUTS = ("tfrecord", "seqio", "parquet", "data/parquet")
ARROW_TYPES = {"int32": pa.int32(), "string": pa.string(), "bool": pa.bool_(),
               "float32": pa.float32()}
Edit = Callable[[list[dict]], list[dict]]


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("p3") / "cache"
    run_cache(out, "--tasks", "super_glue_copa_(choose|exercise)(_score_eval)?")
    return out


def decoded(folder: Path, split: str) -> list[dict]:
    with (folder / shard_name(split, 0, 1)).open("rb") as handle:
        return [decode_example(record) for record in read_records(handle)]


def p3_copy(cache: Path, target: Path, kind: str, edits: dict[tuple[str, str], Edit]) -> Path:
    """The cache's tasks as a copy of P3 of `kind` (one of LAYOUTS), with `edits` made to the
    examples of some task splits; TFRecord splits no edit touches are copied byte for byte."""
    for task in TASKS:
        folder = target / ("data" if kind != "parquet" else "") / task
        folder.mkdir(parents=True)
        for split in SPLITS:
            info = json.loads((cache / task / layout.info_name(split)).read_text())
            examples = decoded(cache / task, split)
            if (task, split) in edits:
                examples = edits[task, split](examples)
            if kind in ("tfrecord", "seqio"):
                write_p3_split(cache / task, folder, split, info=info, examples=examples,
                               edited=(task, split) in edits, seqio=kind == "seqio")
            else:
                write_parquet(folder / f"{split}-00000-of-00001.parquet", info, examples)
    return target


def write_p3_split(source: Path, folder: Path, split: str, *, info: dict,
                   examples: list[dict], edited: bool, seqio: bool) -> None:
    """One split as P3 holds it: one shard, info with P3's seqio version, stats, COMPLETED."""
    shard = shard_name(split, 0, 1)
    if seqio:
        write_with_seqio(folder / shard, info, examples)
    elif edited:
        with (folder / shard).open("wb") as handle:
            write_framed(handle, map(encode_example, examples))
    else:
        shutil.copyfile(source / shard, folder / shard)
    info["seqio_version"] = layout.P3_SEQIO_VERSION
    (folder / layout.info_name(split)).write_text(layout.dumps(info))
    stats = json.loads((source / layout.stats_name(split)).read_text())
    (folder / layout.stats_name(split)).write_text(layout.dumps({**stats,
                                                                 "examples": len(examples)}))
    (folder / layout.COMPLETED).write_bytes(b"")


def write_with_seqio(path: Path, info: dict, examples: list[dict]) -> None:
    """Records as seqio's cache job wrote P3's: `seqio.dict_to_tfexample` of the features, in
    another order than p3data's, serialized by TensorFlow."""
    import numpy as np
    import seqio
    import tensorflow as tf

    types = {"int32": np.int32, "string": object, "bool": np.bool_, "float32": np.float32}
    features = info["features"]
    with tf.io.TFRecordWriter(str(path)) as writer, warnings.catch_warnings():
        # protobuf warns that seqio stores bools in an int64 list, as it did for P3
        warnings.simplefilter("ignore", DeprecationWarning)
        for example in examples:
            values = {name: np.array(example[name] if features[name]["shape"]
                                     else example[name][0], dtype=types[features[name]["dtype"]])
                      for name in sorted(features, reverse=True)}
            writer.write(seqio.dict_to_tfexample(values).SerializeToString())


def write_parquet(path: Path, info: dict, examples: list[dict]) -> None:
    """P3's parquet features: int32 id lists, strings, answer_choices / idx / is_correct /
    weight where the task has them."""
    features = info["features"]
    schema = pa.schema([(name, pa.list_(ARROW_TYPES[f["dtype"]]) if f["shape"]
                         else ARROW_TYPES[f["dtype"]]) for name, f in sorted(features.items())])

    def value(name: str, values: list):
        kind = features[name]["dtype"]
        values = [v.decode() if kind == "string" else bool(v) if kind == "bool" else v
                  for v in values]
        return values if features[name]["shape"] else values[0]

    rows = [{name: value(name, example[name]) for name in features} for example in examples]
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), path)


def drop_last(examples: list[dict]) -> list[dict]:
    return examples[:-1]


def change_an_id(examples: list[dict]) -> list[dict]:
    examples[3]["inputs"][2] += 1
    return examples


def newline_before_target(examples: list[dict]) -> list[dict]:
    examples[0]["targets_pretokenized"] = [b"\n" + examples[0]["targets_pretokenized"][0]]
    return examples


PLANTED = {("super_glue_copa_exercise", "validation"): drop_last,
           ("super_glue_copa_choose", "train"): change_an_id,
           ("super_glue_copa_choose_score_eval", "validation"): newline_before_target}


def compare(capsys, cache: Path, p3: Path | str) -> tuple[int, list[str]]:
    code = main(["compare", str(cache), str(p3)])
    return code, capsys.readouterr().out.splitlines()


def row(lines: list[str], task: str, split: str) -> list[str]:
    return next(line.split() for line in lines if line.split()[:2] == [task, split])


@pytest.mark.parametrize("kind", LAYOUTS)
def test_a_clean_copy_of_p3_agrees_fully(cache, tmp_path, capsys, kind):
    p3 = p3_copy(cache, tmp_path / "p3", kind, {})
    if kind == "seqio":  # equal values, other bytes: compared feature by feature
        shard = Path(TASKS[0], shard_name("train", 0, 1))
        assert (p3 / "data" / shard).read_bytes() != (cache / shard).read_bytes()
    code, lines = compare(capsys, cache, p3)
    assert code == 0
    assert lines[0].split() == ["task", "split", "ours", "P3", "ids", "text", "text", "stripped",
                                "other", "fields"]
    assert len(lines) == 1 + 12 + 1
    assert row(lines, "super_glue_copa_exercise_score_eval", "train") == [
        "super_glue_copa_exercise_score_eval", "train", "22", "22", *["equal"] * 4]
    assert all(line.split()[-4:] == ["equal"] * 4 for line in lines[1:-1])
    assert lines[-1] == ("SAME: 12 task splits of 4 tasks compared: 12 equal, 0 differ only in "
                         "surrounding whitespace (not a failure), 0 differ")


@pytest.mark.parametrize("kind", LAYOUTS)
def test_planted_differences_are_found_and_located(cache, tmp_path, capsys, kind):
    p3 = p3_copy(cache, tmp_path / "p3", kind, PLANTED)
    code, lines = compare(capsys, cache, p3)
    assert code == 1
    assert row(lines, "super_glue_copa_exercise", "validation")[2:] == [
        "11", "10", *["equal"] * 4]
    assert row(lines, "super_glue_copa_choose", "train")[2:] == [
        "11", "11", "1", "differ", "equal", "equal", "equal"]
    assert row(lines, "super_glue_copa_choose_score_eval", "validation")[2:] == [
        "22", "22", "equal", "1", "differ", "equal", "equal"]

    ids = decoded(cache / "super_glue_copa_choose", "train")[3]["inputs"]
    target = decoded(cache / "super_glue_copa_choose_score_eval",
                     "validation")[0]["targets_pretokenized"][0].decode()
    assert len(target) < 59  # shown whole
    details = lines[1 + 12:]  # after the table
    assert details[0] == ("super_glue_copa_choose/train: differs; first difference of each "
                          "kind:")
    assert details[1].startswith(f"  inputs [example 3]: ours [{ids[0]}, {ids[1]}, {ids[2]}, ")
    assert f" · P3 [{ids[0]}, {ids[1]}, {ids[2] + 1}, " in details[1]
    assert details[1].endswith(f"({len(ids)} values)")
    assert details[2:6] == [
        "super_glue_copa_choose_score_eval/validation: texts differ only in surrounding "
        "whitespace (ids equal); first difference:",
        f"  targets_pretokenized [example 0]: ours {target!r} · P3 {chr(10) + target!r}",
        "super_glue_copa_exercise/validation: 11 examples here, 10 in P3: compared the first 10",
        "DIFFERENT: 12 task splits of 4 tasks compared: 9 equal, 1 differ only in surrounding "
        "whitespace (not a failure), 2 differ"]


def test_whitespace_alone_is_reported_but_not_a_failure(cache, tmp_path, capsys):
    key = ("super_glue_copa_choose_score_eval", "validation")
    p3 = p3_copy(cache, tmp_path / "p3", "tfrecord", {key: PLANTED[key]})
    code, lines = compare(capsys, cache, p3)
    assert code == 0
    assert lines[-1] == ("SAME: 12 task splits of 4 tasks compared: 11 equal, 1 differ only in "
                         "surrounding whitespace (not a failure), 0 differ")


def test_a_difference_past_the_common_prefix_is_not_compared_and_other_fields_count(
        cache, tmp_path, capsys):
    def shift_choices(examples: list[dict]) -> list[dict]:  # drops the first: every row shifts
        return examples[1:]

    def flip_correct(examples: list[dict]) -> list[dict]:
        examples[5]["is_correct"] = [1 - examples[5]["is_correct"][0]]
        return examples

    p3 = p3_copy(cache, tmp_path / "p3", "parquet", {
        ("super_glue_copa_choose", "test"): shift_choices,
        ("super_glue_copa_exercise_score_eval", "test"): flip_correct})
    code, lines = compare(capsys, cache, p3)
    assert code == 1
    shifted = row(lines, "super_glue_copa_choose", "test")
    assert shifted[2:4] == ["10", "9"] and shifted[4:6] != ["equal", "equal"]
    assert row(lines, "super_glue_copa_exercise_score_eval", "test")[2:] == [
        "20", "20", "equal", "equal", "equal", "1", "differ"]
    assert "  is_correct [example 5]: ours [" in "\n".join(lines)


def test_a_copy_of_p3_on_another_filesystem(cache, tmp_path, capsys):
    import fsspec

    p3 = p3_copy(cache, tmp_path / "p3", "data/parquet", {})
    memory = fsspec.filesystem("memory")
    for path in p3.rglob("*.parquet"):
        memory.pipe(f"/test_p3/{path.relative_to(p3)}", path.read_bytes())
    try:
        code, lines = compare(capsys, cache, "memory://test_p3")
    finally:
        memory.rm("/test_p3", recursive=True)
    assert (code, lines[-1]) == (0, "SAME: 12 task splits of 4 tasks compared: 12 equal, 0 "
                                    "differ only in surrounding whitespace (not a failure), 0 "
                                    "differ")


def test_progress_goes_to_the_stream_given(cache, tmp_path):
    p3 = p3_copy(cache, tmp_path / "p3", "tfrecord", {})
    stream = io.StringIO()
    comparison = compare_with_p3(str(cache), str(p3), progress_every=0, stream=stream)
    assert comparison.exit_code == 0
    lines = stream.getvalue().splitlines()
    assert lines[0].startswith("[p3data compare] 1 examples · ")
    assert "· task splits 0/12 · elapsed " in lines[0]
    assert re.fullmatch(r"\[p3data compare\] 192 examples · [\d,]+/s · task splits 12/12 · "
                        r"elapsed 0m\d\ds", lines[-1])


def test_bad_inputs_are_one_error_line(cache, tmp_path, capsys):
    p3 = p3_copy(cache, tmp_path / "p3", "tfrecord", {})
    parquet = p3_copy(cache, tmp_path / "parquet", "parquet", {})
    neither = tmp_path / "neither"
    (neither / "data" / "task").mkdir(parents=True)
    (neither / "data" / "task" / "train.json").write_text("{}")
    shard = p3 / "data" / TASKS[0] / shard_name("train", 0, 1)
    shard.write_bytes(shard.read_bytes()[:-5])
    broken = parquet / TASKS[0] / "train-00000-of-00001.parquet"
    broken.write_bytes(b"not parquet")
    lonely = tmp_path / "lonely" / "data" / TASKS[0]
    lonely.mkdir(parents=True)
    (lonely / "train.tfrecord-00001-of-00002").write_bytes(b"")
    other = tmp_path / "other" / "data" / "glue_mrpc_x"
    other.mkdir(parents=True)
    (other / "train.tfrecord-00000-of-00001").write_bytes(b"")
    for args, message in [
        ([tmp_path / "nothing", p3], f"{tmp_path / 'nothing'}: no such cache folder"),
        ([cache, tmp_path / "nothing"], f"{tmp_path / 'nothing'}: no such folder; give a copy"),
        ([cache, neither], f"{neither}: holds neither of P3's layouts: "),
        ([cache, p3], f"{shard}: record 10 is truncated"),
        ([cache, parquet], f"{broken}: not a readable parquet file ("),
        ([cache, lonely.parent.parent], f"{lonely}: split train has shards [1] of [2]: the copy "
                                        "is incomplete; download the missing shards"),
        ([cache, other.parent.parent], f"{other.parent.parent}: holds none of the 4 tasks of "),
    ]:
        assert main(["compare", *map(str, args)]) == 2
        out, err = capsys.readouterr()
        assert err.startswith(f"p3data: error: {message}"), err
        assert err.count("\n") == 1


def cache_counts(cache: Path) -> dict[tuple[str, str], int]:
    """The cache's own counts, as P3's table would list them."""
    counts = {}
    for task in TASKS:
        manifest = json.loads((cache / task / layout.MANIFEST).read_text())
        counts.update({(task, split): record["stats"]["examples"]
                       for split, record in manifest["splits"].items()})
    return counts


def test_counts_that_match_agree(cache):
    check = check_counts(str(cache), counts={**cache_counts(cache), ("other_task", "train"): 7})
    assert check.exit_code == 0
    assert check.lines() == [
        "P3's other 1 tasks (1 task splits) are not in this cache",
        "P3 counts: 12 task splits agree, 0 differ, 0 of P3's missing here, 0 not in P3 "
        "(0 by design)"]


def test_count_differences_and_splits_only_one_side_has(cache):
    counts = cache_counts(cache)
    counts["super_glue_copa_exercise", "train"] += 1
    counts["super_glue_copa_exercise", "challenge"] = 5
    for task in TASKS[:2] + TASKS[3:]:  # choose and its twin; exercise's twin
        for split in SPLITS:
            del counts[task, split]
    check = check_counts(str(cache), counts=counts)
    assert check.exit_code == 1
    assert [line.rstrip() for line in check.lines()] == [
        "Example counts that differ from P3's published counts:",
        "task                      split  ours  P3  difference",
        "super_glue_copa_exercise  train    11  12          -1",
        "P3 task splits this cache lacks (of the tasks it holds):",
        "  super_glue_copa_exercise/challenge: 5 examples in P3",
        "Task splits of this cache that P3 does not publish:",
        "  super_glue_copa_choose/test (10 examples)",
        "  super_glue_copa_choose/train (11 examples)",
        "  super_glue_copa_choose/validation (11 examples)",
        "  super_glue_copa_choose_score_eval/test (20 examples)",
        "  super_glue_copa_choose_score_eval/train (22 examples)",
        "  super_glue_copa_choose_score_eval/validation (22 examples)",
        "3 task splits are _score_eval twins of training tasks, which P3 leaves out by design",
        "P3 counts: 2 task splits agree, 1 differ, 1 of P3's missing here, 9 not in P3 "
        "(3 by design)"]


def test_an_empty_split_p3_does_not_list_agrees_and_a_held_one_differs(cache):
    counts = cache_counts(cache)
    del counts["super_glue_copa_choose", "test"]  # P3 lists no split with 0 examples
    check = check_counts(str(cache), counts=counts)
    assert [(r.task, r.split, r.ours, r.p3) for r in check.differ] == [
        ("super_glue_copa_choose", "test", 10, 0)]


def test_p3s_published_counts_ship_with_the_package():
    counts = p3_counts()
    assert len(counts) == 1843 and len({task for task, _ in counts}) == 660
    assert sum(counts.values()) == 122_127_848
    assert counts["super_glue_copa_exercise", "validation"] == 100


def test_verify_against_p3_counts(cache, capsys):
    code = main(["verify", str(cache), "--against-p3-counts"])
    lines = capsys.readouterr().out.splitlines()
    assert code == 1  # the samples are a few rows of each split
    assert lines[0] == "OK: 4 complete tasks checked, 0 unfinished, 0 problems"
    assert lines[1] == "Example counts that differ from P3's published counts:"
    assert row(lines, "super_glue_copa_exercise", "validation")[2:] == ["11", "100", "-89"]
    assert lines[-2:] == [
        "P3's other 656 tasks (1,831 task splits) are not in this cache",
        "P3 counts: 0 task splits agree, 12 differ, 0 of P3's missing here, 0 not in P3 "
        "(0 by design)"]
