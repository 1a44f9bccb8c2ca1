"""`p3data.read`: a cache's examples without TensorFlow, equal to what stock seqio reads
(`use_cached=True`), in order and by number; corrupt records located; any fsspec filesystem;
caches written by stock seqio and P3's layout."""

from __future__ import annotations

import json
import pickle
import re
import shutil
import subprocess
import sys
from pathlib import Path

import fsspec
import numpy as np
import pytest
from helpers.cache import run_cache

from p3data.errors import NotFoundError, P3DataError
from p3data.format.index import index_for
from p3data.format.tfrecord import CorruptRecordError
from p3data.read import open_cache, pack
from p3data.read.adapters import tf_dataset

pytestmark = pytest.mark.usefixtures("samples_in_seqio")

CHOICES, TWIN, PLAIN = ("super_glue_copa_exercise", "super_glue_copa_exercise_score_eval",
                        "squad_v2_Questions_with_Context")
TASKS = [CHOICES, TWIN, PLAIN]
SHARDS = 3

READ_ALL = """
import pickle, sys
from p3data.read import open_cache
cache = open_cache(sys.argv[1])
read = {(task, split): (list(cache.split(task, split)),
                        [cache.split(task, split)[i] for i in range(len(cache.split(task, split)))])
        for task in cache.tasks for split in cache.splits(task)}
heavy = sorted(m for m in sys.modules if m.split(".")[0] in ("tensorflow", "seqio", "apache_beam"))
pickle.dump((read, heavy), open(sys.argv[2], "wb"))
"""


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """Three tasks (with answer choices, its `_score_eval` twin, without choices), 3 shards."""
    out = tmp_path_factory.mktemp("cache")
    run_cache(out, "--tasks", "|".join(TASKS), "--shards", str(SHARDS), "--rows-per-shard", "4")
    return out


@pytest.fixture(scope="module")
def read_back(built, tmp_path_factory):
    """Every example of every split, read in order and by number, in a process of its own;
    and the TensorFlow, seqio or Beam modules that process imported."""
    dump = tmp_path_factory.mktemp("read") / "read.pickle"
    subprocess.run([sys.executable, "-c", READ_ALL, str(built), str(dump)], check=True,
                   timeout=300)
    return pickle.loads(dump.read_bytes())


def stock(task: str, split: str, cache: Path, shard: tuple[int, int] | None = None) -> list:
    """The examples stock seqio reads from the cache (one shard of it, as a host would)."""
    import seqio

    provider = seqio.get_mixture_or_task(task)
    provider._cache_dir = str(cache / task)
    dataset = provider.get_dataset(
        None, split=split, shuffle=False, use_cached=True, try_in_mem_cache=False,
        shard_info=seqio.ShardInfo(*shard) if shard else None)
    return list(dataset.as_numpy_iterator())


def assert_equal_examples(ours: list[dict], theirs: list[dict]) -> None:
    """Equal in order, every feature: values, dtypes; seqio's bytes are our str."""
    assert len(ours) == len(theirs)
    for number, (a, b) in enumerate(zip(ours, theirs, strict=True)):
        assert a.keys() == b.keys(), number
        for name, value in b.items():
            where = f"example {number}, {name}"
            if isinstance(value, bytes):
                assert a[name] == value.decode(), where
            elif value.dtype == object:
                assert a[name] == [text.decode() for text in value], where
            else:
                assert np.asarray(a[name]).dtype == value.dtype, where
                assert np.shape(a[name]) == value.shape, where
                np.testing.assert_array_equal(a[name], value, err_msg=where)


def test_the_reader_imports_no_tensorflow_seqio_or_beam(read_back):
    _, heavy = read_back
    assert heavy == []


def test_every_split_reads_like_stock_seqio_shard_by_shard(built, read_back):
    read, _ = read_back
    cache = open_cache(str(built))
    assert cache.tasks == sorted(TASKS)
    assert {(task, split) for task, split in read} == {
        (task, split) for task in TASKS for split in cache.splits(task)}
    for (task, split), (in_order, _) in read.items():
        split_reader = cache.split(task, split)
        assert len(in_order) == len(split_reader) >= SHARDS, (task, split)
        shards = [stock(task, split, built, (k, SHARDS)) for k in range(SHARDS)]
        assert_equal_examples(in_order, [e for shard in shards for e in shard])
        for k in range(SHARDS):
            assert_equal_examples(list(split_reader.examples(shard=(k, SHARDS))), shards[k])
    features = cache.split(TWIN, "validation").features
    assert {name: (f.dtype, f.shape) for name, f in features.items()} == {
        "idx": ("int32", (None,)), "inputs": ("int32", (None,)), "is_correct": ("bool", ()),
        "inputs_pretokenized": ("string", ()), "targets": ("int32", (None,)),
        "targets_pretokenized": ("string", ()), "weight": ("float32", ())}


def test_seqio_lists_only_the_shards_beside_the_indexes(built):
    """The index files match none of seqio's patterns: its own listing is the shards."""
    import seqio

    provider = seqio.get_mixture_or_task(CHOICES)
    provider._cache_dir = str(built / CHOICES)
    split = open_cache(str(built)).split(CHOICES, "train")
    assert all(Path(index_for(shard)).exists() for shard in split.shards)
    assert provider._get_cached_source("train").list_shards("train") == split.shards
    assert_equal_examples(list(split), [example for k in range(SHARDS)
                                        for example in stock(CHOICES, "train", built, (k, SHARDS))])


def test_by_number_equals_in_order_with_and_without_indexes(built, read_back, tmp_path):
    read, _ = read_back
    for in_order, by_number in read.values():
        assert_same(in_order, by_number)
    bare = tmp_path / "bare"
    shutil.copytree(built, bare)
    for index in bare.glob("*/index.*"):
        index.unlink()
    cache, indexed = open_cache(str(bare)), open_cache(str(built))
    for task in TASKS:
        for split in cache.splits(task):
            scanned, listed = cache.split(task, split), indexed.split(task, split)
            for k in range(SHARDS):
                np.testing.assert_array_equal(scanned.records(k).offsets, listed.records(k).offsets)
            assert_same([scanned[i] for i in range(len(scanned))], read[task, split][0])
            assert_same([scanned[-1]], read[task, split][0][-1:])


def test_several_by_number_and_a_pickled_split(built, read_back):
    read, _ = read_back
    split = open_cache(str(built)).split(TWIN, "validation")
    numbers = [5, 0, len(split) - 1, 5, -2]
    expected = [read[TWIN, "validation"][0][number] for number in numbers]
    assert_same(split.__getitems__(numbers), expected)
    assert_same(pickle.loads(pickle.dumps(split)).__getitems__(numbers), expected)


def assert_same(a: list[dict], b: list[dict]) -> None:
    assert len(a) == len(b)
    for x, y in zip(a, b, strict=True):
        assert x.keys() == y.keys()
        for name in x:
            np.testing.assert_array_equal(x[name], y[name])


def test_selected_features_and_bad_requests(built):
    split = open_cache(str(built)).split(CHOICES, "validation")
    first = next(split.examples(["targets", "answer_choices"]))
    assert set(first) == {"targets", "answer_choices"} and first["targets"].dtype == np.int32
    with pytest.raises(NotFoundError, match="no feature 'idx'; it has "):
        next(split.examples(["idx"]))
    with pytest.raises(IndexError):
        split[len(split)]
    with pytest.raises(P3DataError, match="cannot read shard 0 of 4: the split has 3 output"):
        next(split.examples(shard=(0, 4)))
    with pytest.raises(NotFoundError, match="no split 'dev'; it has test, train, validation"):
        open_cache(str(built)).split(CHOICES, "dev")


def test_an_empty_split_yields_no_examples(tmp_path):
    """An empty split's `info.<split>.json` is `{}`, as seqio writes it: asking it for token
    features (as a packer or trainer over every split does) yields nothing, not an error."""
    task = "adversarial_qa_dbert_based_on"  # its sample test rows have no answers: T0 drops them
    run_cache(tmp_path, "--tasks", task)
    assert (tmp_path / task / "info.test.json").read_text() == "{}\n"
    empty = open_cache(str(tmp_path)).split(task, "test")
    assert len(empty) == 0 and empty.features == {}
    assert list(empty.examples(["inputs", "targets"])) == [] == list(empty)
    assert list(empty.examples(["inputs"], shard=(0, 1))) == []
    assert list(pack(empty.examples(["inputs", "targets"]))) == []
    dataset = tf_dataset(empty, features=["inputs", "targets"])
    assert list(dataset) == [] and dataset.element_spec["targets"].dtype.name == "int32"
    assert list(tf_dataset(empty).padded_batch(2)) == []
    with pytest.raises(NotFoundError, match="no feature 'idx'; it has inputs"):
        next(open_cache(str(tmp_path)).split(task, "train").examples(["inputs", "idx"]))


@pytest.fixture
def copy(built, tmp_path) -> Path:
    shutil.copytree(built / TWIN, tmp_path / TWIN)
    return tmp_path


def damaged(copy: Path, change) -> tuple[str, np.ndarray, list]:
    """Shard 1 of the twin's validation split, changed by `change(bytes, offsets)`."""
    cache = open_cache(str(copy))
    split = cache.split(TWIN, "validation")
    shard, offsets = Path(split.shards[1]), split.records(1).offsets
    shard.write_bytes(change(shard.read_bytes(), offsets))
    return str(shard), offsets, [split.records(0).offsets]


@pytest.mark.parametrize("where, message", [
    (lambda offsets: int(offsets[2]) + 20, "record 2 payload fails its CRC"),
    (lambda offsets: int(offsets[3]) + 1, "record 3 length fails its CRC"),
])
def test_a_flipped_byte_is_reported_with_its_file_and_offset(copy, where, message):
    def flip(data: bytes, offsets: np.ndarray) -> bytes:
        at = where(offsets)
        return data[:at] + bytes([data[at] ^ 0x10]) + data[at + 1:]

    shard, offsets, _ = damaged(copy, flip)
    record = int(message.split()[1])
    expected = f"{shard}: {message} (it starts at byte {offsets[record]})"
    split = open_cache(str(copy)).split(TWIN, "validation")
    with pytest.raises(CorruptRecordError) as err:
        list(split)
    assert str(err.value) == expected
    first_of_shard = len(split.records(0))
    with pytest.raises(CorruptRecordError) as err:
        split[first_of_shard + record]
    assert str(err.value) == expected


def test_a_truncated_shard_is_reported_with_its_file_and_offset(copy):
    shard, offsets, _ = damaged(copy, lambda data, offsets: data[:-3])
    last = len(offsets) - 2
    split = open_cache(str(copy)).split(TWIN, "validation")
    with pytest.raises(CorruptRecordError) as err:
        list(split)
    assert str(err.value).startswith(f"{shard}: record {last} is truncated (its record starts "
                                     f"at byte {offsets[last]}; ")
    with pytest.raises(P3DataError, match=re.escape(
            f"does not describe {shard} ({len(Path(shard).read_bytes()):,} bytes): the shard or "
            "its index changed since it was indexed; check the cache with p3data verify")):
        split[len(split) - 1]  # not "rebuild the index": that would not mend the shard


def test_reads_from_memory_filesystem(built, read_back):
    memory = fsspec.filesystem("memory")
    for path in built.rglob("*"):
        if path.is_file():
            memory.pipe_file(f"/h14cache/{path.relative_to(built)}", path.read_bytes())
    try:
        cache = open_cache("memory://h14cache")
        assert cache.tasks == sorted(TASKS)
        read, _ = read_back
        for task in TASKS:
            for split in cache.splits(task):
                split_reader = cache.split(task, split)
                assert split_reader.shards[0].startswith("memory://")
                assert_same(list(split_reader.examples(workers=3)), read[task, split][0])
                assert_same([split_reader[len(split_reader) - 2]], read[task, split][0][-2:-1])
    finally:
        memory.rm("/h14cache", recursive=True)


def test_only_complete_tasks_are_read(built, tmp_path):
    shutil.copytree(built, tmp_path / "cache")
    (tmp_path / "cache" / PLAIN / "COMPLETED").unlink()
    cache = open_cache(str(tmp_path / "cache"))
    assert (cache.tasks, cache.unfinished) == ([CHOICES, TWIN], [PLAIN])
    with pytest.raises(NotFoundError) as err:
        cache.split(PLAIN, "train")
    assert str(err.value) == (f"{tmp_path / 'cache' / PLAIN}: not complete (no COMPLETED: a run "
                              "is writing it or crashed); rerun p3data cache to finish it")
    with pytest.raises(NotFoundError, match="no complete task 'nosuch'; it has "):
        cache.split("nosuch", "train")
    with pytest.raises(P3DataError) as err:
        open_cache(str(tmp_path / "cache" / PLAIN))
    assert str(err.value) == (f"{tmp_path / 'cache' / PLAIN}: no COMPLETED, so not a complete "
                              "task (a run is writing it or crashed; seqio would not read it "
                              "either)")


def test_a_manifest_of_another_format_version_is_refused(built, tmp_path):
    shutil.copytree(built / CHOICES, tmp_path / CHOICES)
    manifest = tmp_path / CHOICES / "manifest.json"
    manifest.write_text(json.dumps({**json.loads(manifest.read_text()), "format_version": 99}))
    with pytest.raises(P3DataError, match="format version 99 .* upgrade p3data"):
        open_cache(str(tmp_path)).split(CHOICES, "train")


def test_p3_layout_without_manifests(built, tmp_path):
    """P3's own folders: data/<task>/ as seqio wrote them, no manifest.json, no index."""
    folder = tmp_path / "data" / TWIN
    shutil.copytree(built / TWIN, folder)
    for path in [folder / "manifest.json", *folder.glob("index.*")]:
        path.unlink()
    cache = open_cache(str(tmp_path))
    assert cache.tasks == [TWIN] and cache.manifest(TWIN) is None
    split = cache.split(TWIN, "validation")
    assert split.shards == [str(folder / f"validation.tfrecord-0000{k}-of-00003")
                            for k in range(SHARDS)]
    assert_same([split[i] for i in range(len(split))], list(open_cache(str(built)).split(
        TWIN, "validation")))
    for k in range(SHARDS):
        assert_equal_examples(list(split.examples(shard=(k, SHARDS))),
                              stock(TWIN, "validation", tmp_path / "data", (k, SHARDS)))


@pytest.mark.parametrize("indexed", [True, False])
def test_a_shard_cut_at_a_record_boundary_is_an_error_naming_it(copy, indexed):
    """A shard missing its last records is sound framing: the counts must tell. With its
    index the shard is named as it ends; without, the split's total is checked at its end.
    (Stock seqio reads such a shard without a word.)"""
    shard, offsets, _ = damaged(copy, lambda data, offsets: data[:int(offsets[-2])])
    if not indexed:
        for index in (copy / TWIN).glob("index.*"):
            index.unlink()
    split = open_cache(str(copy)).split(TWIN, "validation")
    where = shard if indexed else f"{copy / TWIN}: split validation"
    assert len(stock(TWIN, "validation", copy)) == len(split) - 1  # seqio: not a word
    with pytest.raises(P3DataError, match=re.escape(where)) as err:
        list(split)
    assert "check the cache with p3data verify" in str(err.value)
    assert "\n" not in str(err.value)
    if indexed:
        with pytest.raises(P3DataError, match=re.escape(shard)) as err:
            next(split.examples(shard=(1, SHARDS)))  # one host's share is checked too
    with pytest.raises(P3DataError, match="check the cache with p3data verify"):
        split[len(split) - 1]


def test_a_shard_with_an_extra_record_is_an_error(copy):
    shard, offsets, _ = damaged(copy, lambda data, offsets: data + data[:int(offsets[1])])
    split = open_cache(str(copy)).split(TWIN, "validation")
    with pytest.raises(P3DataError, match=re.escape(shard)):
        list(split)
