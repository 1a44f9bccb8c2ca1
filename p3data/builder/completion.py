"""A task folder's seal: `COMPLETED`, beside a manifest that lists exactly the files the folder
holds.

Before any worker writes, `withdraw` removes `COMPLETED`, then the manifest, then every file
the build will not reuse, so a crash at any point leaves a folder seqio does not read as
complete; the old manifest stays while it records kept splits, until the new one, listing them
too, replaces it. Once every split is assembled (`assembly`), `complete_task` writes the
manifest, then `COMPLETED` last.
"""

from __future__ import annotations

from p3data import __version__, fs
from p3data.builder.assembly import reusable_record
from p3data.builder.fingerprint import template_digest
from p3data.builder.jobs import CacheConfig, TaskInfo, task_folder
from p3data.builder.selection import selection_record
from p3data.builder.work_folder import SplitSummary, TaskStatus
from p3data.fewshot import VariantSpec
from p3data.format import layout
from p3data.format.manifest import (
    Manifest,
    TemplateRecord,
    VocabularyRecord,
    write_manifest,
)


def withdraw(config: CacheConfig, info: TaskInfo) -> None:
    """Before a task is (re)built: remove COMPLETED, then the manifest (kept while it records
    splits the build keeps, until the new one replaces it), then every file that neither a
    kept split nor a reusable split of this build lists (old shards, other shard counts,
    strays)."""
    folder = task_folder(config, info.spec.name)
    present = info.present
    if not present:
        return
    keep = {name for record in info.kept.values() for name in record.files}
    keep |= {name for split in info.splits
             for name in getattr(reusable_record(config, info, split), "files", {})}
    seals = (layout.COMPLETED,) if info.kept else (layout.COMPLETED, layout.MANIFEST)
    for name in seals:  # one at a time, in this order: COMPLETED is never left alone
        if name in present:
            fs.delete([fs.join(folder, name)])
    fs.delete([fs.join(folder, name) for name in present
               if name not in keep and name not in (layout.COMPLETED, layout.MANIFEST)])


def complete_task(config: CacheConfig, info: TaskInfo,
                  summaries: list[SplitSummary]) -> TaskStatus:
    """Write the manifest, then COMPLETED, if every split is complete and the folder holds
    exactly the files the manifest lists."""
    task = info.spec.name
    by_split = {summary.split: summary for summary in summaries}
    failed = [f"{split}: {s.failed}" for split, s in sorted(by_split.items()) if s.failed]
    missing = [split for split in info.splits if split not in by_split]
    if failed or missing:
        tracebacks = [s.traceback for s in by_split.values() if s.traceback]
        return TaskStatus("; ".join(failed + [f"{m}: not built" for m in missing]),
                          tracebacks[:1])
    records = {**info.kept, **{split: by_split[split].record for split in info.splits}}
    listed = [split for split in info.spec.split_mapping if split in records]
    folder = task_folder(config, task)
    template = info.spec.template
    manifest = Manifest(
        p3data_version=__version__, task=task, fingerprint=info.fingerprint,
        dataset=info.spec.entry.name,
        template=TemplateRecord(template.name, template.id, template.origin,
                                template_digest(template)),
        score_eval=info.spec.score_eval, sources=info.sources,
        split_mapping={s: info.spec.split_mapping[s] for s in listed},
        vocabulary=VocabularyRecord(config.vocab_sha256, config.extra_ids),
        seed=config.seed, layout="p3" if config.p3_layout else "seqio",
        splits={split: records[split] for split in listed},
        fewshot=info.spec.prompt_record() if isinstance(info.spec, VariantSpec) else None,
        selection=selection_record(config.selection, config.cap, info.spec.split_cap),
        language=info.spec.language)
    present = set(fs.files_in(folder))
    if absent := sorted(manifest.files - present):
        return TaskStatus(f"{absent[0]} vanished from {folder} during the build")
    strays = present - manifest.files - {layout.MANIFEST, layout.COMPLETED}
    fs.delete([fs.join(folder, name) for name in sorted(strays)])
    write_manifest(folder, manifest)  # replaces a manifest that recorded the kept splits
    fs.write_bytes(fs.join(folder, layout.COMPLETED), b"")
    fs.delete_tree(config.workdir.task(task), later=True)  # its work files, no longer read
    return TaskStatus()

