"""Stage 1: one source shard of one dataset split, each row through the job's dataset step
(xP3's) then rendered by every selected template once under the job's row rule, tokenized in
batches, written as one part per task. A row the step drops keeps its number. A capped task
(xP3's) keeps only its template's candidate rows, and when it may keep more examples than its
cap, writes their sort keys beside the part, for assembly to cut (`builder.selection`).

A `_score_eval` twin reuses its base template's render and token ids: one example per answer
choice, `is_correct` = choice == gold target, `weight` 1.0, as T0's rank classification did.
"""

from __future__ import annotations

from collections import Counter

from p3data import fs
from p3data.batching import row_batches
from p3data.builder import work_folder as work
from p3data.builder.entries import EntryEncoder
from p3data.builder.fewshot_work import VariantWriter
from p3data.builder.jobs import CacheConfig, TaskOutput, WorkUnit
from p3data.builder.selection import NOT_SELECTED, Selection
from p3data.datasets.schema import RowChecker
from p3data.datasets.stores import open_store
from p3data.errors import P3DataError, describe_bug, storage_refusal
from p3data.format.example import packed_ids_entry, text_entry, wrap_entries
from p3data.format.features import INPUTS, INPUTS_TEXT
from p3data.format.tfrecord import frame_pieces
from p3data.templates.render import DatasetRenderer, Dropped, Outcome, Rendered
from p3data.tokenize import Tokenizer


def _pending(config: CacheConfig, unit: WorkUnit) -> list[TaskOutput]:
    """Outputs of this unit without a part finished with the same settings: a part that
    failed is redone, since what failed may have been transient (a file gone for a moment)."""
    if not unit.earlier_parts:  # the work folder held none of its parts when planned
        return list(unit.job.outputs)
    pending = []
    for out in unit.job.outputs:
        meta = work.read_json(config.workdir.part(out.task, out.split, unit.part(out), ".json"),
                                work.PartMeta)
        if meta is None or meta.failed or (meta.fingerprint, meta.rows) != (
                out.fingerprint, _rows(unit, out)):
            pending.append(out)
    return pending


def _rows(unit: WorkUnit, out: TaskOutput) -> list[int]:
    """What a part was made from: the source shard's rows, and for a later source split of a
    task split of several, which one (another sharding may give its part number to another
    source split's shard of the same rows)."""
    return [unit.shard.start, unit.shard.stop, *([out.source_index] if out.source_index else [])]


def process_unit(config: CacheConfig, unit: WorkUnit, tokenizer: Tokenizer) -> bool:
    """Write the missing parts of one unit; whether every one of them succeeded."""
    pending = _pending(config, unit)
    metas: dict[str, work.PartMeta] = {}
    if pending:
        metas = {out.task: work.PartMeta(out.fingerprint, _rows(unit, out)) for out in pending}
        try:
            _render_shard(config, unit, tokenizer=tokenizer, outputs=pending, metas=metas)
        except P3DataError as err:  # e.g. an unreadable source file: fails this split's tasks
            for meta in metas.values():
                meta.failed = str(err)
        except Exception as err:  # noqa: BLE001 - a bug fails this dataset split, not the run
            if storage_refusal(err) is not None:  # a full disk: no later write fares better
                raise
            reason, text = describe_bug(err)
            for meta in metas.values():
                meta.failed, meta.traceback = reason, text
        work.write_json_files({  # metas last: they mark the parts complete
            config.workdir.part(out.task, out.split, unit.part(out), ".json"): metas[out.task]
            for out in pending})
    return not any(meta.failed for meta in metas.values())


def _render_shard(config: CacheConfig, unit: WorkUnit, *, tokenizer: Tokenizer,
                  outputs: list[TaskOutput], metas: dict[str, work.PartMeta]) -> None:
    job = unit.job
    renderer = DatasetRenderer({o.template.id: o.template for o in outputs}.values(), config.seed,
                               rule=job.rule, step=job.step, config=job.entry.subset)
    rendered = [o for o in outputs if o.template.name not in renderer.broken]
    encoder = EntryEncoder(tokenizer)
    variants = VariantWriter(config, [o for o in rendered if o.variant is not None],
                             templates=renderer.templates, long_fields=list(job.entry.text_lengths),
                             encoder=encoder, metas=metas)
    rendered = [o for o in rendered if o.variant is None] + variants.outputs
    users = {name: [o for o in rendered if o.template.name == name] for name in renderer.templates}
    plain = {name: [o for o in outs if o.variant is None] for name, outs in users.items()}
    # A template's tasks in one job share its selection: the same key and cap (`SplitJob`).
    selections = {name: next((o.selection for o in outs), None) for name, outs in users.items()}
    ordinals = Counter()  # kept examples so far, per template
    checker = RowChecker(job.entry.features)
    rows = open_store(job.entry, config.data_dir, config.rows_per_shard).read(
        job.source_split, unit.shard)
    paths = {out.task: config.workdir.part(out.task, out.split, unit.part(out), ".tfrecord")
             for out in rendered}
    key_paths = {out.task: config.workdir.part(out.task, out.split, unit.part(out), ".keys")
                 for out in rendered if out.selection is not None and out.selection.cuts}
    with fs.atomic_writers([*paths.values(), *key_paths.values()]) as writers:
        files = {task: writers[path] for task, path in paths.items()}
        key_files = {task: writers[path] for task, path in key_paths.items()}
        start = unit.shard.start
        for batch in row_batches(rows):
            # Rows that do not fit the schema still render as promptsource would: counted.
            mismatches = Counter(problem for row in batch for problem in checker.problems(row))
            for out in rendered:
                meta = metas[out.task]
                meta.schema = dict(Counter(meta.schema) + mismatches)
            for name, outcomes in renderer.render_each(batch, start):
                if (selection := selections[name]) is not None:
                    outcomes = _candidates(selection, outcomes, start)
                kept = [o for o in outcomes if isinstance(o, Rendered)]
                for out in users[name]:
                    _count(metas[out.task], len(batch), len(kept), outcomes)
                sizes = _write(plain[name], kept, first=ordinals[name], encoder=encoder,
                               files=files, metas=metas)
                for task in key_files.keys() & sizes.keys():
                    key_files[task].write(work.key_lines(selection.sort_keys(
                        [r.inputs for r in kept], [r.index for r in kept]), sizes[task]))
                variants.write(name, [(batch[r.index - start], r) for r in kept],
                               first=ordinals[name], files=files)
                ordinals[name] += len(kept)
            start += len(batch)
    variants.finish()
    for out in outputs:  # a template that cannot render fails its own tasks only
        if out.template.name in renderer.broken:
            metas[out.task].failed = str(renderer.broken[out.template.name])


def _candidates(selection: Selection, outcomes: list[Outcome], start: int) -> list[Outcome]:
    """The outcomes of rows that are candidates of the selection; the others are dropped as
    `NOT_SELECTED` (what they rendered to, or failed with, never counts: xP3 never saw them)."""
    chosen = selection.candidates(start, start + len(outcomes))
    if chosen is None:
        return outcomes
    return [o if chosen[k] else Dropped(o.index, NOT_SELECTED) for k, o in enumerate(outcomes)]


def _count(meta: work.PartMeta, rows: int, kept: int, outcomes: list) -> None:
    meta.rows_read += rows
    meta.kept += kept
    for outcome in outcomes:
        if isinstance(outcome, Dropped):
            meta.dropped[outcome.reason] = meta.dropped.get(outcome.reason, 0) + 1
            if outcome.error is not None and len(meta.errors) < work.MAX_ERRORS_KEPT:
                meta.errors.append(str(outcome.error))


def _write(users: list[TaskOutput], kept: list[Rendered], *, first: int, encoder: EntryEncoder,
           files: dict, metas: dict[str, work.PartMeta]) -> dict[str, list[tuple[int, int]]]:
    """Encode each kept render once and share the bytes between a task and its twin; one write
    per task and batch. Returns each plain task's (inputs, targets) tokens per example.

    Map entries are concatenated in protobuf's deterministic key order (answer_choices,
    inputs_pretokenized, inputs, is_correct, targets_pretokenized, targets, weight), which
    serializes the whole example deterministically (tests compare with `encode_example`).
    """
    sizes: dict[str, list[tuple[int, int]]] = {out.task: [] for out in users}
    if not kept:
        return sizes
    twins = any(out.score_eval for out in users)
    choices = [c for r in kept for c in r.answer_choices or ()] if twins else []
    ids = encoder.tokenizer.encode_packed(
        [r.inputs for r in kept] + [r.targets for r in kept] + choices)
    n = len(kept)
    choice_ids = dict(zip(choices, ids[2 * n:], strict=True))
    records: dict[str, list[bytes]] = {out.task: [] for out in users}  # framing pieces
    for k, r in enumerate(kept):
        in_ids = ids[k]
        n_in = in_ids.tokens
        inputs = text_entry(INPUTS_TEXT, r.inputs) + packed_ids_entry(INPUTS, in_ids.varints)
        for out in users:
            meta, task_records = metas[out.task], records[out.task]
            if not out.score_eval:
                targets, n_out = encoder.targets(r.targets, ids[n + k])
                choice_list = (encoder.choice_list(r.answer_choices or []) if out.with_choices
                               else b"")
                task_records += frame_pieces(wrap_entries(choice_list, inputs, targets))
                meta.add_example(n_in, n_out)
                sizes[out.task].append((n_in, n_out))
                continue
            for j, choice in enumerate(r.answer_choices or ()):
                correct, rest, n_out = encoder.choice(choice, choice == r.targets,
                                                      choice_ids[choice])
                task_records += frame_pieces(work.twin_record(first + k, j,
                                                              inputs + correct + rest))
                meta.add_example(n_in, n_out)
    for task, task_records in records.items():
        files[task].write(b"".join(task_records))
    return sizes
