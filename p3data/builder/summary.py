"""What a cache run did, as the command line reports it: one row per task, the rows dropped
by reason when the row rule, a dataset step or a cap is not T0's (xP3's), the schema
mismatches by dataset split, and one line per failure."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from p3data.builder.jobs import CachePlan
from p3data.builder.selection import NOT_SELECTED, OVER_CAP
from p3data.fewshot.stats import STATS_COLUMNS, STATS_LEGEND, FewshotStats
from p3data.format import layout
from p3data.format.manifest import read_manifests
from p3data.tables import text_table
from p3data.taskset import source_label
from p3data.templates.render import (
    EMPTY_INPUTS,
    EXTRA_SEPARATOR,
    NO_SEPARATOR,
    TEMPLATE_SPLIT_ERROR,
)

# Why T0's row rule drops a row: a run that drops rows for no other reason sums them, as always.
T0_DROPS = frozenset({NO_SEPARATOR, EXTRA_SEPARATOR, EMPTY_INPUTS})


@dataclass
class RunResult:
    plan: CachePlan
    built: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    tracebacks: list[str] = field(default_factory=list)  # of unexpected errors (bugs)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.failed


def summary_table(result: RunResult) -> str:
    """Per task: examples, tokens, rows dropped by the row rule (or a dataset step), rows that
    failed to render, rows that do not fit the catalog's schema; then totals, the dropped rows
    by reason if some reason is not T0's, each task split with rows on which xP3's recipe
    dropped the whole split (`TEMPLATE_SPLIT_ERROR`: here only the rows), the few-shot
    variants' figures, the schema mismatches by dataset split, one line per failed task, and
    the time."""
    config = result.plan.config
    tasks = sorted(set(result.built) | set(result.plan.done))
    rows, totals = [], [0] * 5
    reasons: Counter[str] = Counter()
    template_splits: list[str] = []
    mismatches: dict[tuple[str, str, str], int] = {}  # (dataset, source split, category) -> rows
    fewshot: list[list] = []
    folders = [layout.task_dir(config.output_dir, task, config.p3_layout) for task in tasks]
    for task, manifest in zip(tasks, read_manifests(folders), strict=True):
        if manifest.fewshot is not None:
            stats = FewshotStats.summed(r.fewshot for r in manifest.splits.values())
            fewshot.append([task, *stats.cells()])
        counts = [0] * 5
        for split, record in manifest.splits.items():
            reasons.update(record.dropped)
            if count := record.dropped.get(TEMPLATE_SPLIT_ERROR):
                template_splits.append(
                    f"{TEMPLATE_SPLIT_ERROR.upper()} {task} {split}: {count:,} of "
                    f"{record.rows_read:,} rows dropped alone (xP3's recipe dropped the "
                    "template's whole split on one)")
            for category, count in record.schema.items():
                key = (manifest.dataset, source_label(manifest.split_mapping[split]), category)
                mismatches[key] = max(mismatches.get(key, 0), count)
            counts = [a + b for a, b in zip(counts, (
                record.examples, record.tokens, sum(record.dropped.values()),
                record.render_errors, sum(record.schema.values())), strict=True)]
        totals = [a + b for a, b in zip(totals, counts, strict=True)]
        rows.append([task, *counts])
    rows.append([f"TOTAL ({len(tasks)} tasks)", *totals])
    not_t0 = bool(set(reasons) - T0_DROPS)
    capped = bool(set(reasons) & {NOT_SELECTED, OVER_CAP})
    lines = [text_table(["task", "examples", "tokens", "dropped", "errors", "schema"], rows),
             "dropped: left out by " + ("the row rule, a dataset step or the cap" if capped else
                                        "the row rule or a dataset step" if not_t0 else
                                        "T0's row rule")
             + " · errors: failed to render · schema: rows unlike the catalog's schema"]
    if not_t0:
        lines.append("dropped by reason: " + ", ".join(
            f"{reason} {count:,}" for reason, count in sorted(reasons.items())))
    lines += template_splits
    if fewshot:
        lines += ["", text_table(["few-shot task", *STATS_COLUMNS], fewshot), STATS_LEGEND]
    lines += [f"SCHEMA {dataset} {split}: {count:,} rows: {category}"
              for (dataset, split, category), count in sorted(mismatches.items())]
    lines += [f"FAILED {task}: {reason}" for task, reason in sorted(result.failed.items())]
    lines.append(f"time: {result.seconds:.1f} s")
    return "\n".join(lines)

