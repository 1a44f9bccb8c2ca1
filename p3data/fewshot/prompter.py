"""A task split's few-shot examples, all shot counts at once, batch by batch: `FewshotPrompter`.

For each query (a row T0's row rule kept): measure it; shorten it if alone it is over the
input length (`shorten`); choose its exemplars once for the largest shot count, from draws
keyed by (seed, task, split, row) (`select`), the smaller counts taking the first ones;
assemble each prompt. Its ids are its exemplars' ids (with the separator, kept in the pool)
and its query's joined, where the model makes that exact (`Tokenizer.join`: whitespace
separators and a model that splits on whitespace, T5's and the sample vocabulary's); else the
prompts are tokenized whole, all of a batch's in one call. Joined, a prompt's tokens are the sum
of its parts', so the pool's costs say what fits; should a prompt tokenized whole come out
longer (e.g. a separator that joins words), its last exemplar is left out until it fits.
Nothing here depends on which rows came before, so any sharding, batching, order or worker
gives the same examples.
"""

from __future__ import annotations

import functools
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from p3data.fewshot.draws import Draws, draw_key
from p3data.fewshot.example import FewshotExample, assemble
from p3data.fewshot.pool import ExemplarPool, PoolSource, id_count, input_key
from p3data.fewshot.select import Selection, select_exemplars
from p3data.fewshot.settings import FewshotSettings
from p3data.fewshot.shorten import FittedQuery, QueryShortener
from p3data.fewshot.stats import FewshotStats
from p3data.templates.render import CompiledTemplate, Rendered
from p3data.tokenize import Tokenizer
from p3data.tokenize.entries import Entry

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
        fitted = [self._fit(row, rendered, ids, length)
                  for (row, rendered), ids in zip(queries, counts, strict=True)]
        selections = [self._select(query, rendered)
                      for query, (_, rendered) in zip(fitted, queries, strict=True)]
        chosen = {k: [selection.first(k) for selection in selections]
                  for k in self.settings.shots}
        examples = self._assembled(fitted, chosen)
        for k, batch in examples.items():
            for query, selection, example in zip(fitted, chosen[k], batch, strict=True):
                self.stats[k].add_query(num_shots=example.num_shots, cut_tokens=query.cut_tokens,
                                        fits=query.fits,
                                        shortfall=selection.shortfall(k, example.num_shots))
        return examples

    def _fit(self, row: Mapping[str, Any], rendered: Rendered, ids: Entry,
             length: int) -> FittedQuery:
        if (tokens := id_count(ids)) <= length:
            return FittedQuery(rendered, tokens, ids)
        return self.shortener.shorten(row, rendered, ids, length)

    def _select(self, query: FittedQuery, original: Rendered) -> Selection:
        """Exemplars for the largest shot count; the query's key is its original input's."""
        row = original.index
        draws = Draws(draw_key(self.settings.seed, self.task, self.split, row))
        room = self.settings.input_length - query.tokens if query.fits else 0
        return select_exemplars(self.pool, draws, shots=self.settings.max_shots, budget=room,
                                query_key=input_key(original.inputs),
                                query_row=row if self.source.same_split else None)

    def _assembled(self, fitted: list[FittedQuery],
                   chosen: dict[int, list[Selection]]) -> dict[int, list[FewshotExample]]:
        """Every shot count's prompts, their ids joined or else tokenized in one call; one
        over the length loses its last exemplar until it fits (only a prompt tokenized whole,
        with a separator that does not split words, can be)."""
        pending = [(k, i) for k in chosen for i in range(len(fitted))]
        shown = {item: list(chosen[item[0]][item[1]].positions) for item in pending}
        # an exemplar's text, ids and row, read from the pool once per batch
        text, entry = functools.cache(self.pool.text), functools.cache(self.pool.entry)
        row = functools.cache(self.pool.row)
        texts = {item: list(map(text, shown[item])) for item in pending}
        done: dict[tuple[int, int], FewshotExample] = {}
        while pending:
            prompts = [assemble(texts[item], fitted[item[1]].rendered.inputs, self.settings)
                       for item in pending]
            joined = [self.tokenizer.join([*map(entry, shown[item]), fitted[item[1]].ids],
                                          separator=self.settings.example_separator)
                      for item in pending]
            if whole := [n for n, ids in enumerate(joined) if ids is None]:
                encoded = self.tokenizer.encode_packed([prompts[n] for n in whole])
                for n, ids in zip(whole, encoded, strict=True):
                    joined[n] = ids
            retry = []
            for item, prompt, ids in zip(pending, prompts, joined, strict=True):
                positions = shown[item]
                if positions and id_count(ids) > self.settings.input_length:
                    positions.pop()
                    texts[item].pop()
                    retry.append(item)
                    continue
                rendered = fitted[item[1]].rendered
                done[item] = FewshotExample(
                    rendered.index, prompt, rendered.targets, rendered.answer_choices,
                    len(positions), tuple(map(row, positions)), ids)
            pending = retry
        return {k: [done[k, i] for i in range(len(fitted))] for k in chosen}
