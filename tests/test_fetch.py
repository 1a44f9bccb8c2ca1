"""`p3data fetch` snapshots datasets from an offline Hub tree (`helpers.hub`) into a mirror on a
local folder or `memory://`: the mirror serves exactly the rows the Hub store reads, records
what it holds, is skipped when intact, is checked by `--verify`, and builds the same cache as
the Hub tree does. A broken dataset fails alone, in `fetch` and in a mixture build."""

from __future__ import annotations

import hashlib
import json
import uuid
from datetime import datetime
from pathlib import Path
from types import SimpleNamespace

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from helpers.cache import tree
from helpers.hub import (
    COPA_COMMIT,
    TREC_ROWS,
    catalog_path,
    copa_rows,
    fetch,
    offline_hub,
    read_all,
    status_of,
)

from p3data import __version__, fs
from p3data.cli import main
from p3data.datasets.catalog import Catalog
from p3data.datasets.fetch import catalog_arrow_schema, snapshot
from p3data.datasets.hub import HubStore
from p3data.datasets.samples import generate_rows
from p3data.datasets.snapshot import SNAPSHOT, FileRecord, read_snapshot
from p3data.datasets.stores import MirrorStore
from p3data.format import layout
from p3data.format.verify import verify_task
from p3data.vocab import SAMPLE_VOCAB

TASKS = ["trec_what_category_best_describe", "super_glue_copa_exercise",
         "super_glue_copa_choose"]


@pytest.fixture
def hub(tmp_path, monkeypatch) -> SimpleNamespace:
    return offline_hub(tmp_path, monkeypatch)


@pytest.fixture(params=["local", "memory"])
def mirror(request, tmp_path) -> str:
    root = (str(tmp_path / "mirror") if request.param == "local"
            else f"memory://mirror-{uuid.uuid4().hex}")
    yield root
    fs.delete_tree(root)


def files_with_stamps(root: str) -> dict[str, tuple[bytes, object]]:
    """Every file of a mirror: its bytes and when it was written."""
    stamps = {}
    for path in fs.walk_files(root):
        info = fs.resolve(path)[0].info(fs.resolve(path)[1])
        stamps[path] = (fs.read_bytes(path), info.get("mtime", info.get("created")))
    return stamps


def test_fetch_writes_what_the_hub_store_reads_records_it_and_skips_it_when_intact(
        hub, mirror, capsys):
    code, lines = fetch(capsys, "trec", "super_glue/copa", "--to", mirror, "--hub-root",
                        hub.root)
    assert code == 0, lines
    assert status_of(lines, "trec") == status_of(lines, "super_glue/copa") == "fetched"
    assert lines[-1].startswith("2 datasets: 2 fetched, 0 already verified, 0 skipped, "
                                "0 failed; mirror ")

    for entry in (hub.trec, hub.copa):
        for split in entry.splits:
            served = read_all(MirrorStore(mirror, entry), split)
            assert served == read_all(HubStore(entry, hub_root=hub.root), split)
            assert len(served) == entry.splits[split]
    coarse = hub.trec.features["label-coarse"]["class_label"]
    trec_rows = read_all(MirrorStore(mirror, hub.trec), "train")
    assert [coarse[row["label-coarse"]] for row in trec_rows] == [c for _, c, _ in TREC_ROWS]
    with fs.open_read(f"{mirror}/super_glue/copa/train.parquet") as handle:
        schema = pq.read_schema(handle)
    assert schema.names == list(hub.copa.features)
    assert (schema.field("idx").type, schema.field("label").type) == (pa.int32(), pa.int64())

    record = read_snapshot(f"{mirror}/trec")
    assert (record.repo, record.revision, record.commit, record.commit_resolved) == (
        "CogComp/trec", "refs/convert/parquet", "refs/convert/parquet", False)
    assert record.source == hub.root and record.p3data_version == __version__
    assert record.features == hub.trec.features and record.labels == hub.trec.hub.labels
    assert record.columns == {"coarse_label": "label-coarse", "fine_label": "label-fine"}
    assert record.drift == ["row order: the 2021 order"]
    assert datetime.fromisoformat(record.fetched_at).tzinfo is not None
    train = record.splits["train"]
    source = Path(hub.root, "CogComp/trec/refs/convert/parquet/default/train/0000.parquet")
    assert train.source_files == {"default/train/0000.parquet": source.stat().st_size}
    data = fs.read_bytes(f"{mirror}/trec/train.parquet")
    assert train.files == {"train.parquet": FileRecord(
        len(data), hashlib.sha256(data).hexdigest(), len(TREC_ROWS))}
    assert {split: s.rows for split, s in record.splits.items()} == hub.trec.splits
    copa = read_snapshot(f"{mirror}/super_glue/copa")
    assert (copa.commit, copa.commit_resolved) == (COPA_COMMIT, True)

    before = files_with_stamps(mirror)
    code, lines = fetch(capsys, "trec", "super_glue/copa", "--to", mirror, "--hub-root",
                        hub.root)
    assert code == 0
    assert status_of(lines, "trec") == status_of(lines, "super_glue/copa") == "already verified"
    assert files_with_stamps(mirror) == before  # nothing rewritten


def test_verify_names_a_changed_file_and_one_the_record_does_not_know(hub, tmp_path, capsys):
    mirror = str(tmp_path / "mirror")
    assert fetch(capsys, "trec", "super_glue/copa", "--to", mirror, "--hub-root",
                 hub.root)[0] == 0
    assert fetch(capsys, "--verify", mirror) == (0, ["2 snapshots, 5 files: OK"])

    changed = tmp_path / "mirror" / "super_glue" / "copa" / "train.parquet"
    data = bytearray(changed.read_bytes())
    data[len(data) // 3] ^= 0xFF
    changed.write_bytes(bytes(data))
    code, lines = fetch(capsys, "--verify", mirror)
    assert (code, lines) == (1, [
        f"{changed}: sha256 differs from the snapshot record (the file changed); fetch it "
        f"again: p3data fetch super_glue/copa --to {mirror}",
        "2 snapshots, 5 files: FAILED: 1 problem"])

    stray = tmp_path / "mirror" / "trec" / "test.jsonl"
    stray.write_text('{"text": "stray"}\n')
    code, lines = fetch(capsys, "--verify", mirror)
    assert code == 1
    assert lines[1] == (f"{stray}: not in {mirror}/trec/{SNAPSHOT}, yet --data-dir reads it "
                        "too: move it out of the mirror")

    code, lines = fetch(capsys, "trec", "super_glue/copa", "--to", mirror, "--hub-root",
                        hub.root)  # a rerun refetches what does not match its record...
    assert code == 1
    assert status_of(lines, "super_glue/copa") == "fetched"
    assert status_of(lines, "trec").startswith(f"failed: trec/test: {stray}: rows p3data did "
                                               "not fetch")  # ...but never replaces rows
    stray.unlink()  # it did not write
    code, lines = fetch(capsys, "trec", "--to", mirror, "--hub-root", hub.root)
    assert (code, status_of(lines, "trec")) == (0, "already verified")
    assert fetch(capsys, "--verify", mirror)[0] == 0


@pytest.mark.parametrize("broken", ["drifted", "partial"])
def test_a_broken_dataset_fails_with_its_reason_and_the_other_is_fetched(
        hub, tmp_path, capsys, broken):
    if broken == "drifted":
        hub.configure(coarse_map=False)
        reason = ("trec/test: label-coarse names [ABBR, ENTY, DESC, HUM, LOC, NUM] != catalog "
                  "[DESC, ENTY, ABBR, HUM, NUM, LOC]; declare a label map")
    else:
        export = Path(hub.root, "CogComp/trec/refs/convert/parquet/default")
        (export / "train").rename(export / "partial-train")
        hub.configure()
        reason = ("trec/train: default/partial-train/0000.parquet is a partial export (a "
                  "partial-* folder holds the first rows of a split too big to convert); pin "
                  "the complete files, or build a mirror from the dataset's source")
        catalog = catalog_path(tmp_path, "trec")
        catalog.write_text(catalog.read_text().replace("default/train/", "default/*train/"))
    mirror = tmp_path / "mirror"
    code, lines = fetch(capsys, "trec", "super_glue/copa", "--to", str(mirror), "--hub-root",
                        hub.root)
    assert code == 1
    assert status_of(lines, "trec") == f"failed: {reason}"
    assert status_of(lines, "super_glue/copa") == "fetched"
    assert lines[-1].startswith("2 datasets: 1 fetched, 0 already verified, 0 skipped, 1 failed")
    assert not (mirror / "trec").exists()  # every split is checked before any is written


def test_a_big_split_is_cut_into_files_and_a_refetch_leaves_no_stale_file(hub, tmp_path):
    mirror = str(tmp_path / "mirror")
    entry = hub.copa
    source = sum(HubStore(entry, hub_root=hub.root).files("train").values())
    small = snapshot(entry, mirror, hub_root=hub.root, row_group_rows=2,
                     file_bytes=-(-source // 3))  # three files' worth
    files = small.record.splits["train"].files
    assert list(files) == [f"train-0000{i}-of-00003.parquet" for i in range(3)]
    assert [f.rows for f in files.values()] == [4, 4, 3]
    folder = Path(mirror, "super_glue", "copa")
    assert [pq.read_metadata(folder / name).num_row_groups for name in files] == [2, 2, 2]
    assert read_all(MirrorStore(mirror, entry), "train") == copa_rows("train")
    assert not snapshot(entry, mirror, hub_root=hub.root).fetched  # intact: kept as it is

    again = snapshot(entry, mirror, hub_root=hub.root, force=True)
    assert again.fetched and list(again.record.splits["train"].files) == ["train.parquet"]
    assert sorted(p.name for p in folder.iterdir() if p.name.startswith("train")) == [
        "train.parquet"]
    assert read_all(MirrorStore(mirror, entry), "train") == copa_rows("train")


def test_the_mirror_schema_holds_the_rows_of_every_catalog_entry():
    """Rows shaped as each catalog entry declares go through the mirror's schema unchanged."""
    for entry in Catalog.load():
        schema = catalog_arrow_schema(entry.features)
        for split in entry.splits:
            rows = list(generate_rows(entry, split, 3, 0))
            assert pa.Table.from_pylist(rows, schema).to_pylist() == rows, entry.name


def cache(out: Path, *source: str) -> int:
    tasks = [arg for task in TASKS for arg in ("--tasks", task)]
    return main(["cache", *tasks, "--output-dir", str(out), "--vocab", str(SAMPLE_VOCAB),
                 "--progress-every", "100", *source])


def test_a_cache_from_the_fetched_mirror_equals_the_one_from_the_hub(hub, tmp_path, capfd):
    capsys = capfd  # the build's progress lines go to the console's file descriptor
    mirror = f"memory://mirror-{uuid.uuid4().hex}"
    try:
        assert fetch(capsys, "--tasks", "|".join(TASKS), "--to", mirror, "--hub-root",
                     hub.root)[0] == 0
        assert cache(tmp_path / "from_mirror", "--data-dir", mirror) == 0, capsys.readouterr()
        printed = capsys.readouterr()
    finally:
        fs.delete_tree(mirror)
    assert cache(tmp_path / "from_hub", "--hub-root", hub.root) == 0, capsys.readouterr()
    shards = [tree(tmp_path / name) for name in ("from_mirror", "from_hub")]
    shards = [{k: v for k, v in built.items() if ".tfrecord-" in k} for built in shards]
    assert len(shards[0]) >= 2 * len(TASKS) and shards[0] == shards[1]
    # trec's accepted drift travels with the snapshot: shown, and in both builds' manifests
    assert "trec/train: accepted drift from T0's rows: row order: the 2021 order" in (
        printed.out + printed.err)
    trec = next(name for name in TASKS if name.startswith("trec"))
    for name in ("from_mirror", "from_hub"):
        manifest = json.loads((tmp_path / name / trec / "manifest.json").read_text())
        assert manifest["sources"]["train"]["drift"] == ["row order: the 2021 order"]


def test_one_broken_dataset_in_a_mixture_build_fails_only_its_tasks(hub, tmp_path, capsys):
    hub.configure(coarse_map=False)
    out = tmp_path / "cache"
    assert cache(out, "--hub-root", hub.root) == 1
    printed = capsys.readouterr().out.splitlines()
    assert [line for line in printed if line.startswith("FAILED ")] == [
        "FAILED trec_what_category_best_describe: trec/test: label-coarse names [ABBR, ENTY, "
        "DESC, HUM, LOC, NUM] != catalog [DESC, ENTY, ABBR, HUM, NUM, LOC]; declare a label map"]
    assert not (out / TASKS[0]).exists()
    for task in TASKS[1:]:
        assert (out / task / layout.COMPLETED).exists()
        assert verify_task(str(out / task)) == []
