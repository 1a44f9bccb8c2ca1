"""`p3data cache`: seqio's cache format, read back by stock seqio; determinism; resuming;
bad rows and missing files; P3's layout; `p3data verify`."""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import time
from pathlib import Path

import pytest
from helpers.cache import (
    assert_packs,
    assert_same_examples,
    cache_command,
    copy_samples,
    read_examples,
    run_cache,
    t0_only,
    tree,
    write_mirror,
)
from helpers.templates import template_entry, write_templates

from p3data.format.verify import verify_task

pytestmark = pytest.mark.usefixtures("samples_in_seqio")

TASKS = ["super_glue_copa_exercise", "super_glue_copa_exercise_score_eval",
         "super_glue_copa__As_a_result_C1_or_C2_", "anli_GPT_3_style_r1",
         "anli_GPT_3_style_r1_score_eval", "super_glue_rte_GPT_3_style",
         "squad_v2_Questions_with_Context", "trec_fine_grained_open"]
PATTERN = "|".join(TASKS)


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("cache")
    run_cache(out, "--tasks", PATTERN)
    return out


def test_layout_is_seqios(built):
    folder = built / "super_glue_copa_exercise"
    names = {p.name for p in folder.iterdir()}
    assert names == {"COMPLETED", "manifest.json"} | {
        f"{kind}.{split}.json" for kind in ("info", "stats")
        for split in ("train", "validation", "test")} | {
        f"{split}.tfrecord-00000-of-00001" for split in ("train", "validation", "test")} | {
        f"index.{split}-00000-of-00001.npy" for split in ("train", "validation", "test")}
    assert (folder / "COMPLETED").read_bytes() == b""
    info = (folder / "info.validation.json").read_text()
    assert info == json.dumps(json.loads(info), sort_keys=True, indent=2) + "\n"
    assert json.loads(info)["features"]["answer_choices"] == {"dtype": "string", "shape": [None]}
    stats = json.loads((folder / "stats.validation.json").read_text())
    assert set(stats) == {"examples", "inputs_tokens", "inputs_max_tokens", "targets_tokens",
                          "targets_max_tokens"}
    assert not (built / ".p3data-work").exists()


@pytest.mark.parametrize("name", TASKS)
def test_stock_seqio_reads_the_cache_like_on_the_fly(built, name):
    split = "test" if "rte" in name else "validation" if "copa" in name or "anli" in name \
        else "train"
    cached, fresh = read_examples(name, split, built), read_examples(name, split)
    assert_same_examples(cached, fresh)
    if name.endswith("_score_eval"):  # idx counts kept examples over the whole split
        assert [tuple(e["idx"]) for e in cached] == [tuple(e["idx"]) for e in fresh]


def test_token_stats_count_like_seqio(built):
    examples = read_examples("super_glue_copa_exercise", "train", built)
    stats = json.loads((built / "super_glue_copa_exercise" / "stats.train.json").read_text())
    assert stats["examples"] == len(examples)
    assert stats["targets_tokens"] == sum(int((e["targets"] > 1).sum()) for e in examples)
    assert stats["inputs_max_tokens"] == max(int((e["inputs"] > 1).sum()) for e in examples)


def test_packing_feature_converter_reads_it(built):
    assert_packs("super_glue_copa_exercise", "train", built)


def test_rerun_is_byte_identical_whatever_the_sharding(built, tmp_path):
    run_cache(tmp_path, "--tasks", PATTERN, "--rows-per-shard", "3")
    assert tree(tmp_path) == tree(built)


def test_verify_passes_and_catches_tampering(built, tmp_path):
    assert all(not verify_task(str(p)) for p in built.iterdir())
    run_cache(tmp_path, "--tasks", "super_glue_copa_exercise")
    shard = tmp_path / "super_glue_copa_exercise" / "train.tfrecord-00000-of-00001"
    shard.write_bytes(shard.read_bytes()[:-3])
    problems = verify_task(str(tmp_path / "super_glue_copa_exercise"))
    assert any("sha256" in p for p in problems) and any("truncated" in p for p in problems)


def test_bad_row_is_counted_and_the_task_completes(tmp_path):
    mirror = tmp_path / "mirror"
    folder = copy_samples(mirror, "super_glue", "copa")
    rows = (folder / "train.jsonl").read_text().splitlines()
    broken = json.loads(rows[0])
    del broken["premise"]
    (folder / "train.jsonl").write_text("\n".join([json.dumps(broken), *rows[1:]]) + "\n")
    out = tmp_path / "out"
    run_cache(out, "--tasks", "super_glue_copa_exercise", "--max-error-rate", "0.2",
              data_dir=mirror)
    manifest = json.loads((out / "super_glue_copa_exercise" / "manifest.json").read_text())
    train = manifest["splits"]["train"]
    assert train["render_errors"] == 1 and train["dropped"] == {}
    assert "premise" in train["errors"][0] and "row 0" in train["errors"][0]
    assert train["rows_read"] == len(rows) and train["stats"]["examples"] == len(rows) - 1
    assert (out / "super_glue_copa_exercise" / "COMPLETED").exists()


def test_failing_templates(tmp_path):
    """A template that fails on every row, or one that does not compile: that task fails and
    is not complete; the others complete."""
    templates = tmp_path / "templates"
    write_templates(templates, "super_glue", "copa", template_entry(
        "fails-1", "divides by zero", "{{ premise }} {{ (idx / 0) }} ||| x")
        + template_entry("broken-1", "broken", "{% if premise %} ||| x"))
    out = tmp_path / "out"
    result = run_cache(out, "--tasks", "super_glue_copa_(divides_by_zero|broken|exercise)",
                       "--splits", "validation", check=False,
                       env={"P3DATA_TEMPLATE_DIRS": str(templates)})
    assert result.returncode == 1
    assert "super_glue_copa_broken" in result.stdout and "Jinja syntax error" in result.stdout
    assert not (out / "super_glue_copa_broken" / "COMPLETED").exists()
    failed = next(line for line in result.stdout.splitlines()
                  if line.startswith("FAILED super_glue_copa_divides_by_zero"))
    assert "every one of the" in failed and "ZeroDivisionError" in failed
    assert not (out / "super_glue_copa_divides_by_zero" / "COMPLETED").exists()
    assert (out / "super_glue_copa_exercise" / "COMPLETED").exists()


def test_a_split_left_empty_by_failing_rows_fails(tmp_path):
    """No example is a success only when T0's row rule left out every row: a template refused
    on every row (the sandbox's refusals used to render as "", dropping every row as empty),
    or one whose rows that T0's rule keeps all fail, even below the error rate."""
    templates = tmp_path / "templates"
    write_templates(templates, "super_glue", "copa", template_entry(
        "refused-1", "refused", "{{ premise | attr('__class__') }} ||| x")
        + template_entry("kept-fail-1", "kept fail",
                         "{% if idx == 0 %}{{ premise.__class__ }}{% endif %} ||| x"))
    out = tmp_path / "out"
    result = run_cache(out, "--tasks", "super_glue_copa_(refused|kept_fail)", "--splits",
                       "validation", "--max-error-rate", "0.5", check=False,
                       env={"P3DATA_TEMPLATE_DIRS": str(templates)})
    assert result.returncode == 1
    failed = {line.split()[1].rstrip(":"): line for line in result.stdout.splitlines()
              if line.startswith("FAILED ")}
    assert "every one of the" in failed["super_glue_copa_refused"]
    assert "template 'refused'" in failed["super_glue_copa_refused"]
    assert "'__class__' of 'str' object is unsafe" in failed["super_glue_copa_refused"]
    line = failed["super_glue_copa_kept_fail"]
    assert "no example:" in line and "left out by T0's row rule" in line and "unsafe" in line
    assert not list(out.glob("*/COMPLETED"))


def test_missing_source_file_fails_only_that_task(tmp_path):
    mirror = tmp_path / "mirror"
    copy_samples(mirror, "super_glue", "rte")
    (copy_samples(mirror, "super_glue", "copa") / "validation.jsonl").unlink()
    out = tmp_path / "out"
    result = run_cache(out, "--tasks", "super_glue_copa_exercise|super_glue_rte_GPT_3_style",
                       data_dir=mirror, check=False)
    assert result.returncode == 1
    assert "super_glue_copa_exercise" in result.stdout and "validation" in result.stdout
    assert not (out / "super_glue_copa_exercise" / "COMPLETED").exists()
    assert (out / "super_glue_rte_GPT_3_style" / "COMPLETED").exists()


def test_p3_layout(tmp_path):
    run_cache(tmp_path, "--tasks", "super_glue_copa_exercise|super_glue_axg_GPT_3_style",
              "--p3-layout")
    folder = tmp_path / "data" / "super_glue_copa_exercise"
    assert sorted(p.name for p in folder.glob("*.tfrecord-*")) == [
        "test.tfrecord-00000-of-00001", "train.tfrecord-00000-of-00001",
        "validation.tfrecord-00000-of-00001"]
    assert json.loads((folder / "info.train.json").read_text())["seqio_version"] == "0.0.6"
    index = (tmp_path / "data_split_sizes.csv").read_text().splitlines()
    assert index[0] == "Data(sub)set|Number of examples per splits"
    sizes = dict(line.split("|", 1) for line in index[1:])
    assert set(json.loads(sizes["super_glue_axg_GPT_3_style"])) == {"test"}


def test_empty_split_is_written_like_seqio(tmp_path):
    """A split whose rows T0's rule all drops (here: every row's condition is false)."""
    templates = tmp_path / "templates"
    write_templates(templates, "super_glue", "copa", template_entry(
        "never-1", "never", "{% if premise == 'no such premise' %}{{ premise }} ||| x{% endif %}"))
    out = tmp_path / "out"
    run_cache(out, "--tasks", "super_glue_copa_never", env={"P3DATA_TEMPLATE_DIRS": str(templates)})
    task = out / "super_glue_copa_never"
    assert (task / "info.test.json").read_text() == "{}\n"
    assert (task / "stats.test.json").read_text() == '{\n  "examples": 0\n}\n'
    assert (task / "test.tfrecord-00000-of-00001").read_bytes() == b""


def test_more_output_shards_than_files_a_process_may_open(tmp_path):
    """Dealing a split into its shards keeps a bounded number of files open."""
    limit = 256
    out = tmp_path / "out"
    command = cache_command(out, "--tasks", "super_glue_copa_exercise", "--splits", "validation",
                            "--shards", str(limit + 50))
    result = subprocess.run(command, capture_output=True, text=True, timeout=600,
                            preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE,
                                                                  (limit, limit)))
    assert result.returncode == 0, result.stderr[-3000:]
    folder = out / "super_glue_copa_exercise"
    assert verify_task(str(folder)) == []
    assert len(list(folder.glob("validation.tfrecord-*-of-00306"))) == limit + 50
    examples = read_examples("super_glue_copa_exercise", "validation", out)
    assert len(examples) == json.loads((folder / "stats.validation.json").read_text())[
        "examples"] > 0
    assert_same_examples(examples, read_examples("super_glue_copa_exercise", "validation"))


@pytest.mark.crash
def test_kill_and_resume_matches_an_uninterrupted_run(tmp_path):
    mirror = tmp_path / "mirror"
    write_mirror(mirror, "super_glue", "copa", 1000)
    write_mirror(mirror, "glue", "mrpc", 1000)
    args = ["--tasks", t0_only("super_glue_copa.*|glue_mrpc.*"), "--rows-per-shard", "100"]
    reference = tmp_path / "reference"
    run_cache(reference, *args, data_dir=mirror)

    out = tmp_path / "out"
    process = subprocess.Popen(cache_command(out, *args, data_dir=mirror),
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               start_new_session=True)
    markers = out / ".p3data-work" / "units"
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline and len(list(markers.glob("*.json"))) < 4:
        assert process.poll() is None, "the run ended before it could be killed"
        time.sleep(0.05)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    tasks = [p for p in out.iterdir() if p.is_dir() and not p.name.startswith(".")]
    assert any(not (p / "COMPLETED").exists() for p in tasks) or len(tasks) < 36
    for task in tasks:  # whatever claims to be complete really is
        if (task / "COMPLETED").exists():
            assert verify_task(str(task)) == []

    rerun = run_cache(out, *args, data_dir=mirror, check=False)
    assert rerun.returncode == 2 and "--force" in rerun.stderr  # the dead run's lock
    run_cache(out, *args, "--force", data_dir=mirror)
    assert tree(out) == tree(reference)
