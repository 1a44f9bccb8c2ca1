"""Few-shot tasks over real rows, real templates and the sample vocabulary, for the tests.

`TaskSplit` renders query rows and pool rows with a task's template exactly as the cache does
(`DatasetRenderer`), builds the pool and runs a `FewshotPrompter`; `oracle_*` re-derive what
the rules say from scratch, to check the prompter's answers against.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from p3data import t0
from p3data.datasets.catalog import Catalog
from p3data.fewshot import FewshotSettings
from p3data.fewshot.example import FewshotExample
from p3data.fewshot.pool import ExemplarPool, PoolSource, build_pool, id_count, pool_source
from p3data.fewshot.prompter import FewshotPrompter
from p3data.taskset import TaskSet
from p3data.templates import TemplateCollection
from p3data.templates.render import DatasetRenderer, Rendered
from p3data.tokenize import Tokenizer
from p3data.vocab import EXTRA_IDS, SAMPLE_VOCAB


@functools.cache
def catalog() -> Catalog:
    return Catalog.load()


@functools.cache
def templates() -> TemplateCollection:
    return TemplateCollection.default()


@functools.cache
def definitions() -> t0.T0Definitions:
    return t0.define(catalog(), templates())


@functools.cache
def taskset() -> TaskSet:
    """`definitions()` as the task set's collection `t0`."""
    return TaskSet().adding("t0", definitions())


def new_tokenizer() -> Tokenizer:
    """The sample vocabulary's tokenizer, with an empty memo (as a fresh worker has)."""
    return Tokenizer(SAMPLE_VOCAB.read_bytes(), EXTRA_IDS)


@functools.cache
def tokenizer() -> Tokenizer:
    return new_tokenizer()


def normalized(text: str) -> str:
    return " ".join(text.split())


@dataclass
class TaskSplit:
    """One task's split: its query rows, its pool rows (None: the query rows, the pool being
    the query split) and the few-shot settings."""

    dataset: str
    subset: str | None
    template: str
    split: str
    rows: list[dict[str, Any]]
    pool_rows: list[dict[str, Any]] | None = None
    settings: FewshotSettings = field(default_factory=FewshotSettings)
    tokenizer: Tokenizer = field(default_factory=tokenizer)

    def __post_init__(self) -> None:
        self.spec = definitions().tasks[t0.task_name(self.dataset, self.subset, self.template)]
        self.entry = catalog().get(self.dataset, self.subset)
        self.renderer = DatasetRenderer([self.spec.template])
        self.compiled = self.renderer.templates[self.spec.template.name]

    @property
    def source(self) -> PoolSource:
        return (PoolSource(self.split, True) if self.pool_rows is None
                else pool_source(self.spec, self.split))

    def renders(self, rows: Sequence[dict[str, Any]], start: int = 0) -> list:
        return self.renderer.render_batch(rows, start)[self.spec.template.name]

    def pool(self, batches: Sequence[tuple[int, int]] | None = None) -> ExemplarPool:
        """The pool, built from row ranges given in any order (default: all rows at once)."""
        rows = self.rows if self.pool_rows is None else self.pool_rows
        ranges = batches or [(0, len(rows))]
        return build_pool([self.renders(rows[a:b], a) for a, b in ranges], self.settings,
                          self.tokenizer)

    def queries(self, start: int = 0, stop: int | None = None) -> list[tuple[dict, Rendered]]:
        """The kept renders of rows [start, stop), with their rows."""
        rows = self.rows[start:stop]
        return [(self.rows[o.index], o) for o in self.renders(rows, start)
                if isinstance(o, Rendered)]

    def prompter(self, pool: ExemplarPool | None = None,
                 tokenizer: Tokenizer | None = None) -> FewshotPrompter:
        return FewshotPrompter(task=self.spec.base_name, split=self.split,
                               template=self.compiled, pool=pool or self.pool(),
                               source=self.source, settings=self.settings,
                               tokenizer=tokenizer or self.tokenizer,
                               long_fields=self.entry.text_lengths)

    def examples(self) -> dict[int, list[FewshotExample]]:
        return self.prompter().prompts(self.queries())


def tokens(tok: Tokenizer, text: str) -> int:
    return id_count(tok.encode_packed([text])[0])


def example_bytes(example: FewshotExample) -> tuple:
    """Everything an example would write, as comparable values."""
    return (example.row, example.inputs, example.targets, example.answer_choices,
            example.num_shots, example.exemplar_rows, example.input_ids.varints)
