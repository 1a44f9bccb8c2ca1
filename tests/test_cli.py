"""The `p3data` command line: render, list, show, and clear errors on bad input."""

from __future__ import annotations

import json

from p3data.cli import main
from p3data.samples import SAMPLES_DIR

COPA = SAMPLES_DIR / "super_glue" / "copa"


def test_render_prints_one_line_per_kept_pair(capsys):
    assert main(["render", "super_glue/copa", "--rows", str(COPA / "validation.jsonl")]) == 0
    out, err = capsys.readouterr()
    records = [json.loads(line) for line in out.splitlines()]
    assert records and set(records[0]) == {"dataset", "subset", "template", "row", "inputs",
                                           "targets", "answer_choices"}
    assert {r["template"] for r in records} >= {"exercise", "best_option"}
    assert "kept" in err and "no_separator" in err


def test_render_dropped_and_seed(capsys):
    args = ["render", "super_glue/copa", "--rows", str(COPA / "validation.jsonl"),
            "--template", "…What could happen next, C1 or C2?", "--dropped", "--seed", "7"]
    assert main(args) == 0
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert {r.get("dropped") for r in records} == {None, "no_separator"}
    assert [r["row"] for r in records] == list(range(len(records)))


def test_render_bad_rows_file_names_file_and_line(tmp_path, capsys):
    rows = tmp_path / "rows.jsonl"
    rows.write_text('{"premise": "a"}\n{not json}\n')
    assert main(["render", "super_glue/copa", "--rows", str(rows)]) == 2
    assert f"{rows}:2: not valid JSON" in capsys.readouterr().err


def test_render_missing_field_is_reported_and_other_rows_render(tmp_path, capsys):
    good = (COPA / "train.jsonl").read_text().splitlines()[0]
    broken = json.loads(good)
    del broken["choice2"]
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps(broken) + "\n" + good + "\n")
    assert main(["render", "super_glue/copa", "--template", "exercise", "--rows", str(rows)]) == 0
    out, err = capsys.readouterr()
    assert [json.loads(line)["row"] for line in out.splitlines()] == [1]
    assert "row 0, field 'choice2'" in err and "exercise" in err


def test_unknown_names_are_clear_errors(capsys):
    assert main(["render", "nope/x", "--rows", str(COPA / "train.jsonl")]) == 2
    assert "no templates for dataset 'nope/x'" in capsys.readouterr().err
    assert main(["show", "super_glue_copa_exrcise"]) == 2
    assert "did you mean super_glue_copa_exercise" in capsys.readouterr().err
    assert main(["list", "--mixture", "t0_trian"]) == 2
    assert "unknown mixture 't0_trian'" in capsys.readouterr().err


def test_list_and_show(capsys):
    assert main(["list", "--mixture", "t0_train_one_og_prompt"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 35
    assert main(["show", "yelp_review_full_based_on_that"]) == 0
    out = capsys.readouterr().out
    assert "rate:      71,428" in out and "t0_train" in out and "yelp_review_full" in out
