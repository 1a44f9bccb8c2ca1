"""Classification, correlation and grouped metrics, with t5's names, keys and x100 scale."""

from __future__ import annotations

import collections
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import scipy.stats
import sklearn.metrics

MetricFn = Callable[[Sequence[Any], Sequence[Any]], dict[str, float]]
"""seqio's metric shape: `(targets, predictions) -> {name: value}`."""


def accuracy(targets: Sequence[Any], predictions: Sequence[Any]) -> dict[str, float]:
    return {"accuracy": 100 * float(sklearn.metrics.accuracy_score(targets, predictions))}


def sequence_accuracy(targets: Sequence[Any], predictions: Sequence[Any]) -> dict[str, float]:
    """Share of predictions that equal their target exactly."""
    same = [p == t for p, t in zip(predictions, targets, strict=True)]
    return {"sequence_accuracy": 100 * float(np.mean(same))}


def f1_score_with_invalid(targets: Sequence[Any], predictions: Sequence[Any]) -> dict[str, float]:
    """Binary F1 where a prediction other than 0 or 1 (e.g. -1, unmatched text) counts as wrong."""
    gold = np.asarray(targets)
    pred = np.asarray(predictions)
    pred = np.where((pred == 0) | (pred == 1), pred, 1 - gold)
    return {"f1": 100 * float(sklearn.metrics.f1_score(gold, pred, zero_division=0))}


def mean_multiclass_f1(num_classes: int) -> MetricFn:
    """Macro F1 over classes 0..num_classes-1; out-of-range predictions (-1) only cost recall."""

    def metric(targets: Sequence[Any], predictions: Sequence[Any]) -> dict[str, float]:
        return {f"mean_{num_classes}class_f1": macro_f1(targets, predictions, num_classes)}

    return metric


def matthews_corrcoef(targets: Sequence[Any], predictions: Sequence[Any]) -> dict[str, float]:
    """GLUE CoLA's metric (t5 wraps sklearn's under this key)."""
    value = sklearn.metrics.matthews_corrcoef(targets, predictions)
    return {"matthews_corrcoef": 100 * float(value)}


def pearson_corrcoef(targets: Sequence[Any], predictions: Sequence[Any]) -> dict[str, float]:
    return {"pearson_corrcoef": 100 * float(scipy.stats.pearsonr(targets, predictions)[0])}


def spearman_corrcoef(targets: Sequence[Any], predictions: Sequence[Any]) -> dict[str, float]:
    return {"spearman_corrcoef": 100 * float(scipy.stats.spearmanr(targets, predictions)[0])}


def auc(
    targets: Sequence[Any], predictions: Sequence[Any], targets_threshold: float | None = None
) -> dict[str, float]:
    """Area under the ROC and PR curves; t5 leaves these on a 0-1 scale, unlike the rest."""
    gold = np.asarray(targets)
    if targets_threshold is not None:
        gold = (gold >= targets_threshold).astype(np.int32)
    return {
        "auc-roc": float(sklearn.metrics.roc_auc_score(gold, predictions)),
        "auc-pr": float(sklearn.metrics.average_precision_score(gold, predictions)),
    }


def all_match(targets: Sequence[Any], predictions: Sequence[Any]) -> dict[str, float]:
    """100 if the whole list of predictions equals the whole list of targets, else 0."""
    return {"exact_match": 100 * float(np.array_equal(targets, predictions))}


def multirc_f1_over_all_answers(
    targets: Sequence[Mapping[str, Any]], predictions: Sequence[Mapping[str, Any]]
) -> dict[str, float]:
    """`f1_score_with_invalid` over the "value" of MultiRC's per-answer dicts."""
    return f1_score_with_invalid([t["value"] for t in targets], [p["value"] for p in predictions])


def deduplicate_metric(metric_fn: MetricFn) -> MetricFn:
    """Score only the first example of each "group" (ReCoRD repeats inputs, one per answer)."""

    def metric(
        targets: Sequence[Mapping[str, Any]], predictions: Sequence[Mapping[str, Any]]
    ) -> dict[str, float]:
        seen: set[Any] = set()
        kept_targets, kept_predictions = [], []
        for target, prediction in zip(targets, predictions, strict=True):
            if target["group"] not in seen:
                seen.add(target["group"])
                kept_targets.append(target["value"])
                kept_predictions.append(prediction["value"])
        return metric_fn(kept_targets, kept_predictions)

    return metric


def mean_group_metric(metric_fn: MetricFn) -> MetricFn:
    """Average of `metric_fn` computed separately on each "group" (e.g. a MultiRC question)."""

    def metric(
        targets: Sequence[Mapping[str, Any]], predictions: Sequence[Mapping[str, Any]]
    ) -> dict[str, float]:
        groups: dict[Any, tuple[list[Any], list[Any]]] = collections.defaultdict(lambda: ([], []))
        for target, prediction in zip(targets, predictions, strict=True):
            groups[target["group"]][0].append(target["value"])
            groups[target["group"]][1].append(prediction["value"])
        scores: dict[str, list[float]] = collections.defaultdict(list)
        for group_targets, group_predictions in groups.values():
            for name, value in metric_fn(group_targets, group_predictions).items():
                scores[name].append(value)
        return {name: float(np.mean(values)) for name, values in scores.items()}

    return metric


def macro_f1(
    targets: Any, predictions: Any, num_classes: int, sample_weight: Any = None
) -> float:
    """Unweighted mean of per-class F1 (x100); a class never seen nor predicted scores 0."""
    return 100 * float(
        sklearn.metrics.f1_score(
            targets,
            predictions,
            labels=list(range(num_classes)),
            average="macro",
            sample_weight=sample_weight,
            zero_division=0,
        )
    )
