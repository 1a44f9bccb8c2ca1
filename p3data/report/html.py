"""The report as one self-contained HTML page: overview, dropped rows, mixtures, then one
section per dataset, with the plots inline as SVG."""

from __future__ import annotations

import html

import p3data.report.plots as plots
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
from p3data.tables import html_table

CSS = """
:root { --ink: #1f2933; --muted: #616e7c; --line: #d9e2ec; --bg: #f7f9fb; --accent: #3b6ea8; }
* { box-sizing: border-box; }
body { margin: 0; font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif;
       color: var(--ink); background: #fff; }
header { background: var(--bg); border-bottom: 1px solid var(--line); padding: 24px 32px; }
header h1 { margin: 0 0 4px; font-size: 24px; }
header p, .note { margin: 4px 0; color: var(--muted); }
main { max-width: 1280px; margin: 0 auto; padding: 8px 32px 64px; }
nav { margin: 12px 0 0; }
nav a { margin-right: 16px; color: var(--accent); text-decoration: none; }
h2 { margin: 40px 0 8px; padding-bottom: 4px; border-bottom: 2px solid var(--line); }
h3 { margin: 28px 0 6px; }
code { font: 13px ui-monospace, SFMono-Regular, Menlo, monospace; background: var(--bg);
       padding: 1px 4px; border-radius: 3px; }
.cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(150px, 1fr));
         gap: 12px; margin: 16px 0; }
.card { border: 1px solid var(--line); border-radius: 8px; padding: 10px 14px; }
.card b { display: block; font-size: 22px; font-variant-numeric: tabular-nums; }
.card span { color: var(--muted); font-size: 13px; }
.scroll { overflow-x: auto; margin: 8px 0 16px; }
table { border-collapse: collapse; font-size: 13px; font-variant-numeric: tabular-nums; }
th, td { padding: 4px 8px; border-bottom: 1px solid var(--line); white-space: nowrap; }
th { background: var(--bg); text-align: left; vertical-align: bottom; white-space: normal; }
td.num, th.num { text-align: right; }
tbody tr:hover { background: #eef4fb; }
figure { margin: 12px 0 20px; }
figure svg { width: 100%; max-width: 900px; height: auto; display: block; }
figcaption { color: var(--muted); font-size: 13px; margin-top: 4px; }
details { margin: 8px 0; }
summary { cursor: pointer; color: var(--accent); }
.problems { border-left: 4px solid #c0392b; background: #fdf2f0; padding: 8px 16px; }
.badge { font-size: 12px; padding: 1px 8px; border-radius: 10px; background: #fdebd0;
         color: #7e5109; margin-left: 8px; vertical-align: middle; }
"""


def _figure_html(svg: str, caption: str) -> str:
    return f"<figure>{svg}<figcaption>{html.escape(caption)}</figcaption></figure>"


def _anchor(text: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in text)


def render_html(report: CacheReport) -> str:
    """The whole page: overview, dropped rows, mixtures, then one section per dataset."""
    with plots.style():
        return _page(report)


def _page(report: CacheReport) -> str:
    esc = html.escape
    parts = [f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
             f'<meta name="viewport" content="width=device-width, initial-scale=1">'
             f"<title>p3data report: {esc(report.root)}</title><style>{CSS}</style></head><body>"
             f"<header><h1>Cache report</h1><p><code>{esc(report.root)}</code> · "
             f"{len(report.tasks):,} tasks · p3data {esc(__version__)}</p>"
             '<nav><a href="#overview">Overview</a><a href="#dropped">Dropped rows</a>'
             '<a href="#mixtures">Mixtures</a><a href="#datasets">Datasets</a></nav>'
             "</header><main>"]
    parts.append('<h2 id="overview">Overview</h2><div class="cards">' + "".join(
        f"<div class=card><b>{value:,}</b><span>{esc(name)}</span></div>"
        for name, value in report.totals.items()) + "</div>")
    parts.append(f'<p class="note">{esc(sample_note(report))}</p>')
    if report.problems:
        parts.append('<div class="problems"><p><b>Problems</b></p><ul>' + "".join(
            f"<li>{esc(problem)}</li>" for problem in report.problems) + "</ul></div>")
    truncation = plots.truncation_svg(report)
    parts.append(_figure_html(truncation, "Where the length limits cut: datasets with any "
                              "sampled example over the limits.") if truncation else
                 f"<p>No sampled example is longer than {report.lengths.inputs:,} input or "
                 f"{report.lengths.targets:,} target tokens.</p>")
    dropped = dropped_rows(report.tasks)
    parts.append('<h2 id="dropped">Dropped rows</h2>')
    if dropped:
        parts.append(html_table("reasons", REASON_HEADER, reason_rows(report.tasks)))
        parts.append(f"<details><summary>By task and split ({len(dropped):,} rows)</summary>"
                     + html_table("dropped", DROPPED_HEADER, dropped) + "</details>")
    else:
        parts.append("<p>No row was dropped.</p>")
    parts.append('<h2 id="mixtures">Mixtures</h2><p class="note">T0 mixtures with tasks in '
                 "this cache. A mixture with only some of its tasks cached is shown over "
                 "those tasks: its shares are of their total.</p>")
    parts.append(html_table("mixtures", MIXTURE_HEADER, mixture_rows(report)))
    if languages := language_section(report.tasks):
        parts.append(f'<h3 id="languages">Languages</h3><p class="note">{LANGUAGE_NOTE}</p>'
                     + html_table("languages", *languages))
    for mixture in report.mixtures:
        badge = "" if mixture.complete else (
            f'<span class="badge">{len(mixture.rates)} of {mixture.defined_tasks} tasks</span>')
        parts.append(f'<h3 id="mixture-{_anchor(mixture.name)}">{esc(mixture.name)}{badge}</h3>')
        parts.append(_figure_html(plots.composition_svg(mixture, report),
                                  "Share of the mixture by dataset (number of tasks)."))
        lengths_svg = plots.mixture_lengths_svg(mixture, report)
        if lengths_svg:
            parts.append(_figure_html(lengths_svg, "Token lengths of an example drawn from "
                                      "the mixture (each task's sample weighted by its share)."))
        parts.append(f"<details><summary>Rates and shares of {len(mixture.rates):,} tasks"
                     "</summary>" + html_table("shares", SHARE_HEADER,
                                               share_rows(mixture, report)) + "</details>")
    if fewshot := fewshot_rows(report.tasks):
        parts.append('<h2 id="fewshot">Few-shot variants</h2>'
                     f'<p class="note">{esc(STATS_LEGEND)}.</p>')
        parts.append(html_table("fewshot", FEWSHOT_HEADER, fewshot))
    parts.append('<h2 id="datasets">Datasets</h2>')
    for dataset, tasks in report.datasets().items():
        parts.append(f'<h3 id="dataset-{_anchor(dataset)}">{esc(dataset)}</h3>')
        if any(task.lengths is not None for task in tasks):
            parts.append(_figure_html(
                plots.ridgeline_svg(dataset, tasks, report),
                f"Token-length histogram of each task's `{report.split}` sample (one ridge per "
                "task, scaled to its peak); dashed: the length limits."))
        parts.append(html_table("counts", COUNT_HEADER, count_rows(tasks)))
        lengths = length_rows(tasks, report.lengths)
        if lengths:
            parts.append(html_table("lengths", LENGTH_HEADER, lengths))
    parts.append("</main></body></html>\n")
    return "".join(parts)


