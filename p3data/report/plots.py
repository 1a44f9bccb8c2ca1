"""The report's plots: matplotlib figures as inline SVG, so the page opens anywhere with
nothing to fetch. Figures are built without pyplot (no GUI backend, no global state)."""

from __future__ import annotations

import io
from collections.abc import Sequence
from contextlib import AbstractContextManager

import numpy as np

from p3data import t0
from p3data.report.collect import CacheReport, MixtureShare, TaskReport

INPUTS_COLOR, TARGETS_COLOR, LIMIT_COLOR = "#3b6ea8", "#d9822b", "#c0392b"

# A fixed salt keeps SVG ids, and so the page, the same from run to run.
STYLE = {"svg.hashsalt": "p3data", "font.size": 9, "axes.spines.top": False,
         "axes.spines.right": False}


def style() -> AbstractContextManager:
    """The plots' style, for drawing them (settings apply when a figure is drawn and saved)."""
    import matplotlib

    return matplotlib.rc_context(STYLE)


def _svg(figure) -> str:
    out = io.StringIO()
    figure.savefig(out, format="svg", metadata={"Date": None})
    text = out.getvalue()
    return text[text.index("<svg"):]


def _figure(width: float, height: float):
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), layout="constrained")


def _edges(samples: Sequence[np.ndarray], limit: int) -> np.ndarray:
    """Log-spaced bins over the samples' range (and the limit, when it is near), falling
    between whole token counts so that short targets each get a bin instead of gaps."""
    low = max(1, min(int(s.min()) for s in samples))
    high = max(int(s.max()) for s in samples)
    if limit <= 1.5 * high:
        high = max(high, limit)
    points = np.unique(np.round(np.geomspace(low, max(high, low + 1) * 1.1, 48)))
    return np.append(points, points[-1] + 1) - 0.5


def _ticks(low: float, high: float) -> list[float]:
    """Round token counts for a log axis: as few as still give four labels, or evenly
    spaced ones when the range is too narrow for that."""
    from matplotlib.ticker import MaxNLocator

    for multiples in ((1,), (1, 3), (1, 2, 5)):
        ticks = [m * 10**k for k in range(7) for m in multiples if low <= m * 10**k <= high]
        if len(ticks) >= 4:
            return ticks
    return [tick for tick in MaxNLocator(5, integer=True).tick_values(low, high)
            if low <= tick <= high]


def _length_axis(axis, edges: np.ndarray, limit: int, title: str) -> None:
    """A log x axis of token counts with the limit marked: a dashed line when it is in range,
    else an arrow note that everything is shorter."""
    from matplotlib.ticker import NullLocator

    axis.set_xscale("log")
    axis.set_xlim(edges[0], edges[-1])
    ticks = _ticks(edges[0], edges[-1])
    axis.set_xticks(ticks, [f"{tick:,g}" for tick in ticks])
    axis.xaxis.set_minor_locator(NullLocator())  # log axes' minor ticks cost most of a plot
    axis.set_xlabel(title)
    if limit <= edges[-1]:
        axis.axvline(limit, color=LIMIT_COLOR, linestyle="--", linewidth=1)
        axis.annotate(f"{limit:,}", (limit, 1), xycoords=("data", "axes fraction"),
                      xytext=(3, -2), textcoords="offset points", va="top", color=LIMIT_COLOR)
    else:
        axis.annotate(f"limit {limit:,} →", (1, 1), xycoords="axes fraction", va="top",
                      ha="right", color=LIMIT_COLOR)


def _panels(figure, sharey: bool, report: CacheReport) -> list[tuple]:
    """Inputs and targets side by side: (axis, field, color, limit, axis title)."""
    axes = figure.subplots(1, 2, sharey=sharey)
    return [(axes[0], "inputs", INPUTS_COLOR, report.lengths.inputs, "input tokens"),
            (axes[1], "targets", TARGETS_COLOR, report.lengths.targets,
             "target tokens (with EOS)")]


def _step_polygon(edges: np.ndarray, heights: np.ndarray, base: float) -> np.ndarray:
    """A histogram's outline as one closed polygon standing on `base`: one artist per ridge
    instead of one per bar keeps a 313-task report fast."""
    xs = np.repeat(edges, 2)
    ys = np.concatenate([[0], np.repeat(heights, 2), [0]]) + base
    return np.column_stack([xs, ys])


def ridgeline_svg(dataset: str, tasks: Sequence[TaskReport], report: CacheReport) -> str:
    """One dataset's tasks as stacked histograms, one ridge per task scaled to its peak,
    inputs and targets side by side, with the length limits."""
    from matplotlib.collections import PolyCollection
    from matplotlib.colors import to_rgba

    prefix = t0.task_clean(dataset) + "_"  # labels keep what tells the tasks apart
    sampled = [task.lengths for task in reversed(tasks) if task.lengths is not None]
    labels = [task.task.removeprefix(prefix) or task.task
              for task in reversed(tasks) if task.lengths is not None]
    figure = _figure(9, 0.9 + 0.3 * len(sampled))
    for axis, field, color, limit, title in _panels(figure, True, report):
        values = [getattr(sample, field) for sample in sampled]
        edges = _edges(values, limit)
        ridges = []
        for row, lengths in enumerate(values):
            counts, _ = np.histogram(lengths, edges)
            ridges.append(_step_polygon(edges, counts / max(counts.max(), 1) * 0.9, row))
        axis.add_collection(PolyCollection(ridges, facecolors=to_rgba(color, 0.55),
                                           edgecolors=color, linewidths=0.8))
        _length_axis(axis, edges, limit, title)
        axis.spines["left"].set_visible(False)
        axis.tick_params(axis="y", length=0)
        axis.set_ylim(-0.1, len(sampled))
        axis.set_yticks([row + 0.3 for row in range(len(sampled))], labels)
    return _svg(figure)


def composition_svg(mixture: MixtureShare, report: CacheReport) -> str:
    """A mixture's shares by dataset, largest first: which data the model mostly sees."""
    by_dataset: dict[str, list[float]] = {}
    for name in mixture.rates:
        by_dataset.setdefault(report.by_task[name].dataset, []).append(mixture.share(name))
    rows = sorted(by_dataset.items(), key=lambda item: (-sum(item[1]), item[0]))
    figure = _figure(9, 0.8 + 0.24 * len(rows))
    axis = figure.subplots()
    shares = [100 * sum(values) for _, values in rows]
    bars = axis.barh(range(len(rows)), shares, color=INPUTS_COLOR)
    axis.bar_label(bars, [f"{share:.1f}%" for share in shares], padding=3, fontsize=8)
    axis.set_yticks(range(len(rows)), [f"{name} ({len(values)})" for name, values in rows])
    axis.invert_yaxis()
    axis.margins(y=0.01)
    axis.set_xlim(0, max(shares) * 1.15)
    axis.set_xlabel("share of the mixture's examples (%)  ·  (tasks)")
    axis.tick_params(axis="y", length=0)
    return _svg(figure)


def mixture_lengths_svg(mixture: MixtureShare, report: CacheReport) -> str | None:
    """Token lengths of an example drawn from the mixture: each task's sample weighted by
    its share, with how much the limits cut."""
    weighted = [(mixture.share(name), report.by_task[name].lengths) for name in mixture.rates]
    weighted = [(share, lengths) for share, lengths in weighted if lengths and share]
    over = report.weighted_over(mixture)
    if not weighted or over is None:
        return None
    figure = _figure(9, 2.6)
    weights = np.concatenate([np.full(len(lengths.inputs), share / len(lengths.inputs))
                              for share, lengths in weighted])
    for (axis, field, color, limit, title), cut in zip(_panels(figure, False, report), over[:2],
                                                       strict=True):
        values = [getattr(lengths, field) for _, lengths in weighted]
        edges = _edges(values, limit)
        counts, _ = np.histogram(np.concatenate(values), edges, weights=weights)
        counts = 100 * counts / counts.sum()
        axis.stairs(counts, edges, fill=True, color=color, alpha=0.55)
        axis.stairs(counts, edges, color=color, linewidth=0.8)
        _length_axis(axis, edges, limit, title)
        axis.set_ylabel("% of examples")
        axis.set_title(f"{100 * cut:.2f}% longer than {limit:,}", fontsize=9, loc="left")
    return _svg(figure)


def truncation_svg(report: CacheReport) -> str | None:
    """Datasets whose sampled examples the limits cut, by inputs and by targets (None: the
    limits cut nothing)."""
    rows = []
    for dataset, tasks in report.datasets().items():
        sampled = [task.lengths for task in tasks if task.lengths is not None]
        if sampled:
            inputs = np.concatenate([s.inputs for s in sampled]) > report.lengths.inputs
            targets = np.concatenate([s.targets for s in sampled]) > report.lengths.targets
            if inputs.any() or targets.any():
                rows.append((dataset, 100 * inputs.mean(), 100 * targets.mean()))
    if not rows:
        return None
    rows.sort(key=lambda row: -max(row[1], row[2]))
    figure = _figure(9, 1.0 + 0.34 * len(rows))
    axis = figure.subplots()
    positions = np.arange(len(rows))
    for offset, index, color, label in (
            (-0.2, 1, INPUTS_COLOR, f"inputs > {report.lengths.inputs:,}"),
            (0.2, 2, TARGETS_COLOR, f"targets > {report.lengths.targets:,} (with EOS)")):
        values = [row[index] for row in rows]
        bars = axis.barh(positions + offset, values, height=0.38, color=color, label=label)
        axis.bar_label(bars, [f"{v:.1f}%" if v else "" for v in values], padding=3, fontsize=8)
    axis.set_yticks(positions, [row[0] for row in rows])
    axis.invert_yaxis()
    axis.margins(y=0.01)
    axis.set_xlim(0, max(max(row[1], row[2]) for row in rows) * 1.18)
    axis.set_xlabel("% of sampled examples cut")
    axis.tick_params(axis="y", length=0)
    axis.legend(loc="lower right", frameon=False)
    return _svg(figure)

