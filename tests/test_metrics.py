"""t5's metrics and postprocessors as T0 used them, checked on hand-computed cases."""

from __future__ import annotations

import inspect
import math
import random

import numpy as np
import pytest

from p3data import metrics as mt
from p3data.errors import NotFoundError


def approx(value: float) -> object:
    return pytest.approx(value, abs=1e-4)


# --------------------------------------------------------------------------- classification


def test_accuracy_and_sequence_accuracy():
    assert mt.accuracy([0, 1, 1, 0], [0, 1, 0, 0]) == {"accuracy": 75.0}
    assert mt.accuracy(["yes", "no"], ["yes", "yes"]) == {"accuracy": 50.0}
    assert mt.sequence_accuracy(["a b", "c"], ["a b", "C"]) == {"sequence_accuracy": 50.0}


def test_f1_score_with_invalid_counts_invalid_predictions_as_wrong():
    # -1 against gold 1 becomes 0 (a miss); 7 against gold 0 becomes 1 (a false positive).
    # TP=1, FP=1, FN=1 -> P = R = 1/2 -> F1 = 1/2.
    assert mt.f1_score_with_invalid([1, 1, 0, 0], [1, -1, 0, 7]) == {"f1": approx(50.0)}
    assert mt.f1_score_with_invalid([1, 0], [1, 0]) == {"f1": 100.0}


def test_mean_multiclass_f1_known_confusion():
    # class 0: P=1, R=1/2 -> 2/3; class 1: P=1/2, R=1 -> 2/3; class 2: never hit -> 0.
    metric = mt.mean_multiclass_f1(3)
    assert metric([0, 0, 1, 2], [0, 1, 1, -1]) == {"mean_3class_f1": approx(400 / 9)}


def test_matthews_corrcoef():
    assert mt.matthews_corrcoef([0, 1, 0, 1], [0, 1, 0, 1]) == {"matthews_corrcoef": 100.0}
    assert mt.matthews_corrcoef([0, 1, 0, 1], [1, 0, 1, 0]) == {"matthews_corrcoef": -100.0}


def test_correlations():
    assert mt.pearson_corrcoef([1, 2, 3], [2, 4, 6]) == {"pearson_corrcoef": approx(100.0)}
    assert mt.pearson_corrcoef([1, 2, 3], [3, 2, 1]) == {"pearson_corrcoef": approx(-100.0)}
    # Monotone but not linear: Spearman is exactly 1.
    assert mt.spearman_corrcoef([1, 2, 3, 4], [1, 4, 9, 16]) == {"spearman_corrcoef": approx(100.0)}
    # Ranks differ by d = (0, 1, 1): 1 - 6 * 2 / (3 * 8) = 1/2.
    assert mt.spearman_corrcoef([1, 2, 3], [1, 3, 2]) == {"spearman_corrcoef": approx(50.0)}


def test_auc_stays_on_a_zero_to_one_scale():
    # ROC: 3 of 4 (positive, negative) pairs ranked right. PR: 1/2 * 1 + 1/2 * 2/3.
    expected = {"auc-roc": approx(0.75), "auc-pr": approx(5 / 6)}
    assert mt.auc([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8]) == expected
    assert mt.auc([0.2, 0.1, 0.5, 0.9], [0.1, 0.4, 0.35, 0.8], targets_threshold=0.5) == expected


def test_multirc_f1_over_all_answers_reads_values():
    # The invalid -1 against gold 0 becomes a false positive: P = 1/2, R = 1.
    targets = [{"value": 1, "group": 0}, {"value": 0, "group": 0}]
    predictions = [{"value": 1}, {"value": -1}]
    assert mt.multirc_f1_over_all_answers(targets, predictions) == {"f1": approx(200 / 3)}


def test_group_wrappers():
    targets = [
        {"group": "q1", "value": 1}, {"group": "q1", "value": 0}, {"group": "q2", "value": 1},
    ]
    predictions = [{"value": 1}, {"value": 0}, {"value": 0}]
    assert mt.mean_group_metric(mt.all_match)(targets, predictions) == {"exact_match": 50.0}

    record = mt.deduplicate_metric(mt.squad)
    targets = [{"group": "a", "value": ["x"]}, {"group": "a", "value": ["x"]},
               {"group": "b", "value": ["y"]}]
    predictions = [{"value": "x"}, {"value": "wrong"}, {"value": "z"}]
    assert record(targets, predictions) == {"em": 50.0, "f1": 50.0}


# --------------------------------------------------------------------------- rank classification


def rows(*choices: tuple[int, int, bool, float, float]) -> tuple[list, list]:
    """(input, choice, is_correct, weight, score) rows -> shuffled (targets, scores)."""
    shuffled = list(choices)
    random.Random(0).shuffle(shuffled)
    return [((i, j), c, w) for i, j, c, w, _ in shuffled], [s for *_, s in shuffled]


def test_rank_classification_groups_two_and_three_choices():
    targets, scores = rows(
        (0, 0, False, 1.0, -1.0), (0, 1, True, 1.0, -2.0),  # picks choice 0: wrong
        (1, 0, False, 1.0, -5.0), (1, 1, False, 1.0, -4.0), (1, 2, True, 1.0, -1.0),  # 2: right
    )
    assert mt.rank_classification()(targets, scores) == {"accuracy": 50.0}


def test_rank_classification_uses_the_picked_choice_weight():
    targets, scores = rows(
        (0, 0, False, 1.0, -1.0), (0, 1, True, 1.0, -2.0),
        (1, 0, False, 3.0, -5.0), (1, 1, True, 3.0, -1.0),
    )
    assert mt.rank_classification()(targets, scores) == {"accuracy": 75.0}


def test_rank_classification_duplicate_correct_choices():
    # Choices "yes", "yes", "no" with gold "yes": both "yes" rows are correct.
    targets, scores = rows(
        (0, 0, True, 1.0, -3.0), (0, 1, True, 1.0, -1.0), (0, 2, False, 1.0, -2.0),
        (1, 0, False, 1.0, -1.0), (1, 1, True, 1.0, -2.0), (1, 2, False, 1.0, -3.0),
    )
    assert mt.rank_classification()(targets, scores) == {"accuracy": 50.0}
    # With fixed classes, several correct choices leave only accuracy.
    assert mt.rank_classification(num_classes=3)(targets, scores) == {"accuracy": 50.0}


def test_rank_classification_three_fixed_classes_adds_macro_f1():
    # Gold 0, 1, 2; picked 0, 1, 1. F1 per class: 1, 2/3, 0.
    targets, scores = rows(
        (0, 0, True, 1.0, -1.0), (0, 1, False, 1.0, -2.0), (0, 2, False, 1.0, -3.0),
        (1, 0, False, 1.0, -3.0), (1, 1, True, 1.0, -1.0), (1, 2, False, 1.0, -2.0),
        (2, 0, False, 1.0, -3.0), (2, 1, False, 1.0, -1.0), (2, 2, True, 1.0, -2.0),
    )
    result = mt.rank_classification(num_classes=3)(targets, scores)
    assert result == {"accuracy": approx(200 / 3), "mean_3class_f1": approx(500 / 9)}


def test_rank_classification_two_fixed_classes_adds_f1_and_auc():
    # P(choice 1) = .8, .4, .3, .1 with gold 1, 0, 1, 0: picks 1, 0, 0, 0.
    probabilities = [0.8, 0.4, 0.3, 0.1]
    gold = [1, 0, 1, 0]
    choices = []
    for i, (p, g) in enumerate(zip(probabilities, gold, strict=True)):
        choices += [(i, 0, g == 0, 1.0, math.log(1 - p)), (i, 1, g == 1, 1.0, math.log(p))]
    targets, scores = rows(*choices)
    result = mt.rank_classification(num_classes=2)(targets, scores)
    # accuracy 3/4; F1 of class 1: TP 1, FN 1 -> 2/3; ROC: 3 of 4 pairs; AP: 1/2 + 1/2 * 2/3.
    assert result == {
        "accuracy": approx(75.0),
        "f1": approx(200 / 3),
        "auc-roc": approx(75.0),
        "auc-pr": approx(250 / 3),
    }


def test_rank_classification_fixed_classes_need_whole_groups():
    targets, scores = rows(
        (0, 0, True, 1.0, -1.0), (0, 1, False, 1.0, -2.0), (1, 0, True, 1.0, 0.0),
    )
    with pytest.raises(ValueError, match="multiple of 2"):
        mt.rank_classification(num_classes=2)(targets, scores)


def test_rank_classification_postprocessor_feeds_the_metric():
    examples = [
        {"idx": np.array([i, j], np.int32), "is_correct": np.bool_(i == j), "weight": 1.0}
        for i in (0, 1) for j in (0, 1)
    ]
    del examples[0]["weight"]  # a missing weight defaults to 1.0
    post = mt.rank_classification_postprocessor
    targets = [post(b"yes", example=ex, is_target=True) for ex in examples]
    assert targets[:2] == [((0, 0), True, 1.0), ((0, 1), False, 1.0)]
    scores = [post(s) for s in (-0.5, -3.0, -0.5, -3.0)]
    assert scores == [-0.5, -3.0, -0.5, -3.0]
    # Both inputs pick choice 0: right for input 0, wrong for input 1 (gold 1), so no true
    # positive for class 1, and the two equal P(choice 1) tie: ROC 1/2, PR 1/2.
    assert mt.rank_classification(num_classes=2)(targets, scores) == {
        "accuracy": 50.0, "f1": 0.0, "auc-roc": approx(50.0), "auc-pr": approx(50.0),
    }
    assert mt.rank_classification()(targets, scores) == {"accuracy": 50.0}


# --------------------------------------------------------------------------- generation


def test_bleu_hand_computed():
    assert mt.bleu(["the cat sat on the mat"], ["the cat sat on the mat"]) == {"bleu": approx(100)}
    # n-gram precisions 5/6, 3/5, 2/4, 1/3, no brevity penalty: (1/12) ** (1/4).
    result = mt.bleu(["the cat sat on a mat"], ["the cat sat on the mat"])
    assert result == {"bleu": approx(100 * (1 / 12) ** 0.25)}


def test_rouge_sentence_split_drives_rouge_lsum():
    # Tokens: "cats purr dogs bark" vs "dogs bark cats purr". Bigram overlap 2 of 3.
    # rougeL would be 50 (LCS 2 of 4); " . " -> " .\n" makes rougeLsum match sentence by sentence.
    result = mt.rouge(["cats purr . dogs bark"], ["dogs bark . cats purr"])
    assert result == {"rouge1": approx(100), "rouge2": approx(200 / 3), "rougeLsum": approx(100)}


def test_rouge_aggregates_with_bootstrap_mid():
    # Per-example F 1 and 0: resampled means are 0, 1/2, 1 with odds 1:2:1, so the median is 1/2.
    np.random.seed(0)
    result = mt.rouge(["a b c", "a b c"], ["a b c", "x y z"])
    assert result == {"rouge1": approx(50), "rouge2": approx(50), "rougeLsum": approx(50)}


def test_edit_distance_is_word_level_and_lower_cased():
    # "the cat  sat" splits to [the, cat, "", sat]: one insertion. [x, y] vs [a, b, c]: three.
    result = mt.edit_distance(["The cat sat", "a b c"], ["the cat  sat", "x y"])
    assert result == {
        "min_edit": 1.0, "max_edit": 3.0, "mean_edit": 2.0, "median_edit": 2.0, "sum_edit": 4.0,
    }


# --------------------------------------------------------------------------- question answering


def test_squad_normalisation_and_best_answer():
    assert mt.squad([["The  Cat!"]], ["cat"]) == {"em": 100.0, "f1": 100.0}
    # "the red dog" -> "red dog": vs "big red dog" F1 = 0.8, vs "dog" F1 = 2/3; no exact match.
    assert mt.squad([["big red dog", "dog"], ["x"]], ["the red dog", "x"]) == {
        "em": 50.0, "f1": approx(90.0),
    }
    # As in t5, two empty answers match exactly but share no token.
    assert mt.squad([[""]], [""]) == {"em": 100.0, "f1": 0.0}


def test_trivia_qa_turns_punctuation_into_spaces():
    assert mt.trivia_qa([["rock and roll"]], ["Rock_and-roll"]) == {"em": 100.0, "f1": 100.0}
    assert mt.squad([["rock and roll"]], ["Rock_and-roll"]) == {"em": 0.0, "f1": 0.0}


def test_span_squad_reads_word_indices_from_context():
    target = {"answers": ["quick brown fox"], "context": "The quick brown fox, jumps!"}
    predictions = ["start: 1 end: 3", "start: one end: 3", "start: 1"]
    expected = {"em": approx(100 / 3), "f1": approx(100 / 3)}
    assert mt.span_squad([target] * 3, predictions) == expected


def test_coqa_f1():
    # [cat, sat] vs [cat, sat, down]: P = 2/3, R = 1 -> 0.8. Two empty answers score 1.
    assert mt.coqa_f1([["The cat sat."], ["the"]], ["a cat sat down", ""]) == {"f1": approx(90.0)}


# --------------------------------------------------------------------------- T0's metric choice


def test_get_metrics_matches_t0():
    assert set(mt.GET_METRICS) == {
        "BLEU", "ROUGE", "Span Squad", "Squad", "Trivia QA", "Accuracy", "Sequence Accuracy",
        "Pearson Correlation", "Spearman Correlation", "MultiRC", "AUC", "COQA F1",
        "Edit Distance", "Other",
    }
    assert mt.GET_METRICS["Other"] is mt.accuracy
    assert mt.GET_METRICS["ROUGE"] is mt.rouge


def test_glue_and_super_glue_tables():
    assert mt.glue_metrics("mrpc") == [mt.f1_score_with_invalid, mt.accuracy]
    assert mt.glue_metrics("qqp") == [mt.f1_score_with_invalid, mt.accuracy]
    for subset in ("boolq", "copa", "rte", "wic"):
        assert mt.super_glue_metrics(subset) == [mt.accuracy]
    assert mt.super_glue_metrics("axg") == []
    cb_f1, cb_accuracy = mt.super_glue_metrics("cb")
    assert cb_accuracy is mt.accuracy
    assert set(cb_f1([0, 1, 2], [0, 1, 2])) == {"mean_3class_f1"}
    multirc_f1, multirc_em = mt.super_glue_metrics("multirc")
    assert multirc_f1 is mt.multirc_f1_over_all_answers
    assert set(multirc_em([{"group": 0, "value": 1}], [{"value": 1}])) == {"exact_match"}
    (record,) = mt.super_glue_metrics("record")
    assert record([{"group": 0, "value": ["x"]}], [{"value": "x"}]) == {"em": 100.0, "f1": 100.0}
    with pytest.raises(NotFoundError, match="no metrics for the SuperGLUE subset 'wsc.fixed'"):
        mt.super_glue_metrics("wsc.fixed")


def test_task_metrics_follows_t0():
    assert mt.task_metrics("glue", "mrpc", ["Accuracy"]) == mt.glue_metrics("mrpc")
    assert mt.task_metrics("super_glue", "wsc.fixed", ["Accuracy"]) == [mt.accuracy]
    assert mt.task_metrics("super_glue", "multirc", ["Accuracy"]) == [mt.accuracy]
    assert len(mt.task_metrics("super_glue", "cb", ["Accuracy"])) == 2
    assert mt.task_metrics("super_glue", "axg", ["Accuracy"]) == []
    assert mt.task_metrics("xsum", None, ["ROUGE", "Other"]) == [mt.rouge, mt.accuracy]
    with pytest.raises(NotFoundError, match="Mean Reciprocal Rank"):
        mt.task_metrics("toy", None, ["Mean Reciprocal Rank"])


def required_args(fn: object) -> tuple[str, ...]:
    """The argument names seqio reads to tell prediction metrics from score metrics."""
    return tuple(name for name, p in inspect.signature(fn).parameters.items()
                 if p.default is inspect.Parameter.empty)


def test_metric_signatures_are_what_seqio_dispatches_on():
    tables = [mt.glue_metrics(s) for s in ("cola", "mrpc", "stsb")]
    tables += [mt.super_glue_metrics(s) for s in ("cb", "multirc", "record")]
    for fn in [*mt.GET_METRICS.values(), *sum(tables, [])]:
        assert required_args(fn) == ("targets", "predictions"), fn
    assert required_args(mt.rank_classification()) == ("targets", "scores")
    assert required_args(mt.rank_classification(num_classes=2)) == ("targets", "scores")


# --------------------------------------------------------------------------- postprocessors


def test_strip_and_class_id_postprocessors():
    assert mt.strip_whitespace(" yes\n") == "yes"
    assert mt.strip_whitespace(b" yes ", is_target=True) == "yes"
    to_id = mt.string_label_to_class_id(["no", "yes"])
    assert (to_id("yes"), to_id("no"), to_id("maybe"), to_id(" yes")) == (1, 0, -1, -1)

    post = mt.class_id_postprocessor(["no", "yes"])
    assert (post(" yes", is_target=True), post("no "), post("Yes")) == (1, 0, -1)
    assert mt.class_id_postprocessor(None) is mt.strip_whitespace
    assert mt.class_id_postprocessor([]) is mt.strip_whitespace
