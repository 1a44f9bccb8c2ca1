"""Stage 2: parts -> a seqio cache. Per task split: output shards, info and stats JSON; per
task: `manifest.json`, then `COMPLETED` last, only when every split is complete and the
folder holds exactly the files the manifest lists.

Examples go to output shards round-robin in source order, so each shard is an even sample of
the split and the same inputs always give the same bytes.

A rebuild first withdraws the old build (`withdraw`, on the driver, before any worker writes):
`COMPLETED` goes first, then the manifest, then every file this build will not reuse, so a
crash at any point leaves a folder seqio does not read as complete.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator

from p3data import __version__
from p3data.cache import fs, layout, parts
from p3data.cache.example import encode_entries, wrap_entries
from p3data.cache.plan import CacheConfig, TaskInfo, template_digest
from p3data.cache.tfrecord import frame, read_frames, read_records
from p3data.templates.render import RENDER_ERROR

EXAMPLES_PER_SHARD = 10_000  # with --shards unset: about one output shard per 10k examples
MAX_AUTO_SHARDS = 64  # seqio's --min_shards default: enough for 64 reading hosts


def features(info: TaskInfo) -> dict[str, dict]:
    """`info.<split>.json` features, as seqio's writer derives them from an example."""
    seq_int = {"dtype": "int32", "shape": [None]}
    text = {"dtype": "string", "shape": []}
    spec = {"inputs": seq_int, "inputs_pretokenized": text,
            "targets": seq_int, "targets_pretokenized": text}
    if info.spec.score_eval:
        spec.update(idx=seq_int, is_correct={"dtype": "bool", "shape": []},
                    weight={"dtype": "float32", "shape": []})
    elif info.spec.template.answer_choices is not None:
        spec["answer_choices"] = {"dtype": "string", "shape": [None]}
    return spec


def shard_count(config: CacheConfig, examples: int) -> int:
    if config.p3_layout:
        return 1
    if config.shards:
        return config.shards
    return min(MAX_AUTO_SHARDS, max(1, -(-examples // EXAMPLES_PER_SHARD)))


def _task_folder(config: CacheConfig, task: str) -> str:
    return layout.task_dir(config.output_dir, task, config.p3_layout)


def _reusable_summary(config: CacheConfig, info: TaskInfo, split: str) -> dict | None:
    """A split an earlier run of this build assembled, with its files still in place."""
    try:
        summary = json.loads(fs.read_bytes(config.work.split_summary(info.spec.name, split)))
    except (OSError, ValueError):
        return None
    folder = _task_folder(config, info.spec.name)
    if summary.get("fingerprint") != info.fingerprint or not all(
            fs.exists(fs.join(folder, name)) for name in summary.get("files", {})):
        return None
    return summary


def withdraw(config: CacheConfig, info: TaskInfo) -> None:
    """Before a task is (re)built: remove COMPLETED, then the manifest, then every file that
    no reusable split of this build lists (old shards, other shard counts, strays)."""
    folder = _task_folder(config, info.spec.name)
    present = fs.files_in(folder)
    if not present:
        return
    keep = {name for split in info.splits
            for name in (_reusable_summary(config, info, split) or {}).get("files", {})}
    first = [name for name in (layout.COMPLETED, layout.MANIFEST) if name in present]
    for name in first:  # one at a time, in this order: COMPLETED is never left alone
        fs.delete([fs.join(folder, name)])
    fs.delete([fs.join(folder, name) for name in present
               if name not in keep and name not in first])


def finalize_split(config: CacheConfig, info: TaskInfo, split: str) -> dict:
    """Assemble one task split from its parts; returns its summary (kept on disk when the split
    succeeded, so a rerun reuses it)."""
    task = info.spec.name
    if (summary := _reusable_summary(config, info, split)) is not None:
        return summary
    metas = []
    for index in range(info.shard_counts[split]):
        meta = parts.read_meta(config.work.part(task, split, index, ".json"))
        if meta is None or meta.fingerprint != info.fingerprint:
            return {"split": split, "failed": f"source shard {index} was not processed"}
        metas.append(meta)
    summary = {"fingerprint": info.fingerprint, "split": split,
               "rows_read": sum(m.rows_read for m in metas),
               "rows_kept": sum(m.kept for m in metas),
               "dropped": _sum_dicts(m.dropped for m in metas),
               "schema": _sum_dicts(m.schema for m in metas),
               "errors": [e for m in metas for e in m.errors][:parts.MAX_ERRORS_KEPT]}
    if failed := next((m for m in metas if m.failed), None):
        return {**summary, "failed": failed.failed, "traceback": failed.traceback}
    if reason := _verdict(config, info, split, summary):
        return {**summary, "failed": reason}
    stats = {"examples": sum(m.examples for m in metas)}
    if stats["examples"]:
        for key in ("inputs_tokens", "targets_tokens"):
            stats[key] = sum(getattr(m, key) for m in metas)
            stats[key.replace("tokens", "max_tokens")] = max(
                getattr(m, key.replace("tokens", "max_tokens")) for m in metas)
    folder = _task_folder(config, task)
    count = shard_count(config, stats["examples"])
    files = _write_shards(config, info, split, metas, folder, count)
    version = layout.P3_SEQIO_VERSION if config.p3_layout else layout.seqio_version()
    info_text = layout.info_json(features(info) if stats["examples"] else {}, count, version)
    for name, text in ((layout.info_name(split), info_text),
                       (layout.stats_name(split), layout.stats_json(stats))):
        fs.write_bytes(fs.join(folder, name), text.encode())
        files[name] = hashlib.sha256(text.encode()).hexdigest()
    summary.update(stats=stats, num_shards=count, files=files)
    fs.write_bytes(config.work.split_summary(task, split), json.dumps(summary, sort_keys=True)
                   .encode())
    return summary


def _verdict(config: CacheConfig, info: TaskInfo, split: str, summary: dict) -> str:
    """Why a fully processed split still is not a success ("" when it is one)."""
    source = info.spec.split_mapping[split]
    rows, errors = summary["rows_read"], summary["dropped"].get(RENDER_ERROR, 0)
    first = f": {summary['errors'][0]}" if summary["errors"] else ""
    if not rows:
        listed = info.spec.entry.splits.get(source)
        return (f"source split {source!r} has no rows (the catalog lists {listed:,}); check "
                f"the data files" if listed else f"source split {source!r} has no rows")
    if errors == rows:
        return f"every one of the {rows:,} rows failed to render{first}"
    if errors > config.max_error_rate * rows:
        return (f"{errors:,} of {rows:,} rows ({errors / rows:.1%}) failed to render, more "
                f"than the maximum error rate {config.max_error_rate:.1%}{first}")
    return ""


def _sum_dicts(dicts) -> dict[str, int]:
    total: dict[str, int] = {}
    for counts in dicts:
        for key, value in counts.items():
            total[key] = total.get(key, 0) + value
    return dict(sorted(total.items()))


def _write_shards(config: CacheConfig, info: TaskInfo, split: str, metas: list[parts.PartMeta],
                  folder: str, count: int) -> dict[str, str]:
    """Stream the parts in order into `count` shards; returns shard name -> sha256."""
    task = info.spec.name
    names = [layout.shard_name(split, i, count) for i in range(count)]
    digests = [hashlib.sha256() for _ in names]
    offset, position = 0, 0  # kept examples of earlier parts; examples written so far
    with _Writers([fs.join(folder, n) for n in names]) as handles:
        for index, meta in enumerate(metas):
            path = config.work.part(task, split, index, ".tfrecord")
            with fs.open_read(path) as part:
                for framed in _final_records(part, path, info.spec.score_eval, offset):
                    handles[position % count].write(framed)
                    digests[position % count].update(framed)
                    position += 1
            offset += meta.kept
    return {name: digest.hexdigest() for name, digest in zip(names, digests, strict=True)}


def _final_records(part, path: str, score_eval: bool, offset: int) -> Iterator[bytes]:
    """A part's records as output records: copied as they are, or given their `idx`."""
    if not score_eval:
        yield from read_frames(part, path)
        return
    for record in read_records(part, path):
        ordinal, choice, entries = parts.unpack_twin(record)
        idx = encode_entries({"idx": [ordinal + offset, choice]})
        yield frame(wrap_entries(idx + entries))


class _Writers:
    """Several atomic writers opened and committed together."""

    def __init__(self, paths: list[str]):
        self._contexts = [fs.atomic_writer(path) for path in paths]

    def __enter__(self):
        return [context.__enter__() for context in self._contexts]

    def __exit__(self, *exc):
        for context in self._contexts:
            context.__exit__(*exc)
        return False


def finalize_task(config: CacheConfig, info: TaskInfo, summaries: list[dict]) -> dict:
    """Write the manifest, then COMPLETED, if every split is complete and the folder holds
    exactly the files the manifest lists; returns the status."""
    task = info.spec.name
    by_split = {s["split"]: s for s in summaries}
    failed = [f"{split}: {s['failed']}" for split, s in sorted(by_split.items()) if "failed" in s]
    missing = [split for split in info.splits if split not in by_split]
    tracebacks = [s["traceback"] for s in by_split.values() if s.get("traceback")]
    if failed or missing:
        return {"task": task, "failed": "; ".join(failed + [f"{m}: not built" for m in missing]),
                "tracebacks": tracebacks[:1]}
    folder = _task_folder(config, task)
    listed = {name for split in info.splits for name in by_split[split]["files"]}
    present = set(fs.files_in(folder))
    if absent := sorted(listed - present):
        return {"task": task, "failed": f"{absent[0]} vanished from {folder} during the build"}
    fs.delete([fs.join(folder, name) for name in sorted(present - listed)])
    template = info.spec.template
    manifest = {
        "p3data_version": __version__,
        "task": task,
        "fingerprint": info.fingerprint,
        "dataset": info.spec.entry.name,
        "template": {"name": template.name, "id": template.id, "origin": template.origin,
                     "sha256": template_digest(template)},
        "score_eval": info.spec.score_eval,
        "sources": info.sources,
        "split_mapping": {s: info.spec.split_mapping[s] for s in info.splits},
        "vocabulary": {"sha256": hashlib.sha256(config.vocab_model).hexdigest(),
                       "extra_ids": config.extra_ids},
        "seed": config.seed,
        "layout": "p3" if config.p3_layout else "seqio",
        "splits": {split: {key: by_split[split][key] for key in (
            "rows_read", "rows_kept", "dropped", "errors", "schema", "stats", "num_shards",
            "files")}
            for split in info.splits},
    }
    fs.write_bytes(fs.join(folder, layout.MANIFEST), layout.dumps(manifest).encode())
    fs.write_bytes(fs.join(folder, layout.COMPLETED), b"")
    fs.delete_tree(config.work.task(task))
    return {"task": task, "manifest": manifest}
