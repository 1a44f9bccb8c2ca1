"""A task split's few-shot examples, all shot counts at once, batch by batch: `FewshotPrompter`.

For each query (a row T0's row rule kept): measure it; shorten it if alone it is over the
input length (`shorten`); choose its exemplars once for the largest shot count, from draws
keyed by (seed, task, split, row) (`select`), the smaller counts taking the first ones;
assemble each prompt and tokenize all of a batch's prompts in one call. A pool's token costs
are exact for SentencePiece models that split on whitespace with whitespace separators (T5's,
the sample vocabulary's); with other separators a prompt may come out longer than its estimate,
and then its last exemplar is left out until it fits. Nothing here depends on which rows came
before, so any sharding, batching, order or worker gives the same examples.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from p3data.fewshot.draws import Draws, draw_key
from p3data.fewshot.example import FewshotExample, assemble
from p3data.fewshot.pool import ExemplarPool, PoolSource, id_count, input_key
from p3data.fewshot.select import NO_ROOM, Selection, select_exemplars
from p3data.fewshot.settings import FewshotSettings
from p3data.fewshot.shorten import FittedQuery, QueryShortener
from p3data.fewshot.stats import FewshotStats
from p3data.templates import CompiledTemplate, Rendered
from p3data.tokenize import Tokenizer

Query = tuple[Mapping[str, Any], Rendered]  # a source row, and its render by the template


class FewshotPrompter:
    """The examples of one task split at each of the settings' shot counts, and their stats.

    `task` is the name draws are keyed by (`VariantSpec.draw_task`: a `_score_eval` twin
    shares its base task's); `split` the task split; `source` where `pool` came from.
    """

    def __init__(self, *, task: str, split: str, template: CompiledTemplate,
                 pool: ExemplarPool, source: PoolSource, settings: FewshotSettings,
                 tokenizer: Tokenizer, long_fields: Collection[str] = ()):
        self.task, self.split = task, split
        self.pool, self.source, self.settings = pool, source, settings
        self.tokenizer = tokenizer
        self.shortener = QueryShortener(template, tokenizer, long_fields)
        self.stats = {k: FewshotStats() for k in settings.shots}

    def prompts(self, queries: Sequence[Query]) -> dict[int, list[FewshotExample]]:
        """Per shot count, one example per query, in the queries' order."""
        length = self.settings.input_length
        counts = self.tokenizer.encode_packed([rendered.inputs for _, rendered in queries])
        fitted = [self._fit(row, rendered, id_count(ids), length)
                  for (row, rendered), ids in zip(queries, counts, strict=True)]
        selections = [self._select(query, rendered)
                      for query, (_, rendered) in zip(fitted, queries, strict=True)]
        examples = {}
        for k in self.settings.shots:
            chosen = [self._first(selection, k) for selection in selections]
            examples[k] = self._assembled(fitted, chosen)
            for query, selection, example in zip(fitted, chosen, examples[k], strict=True):
                shortfall = (selection.shortfall if example.num_shots == len(selection.positions)
                             else NO_ROOM)  # its prompt came out longer than estimated
                self.stats[k].add_query(num_shots=example.num_shots, cut_tokens=query.cut_tokens,
                                        fits=query.fits, shortfall=shortfall)
        return examples

    def _fit(self, row: Mapping[str, Any], rendered: Rendered, tokens: int,
             length: int) -> FittedQuery:
        if tokens <= length:
            return FittedQuery(rendered, tokens)
        return self.shortener.shorten(row, rendered, tokens, length)

    def _select(self, query: FittedQuery, original: Rendered) -> Selection:
        """Exemplars for the largest shot count; the query's key is its original input's."""
        row = original.index
        draws = Draws(draw_key(self.settings.seed, self.task, self.split, row))
        room = self.settings.input_length - query.tokens if query.fits else 0
        return select_exemplars(self.pool, draws, shots=self.settings.max_shots, budget=room,
                                query_key=input_key(original.inputs),
                                query_row=row if self.source.same_split else None)

    def _first(self, selection: Selection, k: int) -> Selection:
        """The k-shot selection: the first k exemplars, short for the reason the whole was."""
        positions = selection.positions[:k]
        cost = sum(int(self.pool.costs[p]) for p in positions)
        return Selection(positions, cost, selection.shortfall if len(positions) < k else None)

    def _assembled(self, fitted: list[FittedQuery],
                   chosen: list[Selection]) -> list[FewshotExample]:
        """Prompts tokenized a batch at a time; one over the length loses its last exemplar
        until it fits (only separators that do not split words can cause it)."""
        shown = [list(selection.positions) for selection in chosen]
        texts = [[self.pool.text(p) for p in positions] for positions in shown]
        pending = list(range(len(fitted)))
        done: dict[int, FewshotExample] = {}
        while pending:
            prompts = [assemble(texts[i], fitted[i].rendered.inputs, self.settings)
                       for i in pending]
            retry = []
            for i, prompt, ids in zip(pending, prompts, self.tokenizer.encode_packed(prompts),
                                      strict=True):
                if shown[i] and id_count(ids) > self.settings.input_length:
                    shown[i].pop()
                    texts[i].pop()
                    retry.append(i)
                    continue
                rendered = fitted[i].rendered
                done[i] = FewshotExample(
                    rendered.index, prompt, rendered.targets, rendered.answer_choices,
                    len(shown[i]), tuple(int(self.pool.rows[p]) for p in shown[i]), ids)
            pending = retry
        return [done[i] for i in range(len(fitted))]
