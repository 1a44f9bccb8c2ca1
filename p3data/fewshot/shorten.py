"""Fitting a query that alone is longer than the input length: shorten its passage, not its end.

T0 cut the rendered prompt at 1,024 tokens from the end, which cuts the question and the answer
choices off long passages (t-zero #39: 5 of wiki_hop's 9 prompts). Here the row's passage
fields are shortened at a word boundary and the row rendered again, so the instruction,
question and answer choices survive. The longest field is cut first, down to the length of the
next, then both together, and so on (a common cap on their lengths, the largest that fits):
promptsource cuts each `{{ }}` value at 2,048 characters, so two long fields can still pass
1,024 tokens. A field of at most `SHORT_FIELD_CHARS` (a question, a hypothesis) is never cut,
nor one whose cutting changes the target or the answer choices (e.g. story_cloze's endings).
The cap is found in token space (`fitting.search`: an estimate from the query's own ids,
confirmed by exact renders next to the cut); the bisection over caps (`_bisect`) is its
fallback and its reference: the same cap wherever fitting is monotone in the cap.

Passage fields are the catalog's long free-text fields (`DatasetEntry.text_lengths`), else
every text field the template reads; a list of texts (wiki_hop's `supports`) is cut as one
text, keeping its first items whole.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any

from p3data.fewshot.fitting import UNFIT, Cuts, Probe, estimate, search
from p3data.fewshot.pool import id_count
from p3data.templates.render import CompiledTemplate, Rendered
from p3data.tokenize import Tokenizer
from p3data.tokenize.entries import Entry

# Fields this short are questions, hypotheses, options: kept whole (the catalog's longest mean
# question, quarel's, is 230 characters); only longer ones are passages.
SHORT_FIELD_CHARS = 256
_TO_LAST_SPACE = re.compile(r".*\s", re.DOTALL)  # greedy: it ends at the last whitespace


def cut_text(text: str, limit: int) -> str:
    """The longest start of `text` of at most `limit` characters that ends a word."""
    if len(text) <= limit:
        return text
    space = _TO_LAST_SPACE.match(text, 0, max(limit, 0) + 1)
    return text[:space.end() - 1].rstrip() if space else ""


def _is_text(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, list) and bool(value)
                                      and all(isinstance(item, str) for item in value))


def _length(value: str | list[str]) -> int:
    return len(value) if isinstance(value, str) else sum(map(len, value))


def cut_value(value: str | list[str], limit: int) -> str | list[str]:
    """A text cut by `cut_text`; a list of texts cut as their concatenation (first items kept
    whole, the one at the limit cut, the rest left out)."""
    if isinstance(value, str):
        return cut_text(value, limit)
    kept: list[str] = []
    for item in value:
        if len(item) > limit:
            if cut := cut_text(item, limit):
                kept.append(cut)
            break
        kept.append(item)
        limit -= len(item)
    return kept


def passage_fields(row: Mapping[str, Any], template: CompiledTemplate,
                   long_fields: Collection[str] = ()) -> list[str]:
    """The row's fields that may be shortened: of `long_fields` (the catalog's, if any) or
    else of all, those holding text that the template reads."""
    names = long_fields or list(row)
    return [name for name in names if name in row and _is_text(row[name])
            and name.replace("-", "_") in template.variables]


@dataclass(frozen=True, slots=True)
class FittedQuery:
    """A query as it goes into prompts: rendered again if shortened."""

    rendered: Rendered
    tokens: int
    ids: Entry  # its input's (`Tokenizer.encode_packed`'s), joined into its prompts' ids
    cut_tokens: int = 0  # tokens the shortening removed
    cut_fields: tuple[str, ...] = ()
    fits: bool = True  # False: even with its passages emptied it is over the length


class QueryShortener:
    """Shortens the over-long queries of one template (`shorten`); `tally` counts how
    (`estimated`: found in token space, `bisected`: by the bisection) and the renders made."""

    def __init__(self, template: CompiledTemplate, tokenizer: Tokenizer,
                 long_fields: Collection[str] = ()):
        self.template = template
        self.tokenizer = tokenizer
        self.long_fields = tuple(long_fields)
        self.tally: Counter[str] = Counter()

    def shorten(self, row: Mapping[str, Any], original: Rendered, ids: Entry,
                budget: int) -> FittedQuery:
        """The query (its input's ids given) fitted to `budget` tokens, or as short as it gets
        (`fits` False)."""
        fields = [name for name in passage_fields(row, self.template, self.long_fields)
                  if _length(row[name]) > SHORT_FIELD_CHARS
                  and self._may_cut(row, original, name)]
        tokens = id_count(ids)
        unfit = FittedQuery(original, tokens, ids, fits=False)
        if not fields:
            return unfit
        renders = _Renders(self, row, original, fields, budget=budget)
        values = [row[name] for name in fields]
        plan = estimate(values, original.inputs, ids, self.tokenizer)
        found = None if plan is None else search(Cuts(values, cut_value), plan, budget,
                                                 renders.probe)
        self.tally["bisected" if found is None else "estimated"] += 1
        cap, best = self._bisect(renders.probe, fields, row) if found is None else found
        if cap == UNFIT:
            return unfit
        rendered, fitted_ids = best
        fitted_tokens = id_count(fitted_ids)
        cut = tuple(name for name in fields if _length(row[name]) > cap)
        return FittedQuery(rendered, fitted_tokens, fitted_ids, tokens - fitted_tokens, cut)

    @staticmethod
    def _bisect(probe: Callable[[list[int]], list[Probe]], fields: list[str],
                row: Mapping[str, Any]) -> tuple[int, Any]:
        """The largest cap that fits, by bisection over characters (`search`'s fallback, and
        its reference): the render at the longest field's length, the query, does not fit."""
        lo, hi = 0, max(_length(row[name]) for name in fields)
        [found] = probe([lo])
        if not found.fits:
            return UNFIT, None
        best = found.kept
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if (found := probe([mid])[0]).fits:
                lo, best = mid, found.kept
            else:
                hi = mid
        return lo, best

    def _render(self, row: Mapping[str, Any], original: Rendered,
                cuts: Mapping[str, str | list[str]]) -> Rendered | None:
        """The row rendered with some fields cut, if it keeps the target and the choices."""
        outcome = self.template.render({**row, **cuts}, original.index)
        if (isinstance(outcome, Rendered) and outcome.targets == original.targets
                and outcome.answer_choices == original.answer_choices):
            return outcome
        return None

    def _may_cut(self, row: Mapping[str, Any], original: Rendered, name: str) -> bool:
        """Whether halving the field alone leaves the target and the choices as they were."""
        half = cut_value(row[name], _length(row[name]) // 2)
        return self._render(row, original, {name: half}) is not None


class _Renders:
    """One query's renders with its passage fields cut to a cap (`probe`), each tokenized."""

    def __init__(self, shortener: QueryShortener, row: Mapping[str, Any], original: Rendered,
                 fields: list[str], *, budget: int):
        self.shortener, self.row, self.original = shortener, row, original
        self.fields, self.budget = fields, budget

    def probe(self, caps: list[int]) -> list[Probe]:
        """Whether each render with every field cut to a cap fits the budget, its tokens, and
        (kept) the render and its input's ids: tokenized together (cut renders come once; cap
        0 leaves the template's own text, which recurs)."""
        shortener = self.shortener
        shortener.tally["renders"] += len(caps)
        renders = [shortener._render(self.row, self.original, {
            name: cut_value(self.row[name], cap) for name in self.fields}) for cap in caps]
        shown = [rendered for rendered in renders if rendered is not None]
        ids = iter(shortener.tokenizer.encode_packed([r.inputs for r in shown],
                                                     once=0 not in caps))
        probes = []
        for rendered in renders:
            if rendered is None:
                probes.append(Probe(False, None))
                continue
            entry = next(ids)
            tokens = id_count(entry)
            probes.append(Probe(tokens <= self.budget, tokens, (rendered, entry)))
        return probes
