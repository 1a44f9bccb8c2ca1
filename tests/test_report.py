"""`p3data report`: a built cache as HTML (checked in headless Chromium) and Markdown;
broken tasks are named warnings, not tracebacks."""

from __future__ import annotations

import json
import shutil
import subprocess
import uuid
from pathlib import Path

import fsspec
import pytest
from helpers.cache import run_cache, t0_only
from helpers.command_server import run_p3data

from p3data import fs
from p3data.cli import main
from p3data.format.example_decoding import decode_example, feature_spans, value_count
from p3data.format.tfrecord import frame, read_records
from p3data.report.collect import example_lengths

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                  "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync"]


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("report")
    cache = root / "cache"
    run_cache(cache, "--tasks", t0_only("super_glue_copa_exercise.*|glue_mrpc.*"))
    out = root / "report.html"
    result = run_p3data(["report", str(cache), "--out", str(out)], timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    return cache, out


def test_markdown_tables_carry_the_manifests_numbers(report):
    cache, out = report
    markdown = out.with_suffix(".md").read_text()
    examples = rows_read = 0
    for manifest_path in cache.glob("*/manifest.json"):
        manifest = json.loads(manifest_path.read_text())
        examples += sum(s["stats"]["examples"] for s in manifest["splits"].values())
        rows_read += sum(s["rows_read"] for s in manifest["splits"].values())
        assert manifest["task"] in markdown
    assert f"{examples:,} examples" in markdown and f"{rows_read:,} rows read" in markdown
    assert "| Reason | Tasks | Rows |" in markdown


@pytest.mark.server
def test_page_renders_with_plots_and_tables_in_chromium(report, tmp_path):
    _, out = report
    assert shutil.which(CHROMIUM), "Chromium is missing: run `make test`, which installs it"
    flags = [*CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}"]
    dom = subprocess.run([CHROMIUM, *flags, "--dump-dom", out.as_uri()], capture_output=True,
                         text=True, timeout=120).stdout
    assert dom.count("<table") >= 3 and dom.count("<svg") >= 3
    assert "Dropped rows" in dom and "glue_mrpc" in dom and "t0_train" in dom
    shot = tmp_path / "report.png"
    subprocess.run([CHROMIUM, *flags, "--window-size=1280,1600", f"--screenshot={shot}",
                    out.as_uri()], capture_output=True, timeout=120)
    assert shot.stat().st_size > 20_000  # a page with content, not a blank one


def test_broken_tasks_are_named_warnings_and_the_rest_is_reported(report, tmp_path, capsys):
    root = Path(shutil.copytree(report[0], tmp_path / "cache"))
    shard = sorted(root.glob("*/train.tfrecord-00000-of-00001"))[0]
    data = bytearray(shard.read_bytes())
    data[100] ^= 0xFF
    shard.write_bytes(bytes(data))
    manifest = next(path for path in sorted(root.glob("*/manifest.json"))
                    if path.parent != shard.parent)
    manifest.write_bytes(manifest.read_bytes()[:60])  # cut mid-way
    out = tmp_path / "report.html"
    assert main(["report", str(root), "--out", str(out)]) == 1
    captured = capsys.readouterr()
    corrupt, unreadable = captured.err.splitlines()
    assert corrupt == (f"warning: {shard}: record 0 payload fails its CRC (it starts at byte 0); "
                       "task left out (check the cache with p3data verify)")
    assert unreadable.startswith(f"warning: {manifest}: not valid JSON (")
    assert unreadable.endswith("); left out")
    healthy = {path.parent.name for path in root.glob("*/COMPLETED")} - {
        shard.parent.name, manifest.parent.name}
    markdown = out.with_suffix(".md").read_text()
    assert {name for name in healthy if f"| {name} |" in markdown} == healthy
    assert f"| {shard.parent.name} |" not in markdown
    assert captured.out.startswith(f"{len(healthy)} tasks, ")


def test_no_cache_there_is_one_error_line(tmp_path, capsys):
    out = tmp_path / "report.html"
    assert main(["report", str(tmp_path / "nope"), "--out", str(out)]) == 2
    assert capsys.readouterr().err == (f"p3data: error: {tmp_path / 'nope'}: no such cache "
                                       f"folder; build one with p3data cache --output-dir "
                                       f"{tmp_path / 'nope'}\n")
    (tmp_path / "empty").mkdir()
    assert main(["report", str(tmp_path / "empty"), "--out", str(out)]) == 2
    assert capsys.readouterr().err.startswith(
        f"p3data: error: {tmp_path / 'empty'}: holds no task folders")
    assert not out.exists()


@pytest.fixture
def memory_cache(report):
    """The report's cache copied into fsspec's in-memory filesystem (as a gs:// bucket would
    hold it: no local path anywhere)."""
    root = f"memory://report-{uuid.uuid4().hex}/cache"
    fsspec.filesystem("memory").put(str(report[0]), fs.resolve(root)[1], recursive=True)
    yield root
    fs.delete_tree(fs.parent_of(root))


def test_a_cache_on_any_fsspec_filesystem_reports_the_same(report, memory_cache, tmp_path,
                                                           capsys):
    cache, local_out = report
    out = tmp_path / local_out.name
    assert main(["report", memory_cache, "--out", str(out)]) == 0
    assert capsys.readouterr().out.startswith("14 tasks, ")
    markdown = out.with_suffix(".md").read_text()
    assert f"`{memory_cache}`" in markdown
    assert markdown.replace(memory_cache, str(cache)) == local_out.with_suffix(".md").read_text()


def test_a_record_that_is_no_example_is_a_named_warning(memory_cache, tmp_path, capsys):
    shard = fs.glob(fs.join(memory_cache, "glue_mrpc_replace", "train.tfrecord-*"))[0]
    fs.write_bytes(shard, frame(b"\x0a\x05ab"))  # a field longer than the record
    assert main(["report", memory_cache, "--out", str(tmp_path / "report.html")]) == 1
    assert capsys.readouterr().err == (
        f"warning: {shard}: record 0 is not a tf.train.Example (a field runs past the end of "
        "its message); task left out (check the cache with p3data verify)\n")


def test_fast_lengths_count_what_the_decoder_decodes(report):
    """Every feature of every record: token ids, texts, and the twins' idx, weight, flags."""
    kinds = set()
    for shard in sorted(report[0].glob("*/*.tfrecord-*")):
        with shard.open("rb") as handle:
            for record in read_records(handle, str(shard)):
                decoded = decode_example(record)
                assert example_lengths(record) == (len(decoded["inputs"]),
                                                   len(decoded["targets"]))
                for name, start, end in feature_spans(record):
                    assert value_count(record, start, end) == len(decoded[name.decode()])
                kinds |= {type(values[0]) for values in decoded.values() if values}
    assert kinds == {bytes, int, float}


def test_an_unknown_split_is_one_line_naming_the_caches(report, tmp_path, capsys):
    out = tmp_path / "report.html"
    assert main(["report", str(report[0]), "--out", str(out), "--split", "nosuch"]) == 2
    assert capsys.readouterr().err == (
        f"p3data: error: {report[0]}: no task has a split 'nosuch'; its tasks' splits are "
        "test, train, validation (--split)\n")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("mine", ["report.html", "report.md"])
def test_a_file_report_did_not_write_is_never_written_over(report, tmp_path, capsys, mine):
    """The page (named) and its Markdown twin (not named): neither overwrites a user's file;
    a report p3data wrote is rewritten."""
    (tmp_path / mine).write_text("my notes\n")
    out = tmp_path / "report.html"
    assert main(["report", str(report[0]), "--out", str(out)]) == 2
    error = capsys.readouterr().err
    assert error == (f"p3data: error: {tmp_path / mine}: not a report p3data wrote, so it is "
                     "not written over; choose another file name\n")
    assert [p.name for p in tmp_path.iterdir()] == [mine]
    assert (tmp_path / mine).read_text() == "my notes\n"
    shutil.copy(report[1], out)
    shutil.copy(report[1].with_suffix(".md"), out.with_suffix(".md"))
    assert main(["report", str(report[0]), "--out", str(out), "--markdown",
                 str(tmp_path / "twin.md")]) == 0
