"""Rank classification: pick the highest-scoring answer choice, as T0's `_score_eval` tasks do."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np
import scipy.special
import sklearn.metrics

from p3data.metrics.classification import MetricFn, macro_f1


def rank_classification(num_classes: int | None = None) -> MetricFn:
    """Accuracy of picking the highest-scoring choice per input, as t5 scores `_score_eval` tasks.

    Targets are `(idx, is_correct, weight)` tuples (from `rank_classification_postprocessor`),
    one per (input, choice), with `idx = (input_index, choice_index)`; predictions are the
    choices' log-likelihoods. Choosing any correct choice counts as correct. With
    `num_classes` (fixed choices) every input must have exactly that many choices, and
    macro F1 (more than 2 classes) or F1, AUC-ROC and AUC-PR for choice 1 (2 classes) are
    added, unless some input has several correct choices.
    """

    def metric(targets: Sequence[Sequence[Any]], scores: Sequence[float]) -> dict[str, float]:
        rows = sorted(zip(targets, scores, strict=True), key=lambda row: tuple(row[0][0]))
        if not num_classes:
            return _rank_accuracy(rows)
        return _rank_fixed_classes(rows, num_classes)

    return metric


def _rank_accuracy(rows: list[tuple[Sequence[Any], float]]) -> dict[str, float]:
    """Variable choice counts: group by input index, weight by the picked choice's weight."""
    correct = total = 0.0
    for _, group in itertools.groupby(rows, key=lambda row: row[0][0][0]):
        choices = list(group)
        best, _ = choices[int(np.argmax([score for _, score in choices]))]
        correct += float(best[1]) * float(best[2])
        total += float(best[2])
    return {"accuracy": 100 * correct / total}


def _rank_fixed_classes(
    rows: list[tuple[Sequence[Any], float]], num_classes: int
) -> dict[str, float]:
    """Fixed choice lists: one row of `num_classes` scores per input, weighted by choice 0."""
    if len(rows) % num_classes:
        raise ValueError(f"{len(rows)} rank-classification rows, not a multiple of {num_classes}")
    labels = np.array([bool(t[1]) for t, _ in rows]).reshape(-1, num_classes)
    weights = np.array([float(t[2]) for t, _ in rows]).reshape(-1, num_classes)[:, 0]
    # t5 ranks in float32, so ties and softmax probabilities match it there.
    log_likelihoods = np.array([score for _, score in rows], np.float32).reshape(-1, num_classes)
    picked = log_likelihoods.argmax(-1)
    hits = labels[np.arange(len(labels)), picked]
    result = {"accuracy": 100 * float(np.average(hits, weights=weights))}
    if (labels.sum(-1) > 1).any():
        return result
    if num_classes > 2:
        picked_indicator = np.eye(num_classes, dtype=int)[picked]
        result[f"mean_{num_classes}class_f1"] = macro_f1(
            labels.astype(int), picked_indicator, num_classes, weights
        )
        return result
    # Inputs with no correct choice count as class 0 here, as argmax of an all-False row does in t5.
    result["f1"] = 100 * float(
        sklearn.metrics.f1_score(labels.argmax(-1), picked, sample_weight=weights, zero_division=0)
    )
    positive = labels[:, 1]
    probability = scipy.special.softmax(log_likelihoods, axis=-1)[:, 1]
    result["auc-roc"] = 100 * float(
        sklearn.metrics.roc_auc_score(positive, probability, sample_weight=weights)
    )
    result["auc-pr"] = 100 * float(
        sklearn.metrics.average_precision_score(positive, probability, sample_weight=weights)
    )
    return result
