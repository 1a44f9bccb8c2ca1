"""What the page and its Markdown twin both say: the tables' headers and rows, and the note
on how token lengths were sampled. Cells are formatted by `p3data.tables`."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from p3data.fewshot.stats import STATS_COLUMNS
from p3data.quality.languages import LanguageCount, by_language, language_table
from p3data.quality.validate import Lengths
from p3data.report.collect import CacheReport, MixtureShare, TaskReport
from p3data.tables import Cell

COUNT_HEADER = ("Task", "Split", "Rows read", "Rows kept", "Dropped", "Errors", "Examples",
                "Input tokens", "Target tokens", "Max input tokens", "Max target tokens",
                "Shards")
LENGTH_HEADER = ("Task", "Sampled", "Input p50", "Input p95", "Input max", "Target+EOS p50",
                 "Target+EOS p95", "Target+EOS max", "Inputs cut %", "Targets cut %")
SHARE_HEADER = ("Task", "Dataset", "Rate", "Share %")
MIXTURE_HEADER = ("Mixture", "Tasks cached", "Tasks defined", "Rate", "Total rate",
                  "Examples cut %")
DROPPED_HEADER = ("Task", "Split", "Reason", "Rows")
REASON_HEADER = ("Reason", "Tasks", "Rows")
FEWSHOT_HEADER = ("Task", *(column[0].upper() + column[1:] for column in STATS_COLUMNS))


def count_rows(tasks: Iterable[TaskReport]) -> list[list[Cell]]:
    return [[task.task, s.split, s.rows_read, s.rows_kept, sum(s.dropped.values()), s.errors,
             s.examples, s.inputs_tokens, s.targets_tokens, s.inputs_max_tokens,
             s.targets_max_tokens, s.num_shards] for task in tasks for s in task.splits]


def length_rows(tasks: Iterable[TaskReport], lengths: Lengths) -> list[list[Cell]]:
    rows: list[list[Cell]] = []
    for task in tasks:
        sample = task.lengths
        if sample is None:
            continue
        cut_in, cut_out, _ = sample.over(lengths)
        rows.append([task.task, len(sample.inputs),
                     *(int(np.percentile(values, q, method="higher"))
                       for values in (sample.inputs, sample.targets) for q in (50, 95, 100)),
                     100 * cut_in, 100 * cut_out])
    return rows


def dropped_rows(tasks: Iterable[TaskReport]) -> list[list[Cell]]:
    return [[task.task, s.split, reason, count] for task in tasks for s in task.splits
            for reason, count in sorted(s.dropped.items())]


def reason_rows(tasks: Iterable[TaskReport]) -> list[list[Cell]]:
    """Dropped rows by reason: how many tasks a reason touches and how many rows it costs."""
    touched: dict[str, set[str]] = {}
    rows: dict[str, int] = {}
    for task in tasks:
        for split in task.splits:
            for reason, count in split.dropped.items():
                touched.setdefault(reason, set()).add(task.task)
                rows[reason] = rows.get(reason, 0) + count
    return [[reason, len(touched[reason]), rows[reason]] for reason in sorted(rows)]


def fewshot_rows(tasks: Iterable[TaskReport]) -> list[list[Cell]]:
    """The few-shot variants' figures (T0's own tasks have none)."""
    return [[task.task, *task.fewshot.cells()] for task in tasks if task.fewshot is not None]


def share_rows(mixture: MixtureShare, report: CacheReport) -> list[list[Cell]]:
    return [[name, report.by_task[name].dataset, rate, 100 * mixture.share(name)]
            for name, rate in sorted(mixture.rates.items(), key=lambda item: -(item[1] or 0))]


def mixture_rows(report: CacheReport) -> list[list[Cell]]:
    rows: list[list[Cell]] = []
    for mixture in report.mixtures:
        over = report.weighted_over(mixture)
        rows.append([mixture.name, len(mixture.rates), mixture.defined_tasks,
                     mixture.spec.rate_rule, mixture.total, 100 * over[2] if over else None])
    return rows


def language_counts(tasks: Iterable[TaskReport]) -> list[LanguageCount]:
    """Templates, tasks and kept examples (every split) per language folder (xP3's tasks)."""
    return by_language((task.language, task.template_id,
                        sum(split.examples for split in task.splits)) for task in tasks)


def language_section(tasks: Iterable[TaskReport]) -> tuple[list[str], list[list[Cell]]] | None:
    """The per-language table's header and rows; None when no task has a language (T0's)."""
    counts = language_counts(tasks)
    return language_table(counts) if counts else None


LANGUAGE_NOTE = ("Per language folder: distinct templates, tasks, and the examples they kept "
                 "over every split.")


def sample_note(report: CacheReport) -> str:
    return (f"Token lengths: the first {report.max_records:,} records (at most) of each task's "
            f"`{report.split}` split; inputs as cached (no EOS), targets with their EOS. "
            f"Cut at {report.lengths.inputs:,} input / {report.lengths.targets:,} target tokens. "
            "Counts come from the manifests; their token counts exclude EOS, as seqio's stats do.")
