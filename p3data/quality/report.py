"""`report`: a built cache as one self-contained HTML page, with a Markdown twin.

The manifests hold every count, but nobody reads 313 JSON files, and what decides training
(how long the examples are, what a length limit cuts off, which datasets dominate a mixture)
needs the token ids themselves. The report takes the counts from the manifests, token lengths
from the first records of each task's shards, rates from T0's definitions, and draws the plots
with matplotlib as inline SVG, so the page opens anywhere with nothing to fetch.
"""

from __future__ import annotations

import html
import io
import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from p3data import __version__, fs, t0
from p3data.cache.verify import task_folders
from p3data.errors import P3DataError
from p3data.format import layout
from p3data.format.manifest import Manifest, ManifestError, SplitRecord, read_manifest
from p3data.format.tfrecord import CorruptRecordError, read_records
from p3data.quality.validate import Lengths
from p3data.templates.render import RENDER_ERROR

INPUTS_COLOR, TARGETS_COLOR, LIMIT_COLOR = "#3b6ea8", "#d9822b", "#c0392b"
_LOW_BYTES = bytes(range(128, 256))  # deleting these keeps the last byte of each varint


@dataclass(frozen=True)
class SplitCounts:
    """One task split as its manifest records it; token counts exclude EOS, as seqio's do."""

    split: str
    rows_read: int
    rows_kept: int
    dropped: dict[str, int]
    errors: int
    examples: int
    inputs_tokens: int
    targets_tokens: int
    inputs_max_tokens: int
    targets_max_tokens: int
    num_shards: int


@dataclass(frozen=True)
class TaskLengths:
    """Token lengths of a split's first records: inputs as cached, targets with their EOS."""

    inputs: np.ndarray
    targets: np.ndarray
    examples: int  # in the whole split; the sample may hold fewer

    def over(self, lengths: Lengths) -> tuple[float, float, float]:
        """Shares of the sample cut at `lengths`: by inputs, by targets, by either."""
        cut_in, cut_out = self.inputs > lengths.inputs, self.targets > lengths.targets
        return float(cut_in.mean()), float(cut_out.mean()), float((cut_in | cut_out).mean())


@dataclass(frozen=True)
class TaskReport:
    task: str
    dataset: str
    template: str
    splits: list[SplitCounts]
    lengths: TaskLengths | None  # None: the task lacks the split the lengths are read from


@dataclass(frozen=True)
class MixtureShare:
    """A T0 mixture restricted to the cached tasks; shares are of the cached tasks' total."""

    name: str
    defined_tasks: int
    rate_by_cap: bool
    rates: dict[str, int | None]  # cached task -> rate (None: no train split to count)

    @property
    def complete(self) -> bool:
        return len(self.rates) == self.defined_tasks

    @property
    def total(self) -> int:
        return sum(rate or 0 for rate in self.rates.values())

    def share(self, task: str) -> float:
        return (self.rates[task] or 0) / self.total if self.total else 0.0


@dataclass(frozen=True)
class CacheReport:
    root: str
    split: str  # the split token lengths are read from
    lengths: Lengths
    max_records: int
    tasks: list[TaskReport]
    mixtures: list[MixtureShare]
    problems: list[str]  # task folders left out or not complete

    @cached_property
    def by_task(self) -> dict[str, TaskReport]:
        return {task.task: task for task in self.tasks}

    def datasets(self) -> dict[str, list[TaskReport]]:
        grouped: dict[str, list[TaskReport]] = {}
        for task in self.tasks:
            grouped.setdefault(task.dataset, []).append(task)
        return dict(sorted(grouped.items()))

    def weighted_over(self, mixture: MixtureShare) -> tuple[float, float, float] | None:
        """Shares of a mixture's training examples cut at the lengths (None: nothing sampled)."""
        pairs = [(mixture.share(name), self.by_task[name].lengths) for name in mixture.rates]
        pairs = [(share, lengths) for share, lengths in pairs if lengths and share]
        weight = sum(share for share, _ in pairs)
        if not weight:
            return None
        overs = [(share, lengths.over(self.lengths)) for share, lengths in pairs]
        cut_in, cut_out, cut = (sum(s * o[i] for s, o in overs) / weight for i in range(3))
        return cut_in, cut_out, cut


# Reading the cache.

def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7


def _fields(data: bytes, start: int, end: int) -> Iterator[tuple[int, int, int, int]]:
    """(field number, wire type, value start, value end) of each field in data[start:end]."""
    pos = start
    while pos < end:
        key, pos = _varint(data, pos)
        wire = key & 7
        if wire == 0:
            _, after = _varint(data, pos)
        elif wire == 2:
            size, pos = _varint(data, pos)
            after = pos + size
        elif wire in (1, 5):
            after = pos + (8 if wire == 1 else 4)
        else:
            raise ValueError(f"unsupported protobuf wire type {wire}")
        yield key >> 3, wire, pos, after
        pos = after


def _int64_count(data: bytes, start: int, end: int) -> int:
    """Values in a `Feature` holding an int64_list (field 3), packed or not."""
    count = 0
    for number, _, s, e in _fields(data, start, end):
        if number == 3:
            for _, wire, vs, ve in _fields(data, s, e):
                count += len(data[vs:ve].translate(None, _LOW_BYTES)) if wire == 2 else 1
    return count


def example_lengths(record: bytes) -> tuple[int, int]:
    """Lengths of `inputs` and `targets` in a serialized `tf.train.Example`, without decoding
    the rest: parsing only what is needed keeps a 313-task report to seconds."""
    found = {b"inputs": 0, b"targets": 0}
    for _, _, fs_start, fs_end in _fields(record, 0, len(record)):  # Example.features
        for _, _, es, ee in _fields(record, fs_start, fs_end):  # Features.feature entries
            key, value = b"", (0, 0)
            for number, _, s, e in _fields(record, es, ee):
                if number == 1:
                    key = record[s:e]
                elif number == 2:
                    value = (s, e)
            if key in found:
                found[key] = _int64_count(record, *value)
    return found[b"inputs"], found[b"targets"]


def read_lengths(folder: str, shards: Sequence[str], examples: int, limit: int) -> TaskLengths:
    """Lengths of the first `limit` records of a split. Records go to shards round-robin in
    source order, so reading an equal slice of every shard samples the split's beginning."""
    per_shard = math.ceil(limit / len(shards)) if shards else 0
    pairs: list[tuple[int, int]] = []
    for name in shards:
        path = fs.join(folder, name)
        with fs.open_read(path) as handle:
            for number, record in enumerate(read_records(handle, path)):
                if number == per_shard or len(pairs) == limit:
                    break
                pairs.append(example_lengths(record))
    array = np.array(pairs, dtype=np.int64).reshape(-1, 2)
    return TaskLengths(array[:, 0], array[:, 1], examples)


def _split_counts(split: str, record: SplitRecord) -> SplitCounts:
    stats = record.stats
    dropped = {**record.dropped, **({RENDER_ERROR: record.render_errors}
                                    if record.render_errors else {})}
    return SplitCounts(
        split, record.rows_read, record.rows_kept, dropped, record.render_errors,
        record.examples, stats.get("inputs_tokens", 0), stats.get("targets_tokens", 0),
        stats.get("inputs_max_tokens", 0), stats.get("targets_max_tokens", 0),
        record.num_shards)


def read_task(folder: str, manifest: Manifest, split: str, max_records: int) -> TaskReport:
    """A task's counts, and token lengths of its `split`; a `CorruptRecordError` or `OSError`
    when a shard cannot be read."""
    splits = [_split_counts(name, record) for name, record in sorted(manifest.splits.items())]
    lengths = None
    record = manifest.splits.get(split)
    if record and record.examples:
        shards = sorted(name for name in record.files if ".tfrecord-" in name)
        lengths = read_lengths(folder, shards, record.examples, max_records)
    return TaskReport(manifest.task, manifest.dataset, manifest.template.name, splits, lengths)


def mixture_shares(definitions: t0.T0Definitions,
                   tasks: Sequence[TaskReport]) -> list[MixtureShare]:
    """Every T0 mixture with a cached task. Training mixtures rate a task by its cap; the
    others by its cached train examples up to 500,000, as seqio's `mixing_rate_num_examples`."""
    cached = {task.task: task for task in tasks}
    shares = []
    for mixture in definitions.mixtures.values():
        present = [name for name in mixture.tasks if name in cached]
        if not present:
            continue
        rates = {name: definitions.rate(mixture.name, name) if mixture.rate_by_cap
                 else _examples_rate(cached[name]) for name in present}
        shares.append(MixtureShare(mixture.name, len(mixture.tasks), mixture.rate_by_cap, rates))
    return sorted(shares, key=lambda share: not share.complete)


def _examples_rate(task: TaskReport) -> int | None:
    train = next((s for s in task.splits if s.split == "train"), None)
    return min(train.examples, t0.MAX_EXAMPLES_PER_DATASET) if train else None


def collect(root: str, split: str, lengths: Lengths, max_records: int,
            definitions: t0.T0Definitions) -> CacheReport:
    """Everything the report shows, read from the cache at `root`. A task folder that cannot
    be read is a problem of its own: the report goes on with the other tasks."""
    folders = task_folders(root)
    if not folders:
        raise P3DataError(f"{root}: no task folders in it (none holds a {layout.MANIFEST} or "
                          f"{layout.COMPLETED}); pass the cache's root folder")
    tasks, problems = [], []
    for folder in folders:
        task, found = read_folder(folder, split, max_records)
        problems += found
        if task is not None:
            tasks.append(task)
    tasks.sort(key=lambda task: task.task)
    return CacheReport(root, split, lengths, max_records, tasks,
                       mixture_shares(definitions, tasks), problems)


def read_folder(folder: str, split: str, max_records: int) -> tuple[TaskReport | None, list[str]]:
    """A task folder's report (None: left out) and the problems found reading it."""
    problems = []
    if not fs.exists(fs.join(folder, layout.COMPLETED)):
        problems.append(f"{folder}: no {layout.COMPLETED}: the task is not complete")
    manifest_path = fs.join(folder, layout.MANIFEST)
    if not fs.exists(manifest_path):
        return None, [*problems, f"{folder}: no {layout.MANIFEST} (not built by p3data); left out"]
    try:
        return read_task(folder, read_manifest(folder), split, max_records), problems
    except ManifestError as err:
        problems.append(f"{err}; left out")
    except CorruptRecordError as err:
        problems.append(f"{err}; task left out (check the cache with p3data verify)")
    except OSError as err:  # a shard the manifest lists is missing or unreadable
        problems.append(f"{folder}: a {split} shard cannot be read ({err}); task left out")
    return None, problems


# Plots: matplotlib figures, without pyplot's global state, as inline SVG.

def _svg(figure) -> str:
    out = io.StringIO()
    figure.savefig(out, format="svg", metadata={"Date": None})
    text = out.getvalue()
    return text[text.index("<svg"):]


# A fixed salt keeps SVG ids, and so the page, the same from run to run.
STYLE = {"svg.hashsalt": "p3data", "font.size": 9, "axes.spines.top": False,
         "axes.spines.right": False}


def _figure(width: float, height: float):
    from matplotlib.figure import Figure  # no pyplot: no GUI backend, no global figures

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


def ridgeline_svg(tasks: Sequence[TaskReport], prefix: str, report: CacheReport) -> str:
    """One dataset's tasks as stacked histograms, one ridge per task scaled to its peak,
    inputs and targets side by side, with the length limits."""
    from matplotlib.collections import PolyCollection
    from matplotlib.colors import to_rgba

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


# Tables, shared by the HTML page and the Markdown twin.

COUNT_HEADER = ("Task", "Split", "Rows read", "Rows kept", "Dropped", "Errors", "Examples",
                "Input tokens", "Target tokens", "Max input tokens", "Max target tokens",
                "Shards")
LENGTH_HEADER = ("Task", "Sampled", "Input p50", "Input p95", "Input max", "Target+EOS p50",
                 "Target+EOS p95", "Target+EOS max", "Inputs cut %", "Targets cut %")
SHARE_HEADER = ("Task", "Dataset", "Rate", "Share %")
MIXTURE_HEADER = ("Mixture", "Tasks cached", "Tasks in T0", "Rate", "Total rate",
                  "Examples cut %")
DROPPED_HEADER = ("Task", "Split", "Reason", "Rows")
REASON_HEADER = ("Reason", "Tasks", "Rows")

Cell = int | float | str | None


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


def share_rows(mixture: MixtureShare, report: CacheReport) -> list[list[Cell]]:
    return [[name, report.by_task[name].dataset, rate, 100 * mixture.share(name)]
            for name, rate in sorted(mixture.rates.items(), key=lambda item: -(item[1] or 0))]


def mixture_rows(report: CacheReport) -> list[list[Cell]]:
    rows: list[list[Cell]] = []
    for mixture in report.mixtures:
        over = report.weighted_over(mixture)
        rows.append([mixture.name, len(mixture.rates), mixture.defined_tasks,
                     "T0's cap" if mixture.rate_by_cap else "train examples, max 500,000",
                     mixture.total, 100 * over[2] if over else None])
    return rows


def _cell(value: Cell) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.2f}"
    if isinstance(value, int):
        return f"{value:,}"
    return value


def totals(report: CacheReport) -> dict[str, int]:
    splits = [s for task in report.tasks for s in task.splits]
    return {"tasks": len(report.tasks), "examples": sum(s.examples for s in splits),
            "rows read": sum(s.rows_read for s in splits),
            "rows dropped": sum(sum(s.dropped.values()) for s in splits),
            "errors": sum(s.errors for s in splits),
            "input tokens": sum(s.inputs_tokens for s in splits),
            "target tokens": sum(s.targets_tokens for s in splits)}


def _sample_note(report: CacheReport) -> str:
    return (f"Token lengths: the first {report.max_records:,} records (at most) of each task's "
            f"`{report.split}` split; inputs as cached (no EOS), targets with their EOS. "
            f"Cut at {report.lengths.inputs:,} input / {report.lengths.targets:,} target tokens. "
            "Counts come from the manifests; their token counts exclude EOS, as seqio's stats do.")


def _prefix(dataset: str) -> str:
    return t0.task_clean(dataset.replace("/", "_")) + "_"


# HTML.

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


def _html_table(kind: str, header: Sequence[str], rows: Sequence[Sequence[Cell]]) -> str:
    numeric = [all(isinstance(row[i], int | float | None) for row in rows)
               for i in range(len(header))]
    head = "".join(f'<th{" class=num" if n else ""}>{html.escape(h)}</th>'
                   for h, n in zip(header, numeric, strict=True))
    body = "".join(
        "<tr>" + "".join(f'<td{" class=num" if n else ""}>{html.escape(_cell(v))}</td>'
                         for v, n in zip(row, numeric, strict=True)) + "</tr>"
        for row in rows)
    return (f'<div class="scroll"><table class="{kind}"><thead><tr>{head}</tr></thead>'
            f"<tbody>{body}</tbody></table></div>")


def _figure_html(svg: str, caption: str) -> str:
    return f"<figure>{svg}<figcaption>{html.escape(caption)}</figcaption></figure>"


def _anchor(text: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in text)


def render_html(report: CacheReport) -> str:
    """The whole page: overview, dropped rows, mixtures, then one section per dataset."""
    import matplotlib

    with matplotlib.rc_context(STYLE):
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
        for name, value in totals(report).items()) + "</div>")
    parts.append(f'<p class="note">{esc(_sample_note(report))}</p>')
    if report.problems:
        parts.append('<div class="problems"><p><b>Problems</b></p><ul>' + "".join(
            f"<li>{esc(problem)}</li>" for problem in report.problems) + "</ul></div>")
    truncation = truncation_svg(report)
    parts.append(_figure_html(truncation, "Where the length limits cut: datasets with any "
                              "sampled example over the limits.") if truncation else
                 f"<p>No sampled example is longer than {report.lengths.inputs:,} input or "
                 f"{report.lengths.targets:,} target tokens.</p>")
    dropped = dropped_rows(report.tasks)
    parts.append('<h2 id="dropped">Dropped rows</h2>')
    if dropped:
        parts.append(_html_table("reasons", REASON_HEADER, reason_rows(report.tasks)))
        parts.append(f"<details><summary>By task and split ({len(dropped):,} rows)</summary>"
                     + _html_table("dropped", DROPPED_HEADER, dropped) + "</details>")
    else:
        parts.append("<p>No row was dropped.</p>")
    parts.append('<h2 id="mixtures">Mixtures</h2><p class="note">T0 mixtures with tasks in '
                 "this cache. A mixture with only some of its tasks cached is shown over "
                 "those tasks: its shares are of their total.</p>")
    parts.append(_html_table("mixtures", MIXTURE_HEADER, mixture_rows(report)))
    for mixture in report.mixtures:
        badge = "" if mixture.complete else (
            f'<span class="badge">{len(mixture.rates)} of {mixture.defined_tasks} tasks</span>')
        parts.append(f'<h3 id="mixture-{_anchor(mixture.name)}">{esc(mixture.name)}{badge}</h3>')
        parts.append(_figure_html(composition_svg(mixture, report),
                                  "Share of the mixture by dataset (number of tasks)."))
        lengths_svg = mixture_lengths_svg(mixture, report)
        if lengths_svg:
            parts.append(_figure_html(lengths_svg, "Token lengths of an example drawn from "
                                      "the mixture (each task's sample weighted by its share)."))
        parts.append(f"<details><summary>Rates and shares of {len(mixture.rates):,} tasks"
                     "</summary>" + _html_table("shares", SHARE_HEADER,
                                                share_rows(mixture, report)) + "</details>")
    parts.append('<h2 id="datasets">Datasets</h2>')
    for dataset, tasks in report.datasets().items():
        parts.append(f'<h3 id="dataset-{_anchor(dataset)}">{esc(dataset)}</h3>')
        if any(task.lengths is not None for task in tasks):
            parts.append(_figure_html(
                ridgeline_svg(tasks, _prefix(dataset), report),
                f"Token-length histogram of each task's `{report.split}` sample (one ridge per "
                "task, scaled to its peak); dashed: the length limits."))
        parts.append(_html_table("counts", COUNT_HEADER, count_rows(tasks)))
        lengths = length_rows(tasks, report.lengths)
        if lengths:
            parts.append(_html_table("lengths", LENGTH_HEADER, lengths))
    parts.append("</main></body></html>\n")
    return "".join(parts)


# Markdown.

def _markdown_table(header: Sequence[str], rows: Sequence[Sequence[Cell]]) -> str:
    numeric = [all(isinstance(row[i], int | float | None) for row in rows)
               for i in range(len(header))]
    lines = ["| " + " | ".join(header) + " |",
             "|" + "|".join("---:" if n else "---" for n in numeric) + "|"]
    lines += ["| " + " | ".join(_cell(v).replace("|", "\\|") for v in row) + " |"
              for row in rows]
    return "\n".join(lines)


def render_markdown(report: CacheReport, html_name: str | None = None) -> str:
    """The same numbers as the page, as tables (the plots are in the HTML)."""
    lines = [f"# Cache report: `{report.root}`", "",
             f"p3data {__version__} · " + " · ".join(
                 f"{value:,} {name}" for name, value in totals(report).items()), "",
             _sample_note(report)]
    if html_name:
        lines += ["", f"Plots: see [{html_name}]({html_name})."]
    if report.problems:
        lines += ["", "## Problems", "", *(f"- {problem}" for problem in report.problems)]
    dropped = dropped_rows(report.tasks)
    lines += ["", "## Dropped rows", ""]
    lines += [_markdown_table(REASON_HEADER, reason_rows(report.tasks)), "",
              _markdown_table(DROPPED_HEADER, dropped)] if dropped else ["No row was dropped."]
    lines += ["", "## Mixtures", "", _markdown_table(MIXTURE_HEADER, mixture_rows(report))]
    for mixture in report.mixtures:
        lines += ["", f"### {mixture.name}", "",
                  _markdown_table(SHARE_HEADER, share_rows(mixture, report))]
    lines += ["", "## Tasks", "", _markdown_table(COUNT_HEADER, count_rows(report.tasks)),
              "", f"## Token lengths (`{report.split}`)", "",
              _markdown_table(LENGTH_HEADER, length_rows(report.tasks, report.lengths)), ""]
    return "\n".join(lines)
