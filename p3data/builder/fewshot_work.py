"""Stage 1 for few-shot variants: a unit's kept renders made prompts, written as the variants'
parts (`VariantWriter`).

The variants of one task split that share their draws (`T_<k>shot` and `T_score_eval_<k>shot`
for each k being built) share one `FewshotPrompter`: each query is fitted, its exemplars drawn
and its prompts tokenized once for all of them; a twin writes one example per answer choice of
the same prompt. Records are what seqio writes for `task_features(..., fewshot=True)`, map
entries in protobuf's deterministic order: `exemplar_rows` before `idx` and `inputs`,
`num_shots` between `is_correct` and `targets`.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping, Sequence
from typing import Any, BinaryIO

from p3data.builder import work_folder as work
from p3data.builder.entries import EntryEncoder
from p3data.builder.jobs import CacheConfig, TaskOutput
from p3data.builder.pool_work import load_pool
from p3data.errors import P3DataError
from p3data.fewshot.example import FewshotExample
from p3data.fewshot.pool import build_pool
from p3data.fewshot.prompter import FewshotPrompter
from p3data.format.example import (
    encode_entries,
    ids_entry,
    packed_ids_entry,
    text_entry,
    wrap_entries,
)
from p3data.format.features import EXEMPLAR_ROWS, INPUTS, INPUTS_TEXT, NUM_SHOTS
from p3data.format.tfrecord import frame_pieces
from p3data.templates.render import CompiledTemplate, Rendered

Group = tuple[str, str, str, str]  # (draw task, task split, template name, what makes prompts)


class VariantWriter:
    """The few-shot outputs of one unit: their prompters, made once per unit, and their
    records, written batch by batch as the unit's renders come."""

    def __init__(self, config: CacheConfig, outputs: Sequence[TaskOutput], *,
                 templates: Mapping[str, CompiledTemplate], long_fields: Sequence[str],
                 encoder: EntryEncoder, metas: dict[str, work.PartMeta]):
        self.encoder, self.metas = encoder, metas
        groups: dict[Group, list[TaskOutput]] = {}
        for out in outputs:
            variant = out.variant
            assert variant is not None
            prompts = repr(dataclasses.replace(variant.settings, shots=(0,), ratio=None))
            key = (variant.draw_task, out.split, out.template.name, prompts)
            groups.setdefault(key, []).append(out)
        self.prompters: dict[Group, FewshotPrompter] = {}
        self.groups: dict[Group, list[TaskOutput]] = {}
        for key, members in groups.items():
            first = members[0].variant
            assert first is not None
            settings = dataclasses.replace(first.settings, ratio=None, shots=tuple(sorted(
                {out.variant.shots for out in members if out.variant is not None})))
            pool_spec = next((o.variant.pool for o in members if o.variant and o.variant.pool),
                             None)
            try:
                pool = (load_pool(config, pool_spec) if pool_spec is not None
                        else build_pool([], settings, encoder.tokenizer))
            except P3DataError as err:  # the pool could not be built: these variants fail
                for out in members:
                    metas[out.task].failed = str(err)
                continue
            self.groups[key] = members
            self.prompters[key] = FewshotPrompter(
                task=first.draw_task, split=key[1], template=templates[key[2]], pool=pool,
                source=first.source, settings=settings, tokenizer=encoder.tokenizer,
                long_fields=long_fields)

    @property
    def outputs(self) -> list[TaskOutput]:
        """The outputs it writes (those whose pool could not be built are failed)."""
        return [out for members in self.groups.values() for out in members]

    def write(self, template: str, queries: Sequence[tuple[Mapping[str, Any], Rendered]], *,
              first: int, files: Mapping[str, BinaryIO]) -> None:
        """One batch's kept renders by `template` (with their rows), the first of them the
        unit's kept example number `first` of that template."""
        if not queries:
            return
        for key, members in self.groups.items():
            if key[2] != template:
                continue
            examples = self.prompters[key].prompts(queries)
            renders = [rendered for _, rendered in queries]
            twins = any(out.score_eval for out in members)
            choices = [c for r in renders for c in r.answer_choices or ()] if twins else []
            ids = self.encoder.tokenizer.encode_packed([r.targets for r in renders] + choices)
            choice_ids = dict(zip(choices, ids[len(renders):], strict=True))
            plain = not all(out.score_eval for out in members)
            targets = [self.encoder.targets(r.targets, i)
                       for r, i in zip(renders, ids[:len(renders)], strict=True)] if plain else []
            # a prompt's entries, once for all the variants that show it (a twin, its base)
            prompts = {out.variant.shots: _prompt_entries(examples[out.variant.shots])
                       for out in members if out.variant is not None}
            for out in members:
                assert out.variant is not None
                records = self._records(out, examples[out.variant.shots],
                                        prompts[out.variant.shots], targets=targets,
                                        choice_ids=choice_ids, first=first)
                files[out.task].write(b"".join(records))

    def finish(self) -> None:
        """Each variant's few-shot statistics into its part's record."""
        for key, members in self.groups.items():
            for out in members:
                assert out.variant is not None
                stats = self.prompters[key].stats[out.variant.shots]
                self.metas[out.task].fewshot = stats.as_dict()

    def _records(self, out: TaskOutput, examples: list[FewshotExample],
                 prompts: list[tuple[bytes, bytes, bytes]], *,
                 targets: list[tuple[bytes, int]], choice_ids: dict, first: int) -> list[bytes]:
        """The records of one variant's examples: `prompts` their entries (`_prompt_entries`),
        `targets` their targets' (a plain variant's)."""
        meta, encoder, records = self.metas[out.task], self.encoder, []
        for k, (example, (rows, inputs, shots)) in enumerate(zip(examples, prompts,
                                                                  strict=True)):
            n_in = example.input_ids.tokens
            if not out.score_eval:
                target, n_out = targets[k]
                choice_list = (encoder.choice_list(example.answer_choices or [])
                               if out.with_choices else b"")
                records += frame_pieces(
                    wrap_entries(choice_list, rows, inputs, shots, target))
                meta.add_example(n_in, n_out)
                continue
            for j, choice in enumerate(example.answer_choices or ()):
                correct, rest, n_out = encoder.choice(choice, choice == example.targets,
                                                      choice_ids[choice])
                records += frame_pieces(work.twin_record(
                    first + k, j, inputs + correct + shots + rest, before_idx=rows))
                meta.add_example(n_in, n_out)
        return records


def _prompt_entries(examples: list[FewshotExample]) -> list[tuple[bytes, bytes, bytes]]:
    """Each example's `exemplar_rows`, inputs (text and ids) and `num_shots` map entries."""
    return [(ids_entry(EXEMPLAR_ROWS, e.exemplar_rows),  # int64s, packed as ids are
             text_entry(INPUTS_TEXT, e.inputs) + packed_ids_entry(INPUTS, e.input_ids.varints),
             _shots_entry(e.num_shots)) for e in examples]


@functools.cache
def _shots_entry(num_shots: int) -> bytes:
    """The `num_shots` map entry: a few values, each encoded once."""
    return encode_entries({NUM_SHOTS: num_shots})
