"""Unreadable source files fail with one line naming the dataset split, file, place and reason."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from p3data.builder.jobs import CacheConfig
from p3data.builder.planning import build_plan
from p3data.cli import main
from p3data.datasets.catalog import Catalog
from p3data.datasets.errors import DataNotFoundError, RowFileError, SourceError
from p3data.datasets.rows import read_jsonl
from p3data.datasets.samples import SAMPLES_DIR
from p3data.datasets.shards import Shard
from p3data.datasets.stores import ManualStore, MirrorStore
from p3data.taskset import load_definitions
from p3data.vocab import SAMPLE_VOCAB

COPA_ROWS = SAMPLES_DIR / "super_glue" / "copa" / "validation.jsonl"
NOT_PARQUET = "not a parquet file (or truncated/corrupt): "


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return Catalog.load()


@pytest.fixture
def copa(tmp_path, catalog) -> MirrorStore:
    (tmp_path / "super_glue" / "copa").mkdir(parents=True)
    return MirrorStore(tmp_path, catalog.get("super_glue", "copa"), rows_per_shard=4)


def read_all(store, split: str) -> list[dict]:
    return [row for shard in store.list_shards(split) for row in store.read(split, shard)]


def one_line_error(call, kind: type[SourceError] = RowFileError) -> str:
    with pytest.raises(kind) as info:
        call()
    message = str(info.value)
    assert "\n" not in message and info.value.__cause__ is not None
    return message


def write_parquet(path: Path, rows: list[dict], **options) -> bytes:
    pq.write_table(pa.Table.from_pylist(rows), path, **options)
    return path.read_bytes()


def test_jsonl_with_a_bad_byte_names_line_and_byte_when_planned_and_read(copa):
    lines = COPA_ROWS.read_bytes().splitlines(keepends=True)
    lines[6] = lines[6].replace(b"The", b"Th\xff", 1)
    path = Path(copa.folder) / "validation.jsonl"
    path.write_bytes(b"".join(lines))
    where = len(b"".join(lines[:6])) + lines[6].index(b"\xff")
    expected = (f"super_glue/copa validation: {path}:7: not UTF-8 at byte {where:,} "
                "(invalid start byte 0xff)")
    assert one_line_error(lambda: copa.list_shards("validation")) == expected
    shard = Shard("validation.jsonl[4:8]", 4, 8, path=str(path))
    assert one_line_error(lambda: list(copa.read("validation", shard))) == expected


def test_invalid_json_and_non_objects_keep_their_messages_with_the_byte(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_text('{"premise": "é"}\n\n{"premise": é}\n')
    where = path.read_bytes().index("é}".encode())
    with pytest.raises(RowFileError, match=rf"^{path}:3: not valid JSON: Expecting value "
                                           rf"\(byte {where}\)$"):
        read_jsonl(path)
    path.write_text('{"premise": "a"}\n[1, 2]\n')
    with pytest.raises(RowFileError, match=rf"^{path}:2: expected a JSON object, got \[1, 2\]$"):
        read_jsonl(path)


def test_line_endings_and_blank_lines_give_the_rows_text_mode_gives(copa):
    """CRLF, a lone CR and blank lines: same rows and numbering as reading in text mode."""
    rows = read_jsonl(COPA_ROWS)
    text = "\r\n".join(json.dumps(row) for row in rows[:5]) + "\r\n\r\n  \n"
    text += "\r".join(json.dumps(row) for row in rows[5:]) + "\n"
    path = Path(copa.folder) / "validation.jsonl"
    path.write_bytes(text.encode())
    with path.open(encoding="utf-8") as handle:
        reference = [json.loads(line) for line in handle if line.strip()]
    assert reference == rows
    assert [s.stop - s.start for s in copa.list_shards("validation")] == [4, 4, len(rows) - 8]
    assert read_all(copa, "validation") == rows


def test_parquet_rows_are_the_jsonl_rows(copa):
    rows = read_jsonl(COPA_ROWS)
    write_parquet(Path(copa.folder) / "validation.parquet", rows)
    assert read_all(copa, "validation") == rows


@pytest.mark.parametrize(("damage", "arrow_says"), [
    (lambda data: data[: len(data) - 100], "Parquet magic bytes not found in footer"),
    (lambda data: b"premise,choice1\nnot,parquet\n", "Parquet magic bytes not found in footer"),
    (lambda data: b"", "Parquet file size is 0 bytes"),
], ids=["truncated", "fake", "empty"])
def test_broken_parquet_fails_when_planned_naming_the_file(copa, damage, arrow_says):
    path = Path(copa.folder) / "validation.parquet"
    path.write_bytes(damage(write_parquet(path, read_jsonl(COPA_ROWS))))
    message = one_line_error(lambda: copa.list_shards("validation"))
    assert message.startswith(f"super_glue/copa validation: {path}: {NOT_PARQUET}{arrow_says}")
    shard = Shard("validation.parquet[0:4]", 0, 4, path=str(path))
    assert one_line_error(lambda: list(copa.read("validation", shard))) == message


def test_corrupt_parquet_data_fails_when_read_naming_file_and_rows(copa):
    path = Path(copa.folder) / "validation.parquet"
    rows = [{"premise": f"premise number {i}", "label": i % 2} for i in range(5000)]
    data = bytearray(write_parquet(path, rows, row_group_size=1000, compression="snappy"))
    middle = len(data) // 2
    data[middle: middle + 64] = bytes(b ^ 0xFF for b in data[middle: middle + 64])
    path.write_bytes(bytes(data))
    shards = copa.list_shards("validation")  # the footer is intact: planning cannot tell
    assert sum(s.stop - s.start for s in shards) == 5000
    message = one_line_error(lambda: [row for s in shards for row in copa.read("validation", s)])
    prefix = f"super_glue/copa validation: {path}: cannot decode the rows from row "
    assert message.startswith(prefix) and " on (corrupt file?): " in message


@pytest.mark.parametrize("name", ["validation.jsonl", "validation.parquet"])
def test_file_gone_after_planning_is_data_not_found(copa, name):
    path = Path(copa.folder) / name
    rows = read_jsonl(COPA_ROWS)
    if name.endswith(".parquet"):
        write_parquet(path, rows)
    else:
        path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    shard = copa.list_shards("validation")[0]
    path.unlink()
    assert one_line_error(lambda: list(copa.read("validation", shard)), DataNotFoundError) == (
        f"super_glue/copa validation: {path}: cannot open rows file: no such file")


STORY_HEADER = ["InputStoryid", "InputSentence1", "InputSentence2", "InputSentence3",
                "InputSentence4", "RandomFifthSentenceQuiz1", "RandomFifthSentenceQuiz2",
                "AnswerRightEnding"]


@pytest.fixture
def story_cloze(tmp_path, catalog) -> ManualStore:
    store = ManualStore(tmp_path, catalog.get("story_cloze", "2016"), rows_per_shard=2)
    store.folder.mkdir(parents=True)
    return store


def story(number: int, ending: str = "1", text: str = "He went home.") -> list[str]:
    return [f"id-{number}", text, "b", "c", "d", "It rained.", "It shone.", ending]


def write_csv(path: Path, rows: list[list[str]]) -> None:
    with path.open("w", encoding="utf-8", newline="") as handle:
        csv.writer(handle, quoting=csv.QUOTE_ALL).writerows([STORY_HEADER, *rows])


def test_manual_csv_rows_are_what_the_csv_module_reads(story_cloze):
    path = story_cloze.folder / story_cloze.spec["files"]["validation"]
    write_csv(path, [story(0), story(1, "2", "Two\r\nlines, quoted."), story(2), story(3)])
    with path.open(encoding="utf-8", newline="") as handle:
        reference = list(csv.DictReader(handle))
    rows = read_all(story_cloze, "validation")
    assert [row["sentence_quiz1"] for row in rows] == ["It rained."] * 4
    assert [row["input_sentence_1"] for row in rows] == [r["InputSentence1"] for r in reference]
    assert [row["answer_right_ending"] for row in rows] == [1, 2, 1, 1]


def test_manual_csv_with_a_bad_encoding_names_line_and_byte(story_cloze):
    path = story_cloze.folder / story_cloze.spec["files"]["validation"]
    write_csv(path, [story(0), story(1, text="Caf\u00e9 time.")])
    data = path.read_bytes().replace("\u00e9".encode(), b"\xe9")  # Latin-1, not UTF-8
    path.write_bytes(data)
    where = data.index(b"\xe9")
    assert one_line_error(lambda: story_cloze.list_shards("validation")) == (
        f"story_cloze/2016 validation: {path}:3: not UTF-8 at byte {where:,} "
        "(invalid continuation byte 0xe9)")


def test_manual_csv_with_a_bad_number_names_row_and_field(story_cloze):
    path = story_cloze.folder / story_cloze.spec["files"]["validation"]
    write_csv(path, [story(0), story(1, ending="two")])
    shard = story_cloze.list_shards("validation")[0]
    assert one_line_error(lambda: list(story_cloze.read("validation", shard))) == (
        f"story_cloze/2016 validation: {path}: row 1: field 'answer_right_ending' is not an "
        "integer: 'two'")


def test_planning_fails_only_the_tasks_of_the_unreadable_split(tmp_path):
    for dataset in ("copa", "rte"):
        folder = tmp_path / "super_glue" / dataset
        folder.mkdir(parents=True)
        for path in (SAMPLES_DIR / "super_glue" / dataset).glob("*.jsonl"):
            (folder / path.name).write_bytes(path.read_bytes())
    bad = tmp_path / "super_glue" / "copa" / "validation.parquet"
    (tmp_path / "super_glue" / "copa" / "validation.jsonl").unlink()
    bad.write_text("not parquet")
    specs = load_definitions().select(
        patterns=["super_glue_copa_exercise", "super_glue_rte_GPT_3_style"])
    config = CacheConfig(output_dir=str(tmp_path / "out"), vocab_model=SAMPLE_VOCAB.read_bytes(),
                         data_dir=str(tmp_path))
    plan = build_plan(config, specs)
    assert list(plan.failed) == ["super_glue_copa_exercise"]
    assert plan.failed["super_glue_copa_exercise"].startswith(
        f"super_glue/copa validation: {bad}: {NOT_PARQUET}")
    assert list(plan.tasks) == ["super_glue_rte_GPT_3_style"]


def test_render_reads_parquet_like_jsonl_and_rejects_a_bad_one(tmp_path, capsys):
    parquet = tmp_path / "rows.parquet"
    write_parquet(parquet, read_jsonl(COPA_ROWS))
    assert main(["render", "super_glue/copa", "--rows", str(COPA_ROWS), "--dropped"]) == 0
    from_jsonl = capsys.readouterr()
    assert main(["render", "super_glue/copa", "--rows", str(parquet), "--dropped"]) == 0
    from_parquet = capsys.readouterr()
    assert from_jsonl.out and from_parquet.out == from_jsonl.out
    assert from_parquet.err == from_jsonl.err
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(parquet.read_bytes()[:-50])
    assert main(["render", "super_glue/copa", "--rows", str(bad)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.splitlines() == [
        f"p3data: error: {bad}: {NOT_PARQUET}Parquet magic bytes not found in footer. Either "
        "the file is corrupted or this is not a parquet file."]
