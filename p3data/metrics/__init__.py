"""T0's metrics and postprocessors, rebuilt on scikit-learn, scipy, sacrebleu and rouge-score.

T0's tasks named functions from Google's `t5` package, which cannot be installed next to
current seqio. These keep t5's names, output keys and numbers (most results are x100, as in
t5) and seqio's conventions: a metric takes `(targets, predictions)` and returns
`{name: value}`; a postprocessor takes `(output, example=None, is_target=False)`. This
module adds T0's choice of metrics per task.
"""

from __future__ import annotations

from collections.abc import Sequence

from p3data.errors import NotFoundError
from p3data.metrics.classification import (
    MetricFn,
    accuracy,
    all_match,
    auc,
    deduplicate_metric,
    f1_score_with_invalid,
    matthews_corrcoef,
    mean_group_metric,
    mean_multiclass_f1,
    multirc_f1_over_all_answers,
    pearson_corrcoef,
    sequence_accuracy,
    spearman_corrcoef,
)
from p3data.metrics.postprocessors import (
    Postprocessor,
    class_id_postprocessor,
    rank_classification_postprocessor,
    string_label_to_class_id,
    strip_whitespace,
)
from p3data.metrics.rank import rank_classification
from p3data.metrics.text import bleu, coqa_f1, edit_distance, rouge, span_squad, squad, trivia_qa

__all__ = [
    "GET_METRICS",
    "MetricFn",
    "Postprocessor",
    "accuracy",
    "all_match",
    "auc",
    "bleu",
    "class_id_postprocessor",
    "coqa_f1",
    "deduplicate_metric",
    "edit_distance",
    "f1_score_with_invalid",
    "glue_metrics",
    "matthews_corrcoef",
    "mean_group_metric",
    "mean_multiclass_f1",
    "multirc_f1_over_all_answers",
    "pearson_corrcoef",
    "rank_classification",
    "rank_classification_postprocessor",
    "rouge",
    "sequence_accuracy",
    "span_squad",
    "spearman_corrcoef",
    "squad",
    "string_label_to_class_id",
    "strip_whitespace",
    "super_glue_metrics",
    "task_metrics",
    "trivia_qa",
]

GET_METRICS: dict[str, MetricFn] = {
    "BLEU": bleu,
    "ROUGE": rouge,
    "Span Squad": span_squad,
    "Squad": squad,
    "Trivia QA": trivia_qa,
    "Accuracy": accuracy,
    "Sequence Accuracy": sequence_accuracy,
    "Pearson Correlation": pearson_corrcoef,
    "Spearman Correlation": spearman_corrcoef,
    "MultiRC": multirc_f1_over_all_answers,
    "AUC": auc,
    "COQA F1": coqa_f1,
    "Edit Distance": edit_distance,
    "Other": accuracy,
}
"""promptsource metric names to functions, as T0 maps them ("Mean Reciprocal Rank" is absent)."""

_GLUE_METRICS: dict[str, list[MetricFn]] = {
    "cola": [matthews_corrcoef],
    "sst2": [accuracy],
    "mrpc": [f1_score_with_invalid, accuracy],
    "stsb": [pearson_corrcoef, spearman_corrcoef],
    "qqp": [f1_score_with_invalid, accuracy],
    "mnli": [accuracy],
    "mnli_matched": [accuracy],
    "mnli_mismatched": [accuracy],
    "qnli": [accuracy],
    "rte": [accuracy],
    "wnli": [accuracy],
    "ax": [],
}

_SUPER_GLUE_METRICS: dict[str, list[MetricFn]] = {
    "boolq": [accuracy],
    "cb": [mean_multiclass_f1(3), accuracy],
    "copa": [accuracy],
    "multirc": [multirc_f1_over_all_answers, mean_group_metric(all_match)],
    "record": [deduplicate_metric(squad)],
    "rte": [accuracy],
    "wic": [accuracy],
    "axb": [],
    "axg": [],
}


def glue_metrics(subset: str) -> list[MetricFn]:
    """t5's `get_glue_metric`; an unknown subset is an error, as in t5."""
    return list(_lookup(_GLUE_METRICS, subset, "GLUE subset"))


def super_glue_metrics(subset: str) -> list[MetricFn]:
    """t5's `get_super_glue_metric`; t5 has no "wsc.fixed" entry, so that is an error too."""
    return list(_lookup(_SUPER_GLUE_METRICS, subset, "SuperGLUE subset"))


def _lookup(table: dict, name: str, what: str):
    try:
        return table[name]
    except KeyError:
        raise NotFoundError(f"no metrics for the {what} {name!r}; known: "
                            + ", ".join(sorted(table))) from None


def task_metrics(dataset: str, subset: str | None, metric_names: Sequence[str]) -> list[MetricFn]:
    """The metrics T0 gives a template's task.

    GLUE and SuperGLUE use t5's tables, except that SuperGLUE wsc.fixed and multirc fall
    back to accuracy (their t5 metrics need pre/postprocessing T0 does not do); any other
    dataset maps the template's promptsource metric names through `GET_METRICS`.
    """
    if dataset == "glue":
        return glue_metrics(str(subset))
    if dataset == "super_glue":
        if subset in ("wsc.fixed", "multirc"):
            return [accuracy]
        return super_glue_metrics(str(subset))
    unknown = [name for name in metric_names if name not in GET_METRICS]
    if unknown:
        raise NotFoundError(f"{dataset}/{subset}: no metric function for {unknown}; known: "
                            + ", ".join(sorted(GET_METRICS)))
    return [GET_METRICS[name] for name in metric_names]
