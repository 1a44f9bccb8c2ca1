"""Text metrics: BLEU, ROUGE, edit distance and QA scores (SQuAD, TriviaQA, CoQA)."""

from __future__ import annotations

import collections
import re
import string
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np


def bleu(targets: Sequence[Any], predictions: Sequence[str]) -> dict[str, float]:
    """Corpus BLEU, configured as t5 does: "intl" tokenizer, exp smoothing, case-sensitive.

    String targets are one reference each. If targets are lists, t5 hands them to sacrebleu
    as they are, i.e. as reference *streams* (one list per reference set, not per example).
    """
    import sacrebleu  # imported when scored: keeps `import p3data.tasks` fast

    if targets and isinstance(targets[0], list | tuple):
        references = [list(stream) for stream in targets]
    else:
        references = [list(targets)]
    score = sacrebleu.corpus_bleu(
        list(predictions),
        references,
        smooth_method="exp",
        smooth_value=0.0,
        force=False,
        lowercase=False,
        tokenize="intl",
        use_effective_order=False,
    )
    return {"bleu": float(score.score)}


_ROUGE_KEYS = ("rouge1", "rouge2", "rougeLsum")


def rouge(targets: Sequence[str], predictions: Sequence[str]) -> dict[str, float]:
    """ROUGE-1/2/Lsum F-measure, as t5 reports it.

    Like t5, " . " becomes " .\\n" so rougeLsum sees sentences, and the score is the `mid`
    of rouge-score's BootstrapAggregator: the median of 1,000 resampled means, which is
    close to, but not always exactly, the plain mean (it uses numpy's global RNG).
    """
    from rouge_score import rouge_scorer, scoring  # pulls in nltk: only when scored

    scorer = rouge_scorer.RougeScorer(list(_ROUGE_KEYS))
    aggregator = scoring.BootstrapAggregator()
    for target, prediction in zip(targets, predictions, strict=True):
        aggregator.add_scores(
            scorer.score(target=_split_sentences(target), prediction=_split_sentences(prediction))
        )
    result = aggregator.aggregate()
    return {key: 100 * float(result[key].mid.fmeasure) for key in _ROUGE_KEYS}


def _split_sentences(summary: str) -> str:
    return summary.replace(" . ", " .\n")


def edit_distance(targets: Sequence[str], predictions: Sequence[str]) -> dict[str, float]:
    """Lower-cased word-level Levenshtein distance; words are pieces between non-\\w characters."""
    distances = [
        _levenshtein(re.split(r"[^\w]", p.lower()), re.split(r"[^\w]", t.lower()))
        for p, t in zip(predictions, targets, strict=True)
    ]
    return {
        "min_edit": float(min(distances)),
        "max_edit": float(max(distances)),
        "mean_edit": float(np.mean(distances)),
        "median_edit": float(np.median(distances)),
        "sum_edit": float(sum(distances)),
    }


def _levenshtein(a: Sequence[str], b: Sequence[str]) -> int:
    previous = list(range(len(b) + 1))
    for i, x in enumerate(a, start=1):
        current = [i]
        for j, y in enumerate(b, start=1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (x != y)))
        previous = current
    return previous[-1]


def squad(targets: Sequence[Sequence[str]], predictions: Sequence[str]) -> dict[str, float]:
    """Exact match and token F1, best over each question's answers, after SQuAD normalisation."""
    return _qa_metrics(
        [[_normalize_squad(t) for t in answers] for answers in targets],
        [_normalize_squad(p) for p in predictions],
    )


def trivia_qa(targets: Sequence[Sequence[str]], predictions: Sequence[str]) -> dict[str, float]:
    """As `squad`, with TriviaQA's normalisation (punctuation becomes a space)."""
    return _qa_metrics(
        [[_normalize_trivia_qa(t) for t in answers] for answers in targets],
        [_normalize_trivia_qa(p) for p in predictions],
    )


def span_squad(
    targets: Sequence[Mapping[str, Any]], predictions: Sequence[str]
) -> dict[str, float]:
    """SQuAD scores for predictions like "start: 3 end: 6", word indices into the context.

    Targets are `{"answers": [...], "context": str}`. Words are split on non-\\w characters;
    a prediction that does not parse becomes the empty answer.
    """
    answers = [t["answers"] for t in targets]
    spans = [
        _span_text(_words(t["context"]), _words(p))
        for t, p in zip(targets, predictions, strict=True)
    ]
    return squad(answers, spans)


def _words(text: str) -> list[str]:
    return re.sub(r"\W", " ", text).split()


def _span_text(context: list[str], prediction: list[str]) -> str:
    if len(prediction) < 4:
        return ""
    try:
        start, end = int(prediction[1]), int(prediction[3])
    except ValueError:
        return ""
    return " ".join(context[start : end + 1])


def coqa_f1(targets: Sequence[Sequence[str]], predictions: Sequence[str]) -> dict[str, float]:
    """Mean over turns of the best token F1 against any answer, with CoQA's normalisation."""
    best = []
    for answers, prediction in zip(targets, predictions, strict=True):
        predicted = _coqa_tokens(prediction)
        best.append(max(_coqa_token_f1(_coqa_tokens(a), predicted) for a in answers))
    return {"f1": 100 * float(np.mean(best))}


def _coqa_tokens(text: str) -> list[str]:
    text = "".join(ch for ch in text.lower() if ch not in string.punctuation)
    return re.sub(r"\b(a|an|the)\b", " ", text).split()


def _coqa_token_f1(target: list[str], prediction: list[str]) -> float:
    """Token F1, except that two empty answers agree (score 1)."""
    if not target and not prediction:
        return 1.0
    return _token_f1(target, prediction)


def _normalize_answer(text: str, punctuation: str, replacement: str) -> str:
    text = "".join(replacement if ch in punctuation else ch for ch in text.lower())
    return " ".join(re.sub(r"\b(a|an|the)\b", " ", text).split())


def _normalize_squad(answer: str) -> str:
    return _normalize_answer(answer, string.punctuation, "")


def _normalize_trivia_qa(answer: str) -> str:
    return _normalize_answer(answer, string.punctuation + "‘’´`_", " ")


def _token_f1(target: list[str], prediction: list[str]) -> float:
    """Token-overlap F1; 0 when nothing overlaps (so two empty answers also score 0)."""
    overlap = sum((collections.Counter(target) & collections.Counter(prediction)).values())
    if overlap == 0:
        return 0.0
    precision = overlap / len(prediction)
    recall = overlap / len(target)
    return 2 * precision * recall / (precision + recall)


def _qa_metrics(targets: list[list[str]], predictions: list[str]) -> dict[str, float]:
    em, f1 = [], []
    for answers, prediction in zip(targets, predictions, strict=True):
        em.append(max(float(answer == prediction) for answer in answers))
        f1.append(max(_token_f1(answer.split(), prediction.split()) for answer in answers))
    return {"em": 100 * float(np.mean(em)), "f1": 100 * float(np.mean(f1))}
