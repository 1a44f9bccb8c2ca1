"""The `p3data` command line: render, list, show; clear errors on bad input, tracebacks for bugs."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from helpers.cache import P3DATA

from p3data.cli import build_parser, main
from p3data.commands import tasks
from p3data.datasets.samples import SAMPLES_DIR
from p3data.datasets.stores import ENV_DATA_DIR
from p3data.errors import BUG, P3DataError

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


def test_a_bug_keeps_its_traceback_and_says_to_report_it(monkeypatch, capsys):
    def broken(args):
        raise KeyError("some_key")  # no longer mistaken for a user's error

    monkeypatch.setattr(tasks, "list_tasks", broken)
    assert main(["list"]) == 1
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err and "KeyError: 'some_key'" in err
    assert err.splitlines()[-1] == f"p3data: this is {BUG} above" and "p3data: error" not in err


def test_deliberate_errors_are_one_line_with_exit_2(monkeypatch, capsys):
    def refuses(args):
        raise P3DataError("x.yaml: entry 3: what is wrong; what to do")

    monkeypatch.setattr(tasks, "list_tasks", refuses)
    assert main(["list"]) == 2
    assert capsys.readouterr().err == "p3data: error: x.yaml: entry 3: what is wrong; what to do\n"


def test_a_reader_that_goes_away_is_no_error():
    lister = subprocess.Popen([P3DATA, "list"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    lister.stdout.close()  # like `p3data list | head -0`
    assert lister.stderr.read() == b""
    assert lister.wait(timeout=120) == 0


def test_verbose_is_counted_before_the_subcommand(capsys):
    parser, _ = build_parser()
    args, _ = parser.parse_known_args(["-vv", "list"])
    assert args.verbose == 2 and parser.parse_args(["list"]).verbose == 0
    assert main(["-v", "list", "--mixture", "t0_train_one_og_prompt"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 35


@pytest.mark.parametrize(("args", "expected"), [
    (["vocab", "--out", "v.model", "--size", "0"], "argument --size: expected a whole number"),
    (["peek", "cache", "task", "-n", "x"], "argument -n: expected a whole number"),
    (["report", "cache", "--out", "r.html", "--max-records", "-1"],
     "argument --max-records: expected a whole number"),
    (["report", "cache", "--out", "r.html", "--lengths", "1024"], "argument --lengths: lengths"),
    (["plan", "t0_train", "--steps", "0", "--batch-size", "8"],
     "argument --steps: expected a whole number"),
    (["overlap", "--train", "t0_train", "--eval", "t0_eval_score_eval", "--n", "0"],
     "argument --n: expected a whole number"),
    (["validate", "--samples", "--max-rows", "0"], "argument --max-rows: expected a whole number"),
    (["validate", "--samples", "--max-drop-rate", "1.5"],
     "argument --max-drop-rate: expected a rate between 0 and 1, not '1.5'"),
    (["validate", "--samples", "--max-truncated-rate", "nan"],
     "argument --max-truncated-rate: expected a rate between 0 and 1"),
])
def test_numeric_options_are_checked_before_any_work(capsys, args, expected):
    with pytest.raises(SystemExit) as exit_:
        main(args)
    assert exit_.value.code == 2
    assert expected in capsys.readouterr().err


def test_vocab_size_sentencepiece_refuses_is_one_line(tmp_path, capsys):
    assert main(["vocab", "--out", str(tmp_path / "v.model"), "--size", "50"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("p3data: error: --size 50: SentencePiece cannot train") and \
        "Vocabulary size is smaller than required_chars" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "v.model").exists()


def test_an_output_that_cannot_be_written_is_one_line(tmp_path, capsys):
    folder = tmp_path / "a folder"
    folder.mkdir()
    assert main(["overlap", "--train", "t0_train_one_og_prompt", "--eval", "t0_eval_score_eval",
                 "--samples", "--max-rows", "2", "--exclude-out", str(folder)]) == 2
    assert capsys.readouterr().err.endswith(
        f"p3data: error: {folder}: cannot write it (Is a directory)\n")


@pytest.mark.parametrize(("args", "ending"), [
    (["validate", "--mixture", "t0_train"], "or the bundled sample rows (--data-dir, --samples)"),
    (["cache", "--output-dir", "out", "--tasks", "("], "(--tasks)"),
    (["cache", "--output-dir", "out"], "name mixtures or task patterns (--mixture, --tasks)"),
    (["cache", "--output-dir", "out", "--tasks", "anli.*", "--vocab", "README.md"],
     "choose a .model file (--vocab)"),
])
def test_the_command_line_names_its_option_for_what_to_change(monkeypatch, capsys, args,
                                                              ending):
    monkeypatch.delenv(ENV_DATA_DIR, raising=False)
    monkeypatch.chdir(Path(__file__).parent.parent)
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.endswith(f"{ending}\n") and len(err.splitlines()) == 1
    assert "--" not in err.removesuffix(f"{ending}\n")  # the library names no option
