"""Mirrors on any filesystem (`memory://` in this process, `file://` URLs across processes) and
parquet splits read by row groups: the cache is the same whatever the rows' format and home."""

from __future__ import annotations

import hashlib
import json
import pickle
import shutil
import uuid
from pathlib import Path

import fsspec
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from helpers.cache import run_cache, tree

from p3data import fs
from p3data.cli import main
from p3data.datasets.catalog import Catalog, DatasetEntry
from p3data.datasets.errors import DataNotFoundError, RowFileError, SourceError
from p3data.datasets.parquet import ParquetRows
from p3data.datasets.rows import read_jsonl
from p3data.datasets.samples import SAMPLES_DIR
from p3data.datasets.shards import Shard
from p3data.datasets.stores import MirrorStore, open_store
from p3data.vocab import SAMPLE_VOCAB

COPA = SAMPLES_DIR / "super_glue" / "copa"
TASK = "super_glue_copa_exercise"
MILLION = 1_000_000
GROUP_ROWS = 10_000


@pytest.fixture(scope="module")
def catalog_copa() -> DatasetEntry:
    return Catalog.load().get("super_glue", "copa")


@pytest.fixture
def memory_root():
    """A fresh folder on fsspec's in-process memory filesystem, removed afterwards."""
    root = f"memory://mirror-{uuid.uuid4().hex}"
    yield root
    fs.delete_tree(root)


def put(url: str, data: bytes) -> None:
    with fsspec.open(url, "wb") as handle:
        handle.write(data)


def parquet_bytes(table: pa.Table, **options) -> bytes:
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, **options)
    return sink.getvalue().to_pybytes()


def copa_parquet_mirror(root: str, *, row_group_size: int = 3) -> None:
    """COPA's sample rows as parquet files, small row groups: several shards per split."""
    for path in sorted(COPA.glob("*.jsonl")):
        table = pa.Table.from_pylist(read_jsonl(path))
        put(f"{root}/super_glue/copa/{path.stem}.parquet",
            parquet_bytes(table, row_group_size=row_group_size))


def tfrecords(root: Path) -> dict[str, bytes]:
    return {name: data for name, data in tree(root).items() if ".tfrecord" in name}


def test_a_memory_mirror_serves_jsonl_and_parquet_rows(memory_root, catalog_copa):
    rows = read_jsonl(COPA / "validation.jsonl")
    folder = f"{memory_root}/super_glue/copa"
    put(f"{folder}/validation.jsonl", (COPA / "validation.jsonl").read_bytes())
    put(f"{folder}/train.parquet", parquet_bytes(pa.Table.from_pylist(rows), row_group_size=4))
    store = open_store(catalog_copa, memory_root, rows_per_shard=5)
    assert isinstance(store, MirrorStore)
    for split, sizes in (("validation", [5, 5, 1]), ("train", [4, 4, 3])):  # lines / groups
        shards = store.list_shards(split)
        assert [s.stop - s.start for s in shards] == sizes
        shipped = pickle.loads(pickle.dumps(store))
        assert [row for s in shards for row in shipped.read(split, s)] == rows
    data = (COPA / "validation.jsonl").read_bytes()
    assert store.identity("validation") == {"files": {"validation.jsonl": {
        "size": len(data), "sha256": hashlib.sha256(data).hexdigest()}}, "drift": []}


def test_a_missing_split_names_the_mirror_url(memory_root, catalog_copa):
    store = MirrorStore(memory_root, catalog_copa)
    with pytest.raises(DataNotFoundError, match=r"no rows for split 'test' in the mirror; expected "
                                        rf"{memory_root}/super_glue/copa/test\.parquet or "):
        store.list_shards("test")


def build_in_process(out: Path, data_dir: str) -> dict[str, bytes]:
    """`p3data cache` of one COPA task from `data_dir`, in this process; its shards' bytes."""
    assert main(["cache", "--tasks", TASK, "--output-dir", str(out), "--vocab",
                 str(SAMPLE_VOCAB), "--data-dir", data_dir, "--rows-per-shard", "4",
                 "--progress-every", "100"]) == 0
    return tfrecords(out)


@pytest.fixture(scope="module")
def from_jsonl(tmp_path_factory) -> dict[str, bytes]:
    """The reference: the cache built from the sample rows as JSON Lines on local disk."""
    root = tmp_path_factory.mktemp("jsonl")
    shutil.copytree(COPA, root / "mirror" / "super_glue" / "copa")
    return build_in_process(root / "cache", str(root / "mirror"))


def test_cache_from_parquet_in_memory_equals_the_one_from_jsonl(tmp_path, memory_root,
                                                                 from_jsonl):
    copa_parquet_mirror(memory_root)
    assert from_jsonl and build_in_process(tmp_path / "cache", memory_root) == from_jsonl


def test_cache_from_a_file_url_in_another_process_equals_the_one_from_jsonl(tmp_path,
                                                                            from_jsonl):
    on_disk = tmp_path / "parquet"
    copa_parquet_mirror(on_disk.as_uri())
    run_cache(tmp_path / "cache", "--tasks", TASK, data_dir=on_disk.as_uri())
    assert tfrecords(tmp_path / "cache") == from_jsonl


def million_rows(path: Path) -> pa.Table:
    table = pa.table({"number": pa.array(range(MILLION), pa.int64()),
                      "word": pa.array([f"w{i % 997}" for i in range(MILLION)])})
    pq.write_table(table, path, row_group_size=GROUP_ROWS)
    return table


def ruin_row_groups_except(path: Path, keep: range) -> None:
    """Overwrite the data of every row group outside `keep` with zeros (the footer stays)."""
    metadata = pq.read_metadata(path)
    data = bytearray(path.read_bytes())
    for group in range(metadata.num_row_groups):
        if group in keep:
            continue
        for column in range(metadata.num_columns):
            chunk = metadata.row_group(group).column(column)
            start = chunk.dictionary_page_offset or chunk.data_page_offset
            data[start: start + chunk.total_compressed_size] = bytes(chunk.total_compressed_size)
    path.write_bytes(bytes(data))


def test_a_million_row_split_is_read_by_row_groups_without_rescanning(tmp_path, catalog_copa):
    folder = tmp_path / "super_glue" / "copa"
    folder.mkdir(parents=True)
    path = folder / "train.parquet"
    table = million_rows(path)
    store = MirrorStore(tmp_path, catalog_copa, rows_per_shard=50_000)
    shards = store.list_shards("train")
    assert len(shards) == MILLION // 50_000
    assert [(s.start, s.stop) for s in shards] == [
        (i, i + 50_000) for i in range(0, MILLION, 50_000)]
    numbers = [row["number"] for s in shards for row in store.read("train", s)]
    assert numbers == list(range(MILLION))  # every row once, in order

    # A shard's rows come from its own row groups only: the others may hold anything.
    middle = shards[7]
    own = range(middle.start // GROUP_ROWS, middle.stop // GROUP_ROWS)
    ruin_row_groups_except(path, own)
    rows = list(store.read("train", middle))
    assert rows == table.slice(middle.start, middle.stop - middle.start).to_pylist()
    with pytest.raises(RowFileError, match=r"cannot decode the rows from row 300,000 on"):
        list(store.read("train", shards[6]))


def test_rows_inside_row_groups_are_read_exactly(tmp_path):
    """A shard need not fall on row-group boundaries (rows [start, stop) all the same)."""
    path = tmp_path / "rows.parquet"
    pq.write_table(pa.table({"n": list(range(25))}), path, row_group_size=10)
    rows = ParquetRows(str(path), "toy train")
    for start, stop in ((0, 25), (3, 7), (8, 22), (20, 25), (10, 10)):
        assert [r["n"] for t in rows.tables(start, stop) for r in t.to_pylist()] == list(
            range(start, stop))
    store = MirrorStore(tmp_path, DatasetEntry("toy", None, {"train": 25}, {"n": "int64"}))
    (tmp_path / "toy").mkdir()
    path.rename(tmp_path / "toy" / "train.parquet")
    shard = Shard("train.parquet[5:15]", 5, 15, path=str(tmp_path / "toy" / "train.parquet"))
    assert [r["n"] for r in store.read("train", shard)] == list(range(5, 15))


def write_rows(path: Path, rows: list[dict]) -> None:
    if path.suffix == ".parquet":
        pq.write_table(pa.Table.from_pylist(rows), path)
    else:
        path.write_text("".join(json.dumps(row) + "\n" for row in rows))


@pytest.mark.parametrize("names", [
    ["train.jsonl", "train.parquet"],
    ["train-00000-of-00001.jsonl", "train.jsonl"],
    ["train-00000-of-00003.jsonl", "train-00002-of-00003.jsonl"],
    ["train-00000-of-00002.jsonl", "train-00001-of-00002.parquet"],
], ids=["two-formats", "a-copy", "a-set-missing-one", "a-set-of-two-formats"])
def test_a_hand_made_mirror_reading_a_split_ambiguously_is_refused(tmp_path, catalog_copa,
                                                                   names):
    folder = tmp_path / "super_glue" / "copa"
    folder.mkdir(parents=True)
    for name in names:
        write_rows(folder / name, read_jsonl(COPA / "train.jsonl"))
    with pytest.raises(SourceError) as info:
        MirrorStore(tmp_path, catalog_copa).list_shards("train")
    assert str(info.value) == (
        f"super_glue/copa/train: {folder}: train would be read from {', '.join(names)}; a "
        "split is one train.jsonl or train.parquet, or every file of one "
        "train-NNNNN-of-MMMMM set: move the others out of the mirror")


def test_a_hand_made_split_in_a_set_of_files_is_read_in_order(tmp_path, catalog_copa):
    """No snapshot record: any number of rows is served (fewer than the catalog's here)."""
    folder = tmp_path / "super_glue" / "copa"
    folder.mkdir(parents=True)
    rows = read_jsonl(COPA / "train.jsonl")
    write_rows(folder / "train-00001-of-00002.jsonl", rows[4:])
    write_rows(folder / "train-00000-of-00002.jsonl", rows[:4])
    store = MirrorStore(tmp_path, catalog_copa)
    assert [row for s in store.list_shards("train") for row in store.read("train", s)] == rows
    assert len(rows) < catalog_copa.splits["train"]
