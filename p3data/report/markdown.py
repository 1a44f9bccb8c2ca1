"""The report's Markdown twin: the page's numbers as tables, for diffs and terminals (the
plots are in the HTML)."""

from __future__ import annotations

from p3data import __version__
from p3data.fewshot.stats import STATS_LEGEND
from p3data.report.collect import CacheReport
from p3data.report.content import (
    COUNT_HEADER,
    DROPPED_HEADER,
    FEWSHOT_HEADER,
    LANGUAGE_NOTE,
    LENGTH_HEADER,
    MIXTURE_HEADER,
    REASON_HEADER,
    SHARE_HEADER,
    count_rows,
    dropped_rows,
    fewshot_rows,
    language_section,
    length_rows,
    mixture_rows,
    reason_rows,
    sample_note,
    share_rows,
)
from p3data.tables import markdown_table


def render_markdown(report: CacheReport, html_name: str | None = None) -> str:
    """The same numbers as the page; `html_name` links to it."""
    lines = [f"# Cache report: `{report.root}`", "",
             f"p3data {__version__} · " + " · ".join(
                 f"{value:,} {name}" for name, value in report.totals.items()), "",
             sample_note(report)]
    if html_name:
        lines += ["", f"Plots: see [{html_name}]({html_name})."]
    if report.problems:
        lines += ["", "## Problems", "", *(f"- {problem}" for problem in report.problems)]
    dropped = dropped_rows(report.tasks)
    lines += ["", "## Dropped rows", ""]
    lines += [markdown_table(REASON_HEADER, reason_rows(report.tasks)), "",
              markdown_table(DROPPED_HEADER, dropped)] if dropped else ["No row was dropped."]
    lines += ["", "## Mixtures", "", markdown_table(MIXTURE_HEADER, mixture_rows(report))]
    if languages := language_section(report.tasks):
        lines += ["", "## Languages", "", LANGUAGE_NOTE, "", markdown_table(*languages)]
    for mixture in report.mixtures:
        lines += ["", f"### {mixture.name}", "",
                  markdown_table(SHARE_HEADER, share_rows(mixture, report))]
    if fewshot := fewshot_rows(report.tasks):
        lines += ["", "## Few-shot variants", "", markdown_table(FEWSHOT_HEADER, fewshot), "",
                  STATS_LEGEND + "."]
    lines += ["", "## Tasks", "", markdown_table(COUNT_HEADER, count_rows(report.tasks)),
              "", f"## Token lengths (`{report.split}`)", "",
              markdown_table(LENGTH_HEADER, length_rows(report.tasks, report.lengths)), ""]
    return "\n".join(lines)
