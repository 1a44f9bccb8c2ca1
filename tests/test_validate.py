"""`p3data validate`: known answers on a handmade mirror, and a run on the bundled samples."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.cache import t0_only
from helpers.templates import template_entry, write_templates

from p3data.cli import main
from p3data.datasets.stores import ENV_DATA_DIR
from p3data.quality.common import TokenCounter
from p3data.quality.validate import Lengths, Thresholds, validate
from p3data.taskset import load_definitions
from p3data.templates.collection import ENV_TEMPLATE_DIRS

TASKS = t0_only("super_glue_copa_fixture_.*")
ROW = {"premise": "The bread turned hard.", "choice1": "I left it on the counter overnight.",
       "choice2": "I put it in a freezer bag.", "question": "cause", "idx": 0, "label": 0}
ROWS = [
    ROW,
    ROW,  # a duplicate (inputs, targets) pair for every template
    ROW | {"label": -1},  # hidden label: an empty target, kept as <NO LABEL>
    ROW | {"question": "effect"},  # dropped by the cause-only template
    ROW | {"premise": "The bread turned hard. " * 60},  # an over-long field
]


@pytest.fixture
def fixture_tasks(tmp_path, monkeypatch) -> Path:
    """Three COPA fixture templates on top of the installed ones, and a five-row mirror."""
    templates = tmp_path / "templates"
    write_templates(templates, "super_glue", "copa", "".join([
        template_entry("fx-labelled", "fixture labelled",
                       "{{ premise }} What was the {{ question }}? ||| "
                       "{% if label != -1 %}{{ answer_choices[label] }}{% endif %}",
                       "{{ choice1 }} ||| {{ choice2 }}"),
        template_entry("fx-off", "fixture off choices", "{{ premise }} ||| {{ choice1 }} indeed",
                       "Yes ||| No"),
        template_entry("fx-cause", "fixture cause only",
                       "{% if question == 'cause' %}{{ premise }} ||| {{ choice1 }}{% endif %}"),
    ]))
    monkeypatch.setenv(ENV_TEMPLATE_DIRS, str(templates))
    mirror = tmp_path / "mirror"
    folder = mirror / "super_glue" / "copa"
    folder.mkdir(parents=True)
    for split in ("train", "validation"):
        (folder / f"{split}.jsonl").write_text("".join(json.dumps(row) + "\n" for row in ROWS))
    return mirror


def run(mirror: Path, pattern: str = TASKS, **kwargs):
    specs = load_definitions().select((), [pattern])
    result = validate(specs, mirror, TokenCounter(), **kwargs)
    return result, {report.task.removeprefix("super_glue_copa_fixture_"): report
                    for report in result.reports}


def test_known_answers(fixture_tasks):
    _, reports = run(fixture_tasks, lengths=Lengths(64, 256))
    assert set(reports) == {"labelled", "off_choices", "cause_only"}
    labelled, off, cause = reports["labelled"], reports["off_choices"], reports["cause_only"]
    assert (labelled.read, labelled.kept, labelled.dropped) == (5, 5, {})
    assert (labelled.no_label, labelled.off_choices, labelled.duplicates) == (1, 0, 1)
    assert labelled.rows == {"no_label": [2], "duplicates": [1], "truncated": [4]}
    assert (labelled.inputs_over, labelled.targets_over) == (1, 0)
    assert labelled.max_inputs > 64
    assert (off.kept, off.off_choices, off.no_label) == (5, 5, 0)
    assert (cause.read, cause.kept, cause.dropped) == (5, 4, {"no_separator": 1})
    assert cause.drop_rate == pytest.approx(0.2)


def test_targets_are_counted_with_their_eos(fixture_tasks):
    longest = max(TokenCounter().count([ROW["choice1"], ROW["choice2"]]))
    _, reports = run(fixture_tasks, lengths=Lengths(1024, longest))
    assert reports["labelled"].targets_over >= 1  # fits without the EOS, not with it
    assert reports["labelled"].max_targets == longest + 1
    _, reports = run(fixture_tasks, lengths=Lengths(1024, longest + 1))
    assert reports["labelled"].targets_over == 0


def test_score_eval_twins_are_validated_through_their_base(fixture_tasks):
    result, reports = run(fixture_tasks, "super_glue_copa_fixture_labelled_score_eval")
    assert result.twins == 1
    [report] = reports.values()
    assert report.task == "super_glue_copa_fixture_labelled" and report.split == "validation"
    assert report.read == 5


def test_thresholds():
    from p3data.quality.validate import TaskSplitValidation

    report = TaskSplitValidation("t", "d", "tpl", "train", "train", read=10, kept=8,
                                 dropped={"no_separator": 2}, truncated=4, off_choices=1)
    assert Thresholds(max_drop_rate=0.3).violations(report) == []
    assert Thresholds(max_drop_rate=0.1).violations(report) == ["t (train): drop rate 0.200 > 0.1"]
    assert Thresholds(max_truncated_rate=0.4).violations(report) == [
        "t (train): truncated rate 0.500 > 0.4"]
    assert Thresholds(max_off_choice_rate=0.2).violations(report) == []


def test_command_json_and_exit_codes(fixture_tasks, capsys):
    args = ["validate", "--tasks", TASKS, "--data-dir", str(fixture_tasks), "--json"]
    assert main(args + ["--max-drop-rate", "0.5"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert {t["task"] for t in data["tasks"]} == {
        "super_glue_copa_fixture_labelled", "super_glue_copa_fixture_off_choices",
        "super_glue_copa_fixture_cause_only"}
    assert data["lengths"] == {"inputs": 1024, "targets": 256} and data["violations"] == []
    assert main(args + ["--max-drop-rate", "0.1"]) == 1
    _, err = capsys.readouterr()
    assert "fail: super_glue_copa_fixture_cause_only (train): drop rate 0.200 > 0.1" in err


def test_a_missing_split_fails_and_says_where(fixture_tasks, capsys):
    args = ["validate", "--tasks", "super_glue_copa_fixture_labelled",
            "--data-dir", str(fixture_tasks), "--split", "test"]
    assert main(args) == 1
    out, _ = capsys.readouterr()
    assert "not validated" in out and str(fixture_tasks / "super_glue" / "copa") in out


def test_without_rows_it_says_what_to_pass(monkeypatch, capsys):
    monkeypatch.delenv(ENV_DATA_DIR, raising=False)
    assert main(["validate", "--mixture", "t0_train"]) == 2
    assert "--samples" in capsys.readouterr().err


def test_bundled_samples(capsys):
    assert main(["validate", "--mixture", "t0_train", "--samples", "--lengths", "1024,256"]) == 0
    out, _ = capsys.readouterr()
    assert out.startswith("validated 313 tasks on rows from ")
    # A real promptsource 0.1.0 bug: this template's targets are never among its choices.
    line = next(line for line in out.splitlines()
                if line.startswith("imdb_Negation_template_for_positive_and_negative "))
    read, kept, _, _, off_choices = line.split()[2:7]
    assert read == kept == off_choices != "0"


def test_an_empty_rows_file_fails(fixture_tasks, capsys):
    empty = fixture_tasks / "super_glue" / "copa" / "train.jsonl"
    empty.write_text("")
    assert main(["validate", "--tasks", TASKS, "--data-dir", str(fixture_tasks)]) == 1
    out, err = capsys.readouterr()
    why = f"no rows in {empty} (the catalog lists 400)"
    assert f"super_glue_copa_fixture_labelled: not validated: super_glue/copa train: {why}" in (
        out.splitlines())
    assert f"fail: super_glue_copa_fixture_labelled (train): super_glue/copa train: {why}" in (
        err.splitlines())


@pytest.mark.parametrize("where", ["file", "missing"])
def test_a_data_dir_that_is_no_folder_is_one_line(tmp_path, capsys, where):
    path = tmp_path / "rows.jsonl"
    if where == "file":
        path.write_text("{}\n")
    assert main(["validate", "--tasks", "super_glue_copa_exercise", "--data-dir", str(path)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err == [f"p3data: error: data folder {path} "
                   + ("is a file, not a folder" if where == "file" else "does not exist")
                   + " (--data-dir, --samples)"]


def test_an_unrelated_folder_fails_every_task_saying_where_rows_were_expected(tmp_path, capsys):
    (tmp_path / "README.md").write_text("mine")
    assert main(["validate", "--tasks", "super_glue_copa_exercise", "--data-dir",
                 str(tmp_path)]) == 1
    out, _ = capsys.readouterr()
    assert (f"super_glue_copa_exercise: not validated: super_glue/copa: no rows for split "
            f"'train' in the mirror; expected {tmp_path}/super_glue/copa/train.parquet") in out
    assert [path.name for path in tmp_path.iterdir()] == ["README.md"]


@pytest.mark.parametrize(("args", "message"), [
    (["--max-rows", "0"], "--max-rows: expected a whole number above 0, not '0'"),
    (["--lengths", "0,5"], "--lengths: lengths must be positive, not '0,5'"),
    (["--max-drop-rate", "2"], "--max-drop-rate: expected a rate between 0 and 1, not '2'"),
    (["--tasks", "("], "a task pattern is not a regular expression"),
])
def test_bad_values_are_one_line_and_exit_2(capsys, args, message):
    try:
        code = main(["validate", "--samples", *args])
    except SystemExit as exit:  # argparse's own errors
        code = exit.code
    assert code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) <= 2 and message in lines[-1]  # argparse adds a usage line
