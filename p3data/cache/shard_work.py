"""Stage 1: one source shard of one dataset split, rendered by every selected template once,
tokenized in batches, written as one part per task.

A `_score_eval` twin reuses its base template's render and token ids: one example per answer
choice, `is_correct` = choice == gold target, `weight` 1.0, as T0's rank classification did.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack
from itertools import islice

from p3data.cache import fs, parts
from p3data.cache.example import encode_entries
from p3data.cache.plan import CacheConfig, TaskOutput, WorkUnit
from p3data.cache.tfrecord import frame
from p3data.cache.tokenize import EOS_ID, Tokenizer
from p3data.errors import P3DataError
from p3data.stores import open_store
from p3data.templates import CompiledTemplate, Dropped, Rendered, prepare_row

BATCH_ROWS = 512


def _pending(config: CacheConfig, unit: WorkUnit) -> list[TaskOutput]:
    """Outputs of this unit without a finished part made with the same settings."""
    pending = []
    for out in unit.job.outputs:
        meta = parts.read_meta(parts.part_path(
            config.work_dir, out.task, out.split, unit.index, ".json"))
        if meta is None or (meta.fingerprint, meta.rows) != (out.fingerprint, _rows(unit)):
            pending.append(out)
    return pending


def _rows(unit: WorkUnit) -> list[int]:
    return [unit.shard.start, unit.shard.stop]


def process_unit(config: CacheConfig, unit: WorkUnit,
                 tokenizer: Tokenizer) -> Iterator[tuple[str, str]]:
    """Write the missing parts of one unit; yields the (task, split) of every output."""
    pending = _pending(config, unit)
    if pending:
        metas = {out.task: parts.PartMeta(out.fingerprint, _rows(unit)) for out in pending}
        try:
            _render_shard(config, unit, tokenizer, pending, metas)
        except P3DataError as err:  # e.g. the source file vanished after planning
            for meta in metas.values():
                meta.failed = str(err)
        for out in pending:  # metas last: they mark the parts complete
            fs.write_bytes(parts.part_path(config.work_dir, out.task, out.split, unit.index,
                                           ".json"), metas[out.task].to_json())
    for out in unit.job.outputs:
        yield out.task, out.split


def _render_shard(config: CacheConfig, unit: WorkUnit, tokenizer: Tokenizer,
                  outputs: list[TaskOutput], metas: dict[str, parts.PartMeta]) -> None:
    job = unit.job
    compiled = {o.template.id: CompiledTemplate(o.template, config.seed) for o in outputs}
    ordinals = Counter()  # kept examples so far, per template
    rows = open_store(job.entry, config.data_dir, config.rows_per_shard).read(
        job.source_split, unit.shard)
    with ExitStack() as stack:
        files = {out.task: stack.enter_context(fs.atomic_writer(parts.part_path(
            config.work_dir, out.task, out.split, unit.index, ".tfrecord"))) for out in outputs}
        start = unit.shard.start
        while batch := list(islice(rows, BATCH_ROWS)):
            prepared = [prepare_row(row) for row in batch]
            for template_id, template in compiled.items():
                users = [o for o in outputs if o.template.id == template_id]
                outcomes = [template.render_prepared(row, start + i)
                            for i, row in enumerate(prepared)]
                kept = [o for o in outcomes if isinstance(o, Rendered)]
                for out in users:
                    _count(metas[out.task], len(batch), len(kept), outcomes)
                first = ordinals[template_id]
                ordinals[template_id] += len(kept)
                _write(users, kept, first, tokenizer, files, metas)
            start += len(batch)


def _count(meta: parts.PartMeta, rows: int, kept: int, outcomes: list) -> None:
    meta.rows_read += rows
    meta.kept += kept
    for outcome in outcomes:
        if isinstance(outcome, Dropped):
            meta.dropped[outcome.reason] = meta.dropped.get(outcome.reason, 0) + 1
            if outcome.error is not None and len(meta.errors) < parts.MAX_ERRORS_KEPT:
                meta.errors.append(str(outcome.error))


def _write(users: list[TaskOutput], kept: list[Rendered], first: int, tokenizer: Tokenizer,
           files: dict, metas: dict[str, parts.PartMeta]) -> None:
    if not kept:
        return
    texts = [r.inputs for r in kept] + [r.targets for r in kept]
    twins = any(out.score_eval for out in users)
    choices = [c for r in kept for c in r.answer_choices or ()] if twins else []
    ids = tokenizer.encode(texts + choices)
    inputs, targets, choice_ids = ids[:len(kept)], ids[len(kept):2 * len(kept)], ids[2 * len(kept):]
    for out in users:
        meta, handle = metas[out.task], files[out.task]
        if not out.score_eval:
            for r, in_ids, out_ids in zip(kept, inputs, targets, strict=True):
                features = {"inputs": in_ids, "inputs_pretokenized": r.inputs,
                            "targets": [*out_ids, EOS_ID], "targets_pretokenized": r.targets}
                if out.with_choices:
                    features["answer_choices"] = r.answer_choices or []
                handle.write(frame(parts.base_record(encode_entries(features))))
                meta.add_tokens(in_ids, features["targets"])
            continue
        position = 0
        for k, (r, in_ids) in enumerate(zip(kept, inputs, strict=True)):
            for j, choice in enumerate(r.answer_choices or ()):
                out_ids = [*choice_ids[position], EOS_ID]
                position += 1
                entries = encode_entries({
                    "inputs": in_ids, "inputs_pretokenized": r.inputs,
                    "is_correct": choice == r.targets, "targets": out_ids,
                    "targets_pretokenized": choice, "weight": 1.0})
                handle.write(frame(parts.twin_record(first + k, j, entries)))
                meta.add_tokens(in_ids, out_ids)
