"""Stage 2: parts -> a seqio cache. Per task split: output shards, info and stats JSON; per
task: `manifest.json`, then `COMPLETED` last, only when every split is complete.

Examples go to output shards round-robin in source order, so each shard is an even sample of
the split and the same inputs always give the same bytes.
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


def _summary_path(config: CacheConfig, task: str, split: str) -> str:
    return fs.join(config.work_dir, task, f"{split}.summary.json")


def finalize_split(config: CacheConfig, info: TaskInfo, split: str) -> dict:
    """Assemble one task split from its parts; returns its summary (also kept on disk)."""
    task = info.spec.name
    summary_path = _summary_path(config, task, split)
    if fs.exists(summary_path):
        summary = json.loads(fs.read_bytes(summary_path))
        if summary["fingerprint"] == info.fingerprint:
            return summary
    metas = []
    for index in range(info.shard_counts[split]):
        meta = parts.read_meta(parts.part_path(config.work_dir, task, split, index, ".json"))
        if meta is None or meta.fingerprint != info.fingerprint:
            raise RuntimeError(f"{task}/{split}: part {index} is missing; stage 1 is incomplete")
        metas.append(meta)
    summary = {"fingerprint": info.fingerprint, "split": split,
               "rows_read": sum(m.rows_read for m in metas),
               "rows_kept": sum(m.kept for m in metas),
               "dropped": _sum_dicts(m.dropped for m in metas),
               "errors": [e for m in metas for e in m.errors][:parts.MAX_ERRORS_KEPT]}
    failures = [m.failed for m in metas if m.failed]
    if failures:
        summary["failed"] = failures[0]
        return summary  # nothing written: this task will not be marked complete
    stats = {"examples": sum(m.examples for m in metas)}
    if stats["examples"]:
        for key in ("inputs_tokens", "targets_tokens"):
            stats[key] = sum(getattr(m, key) for m in metas)
            stats[key.replace("tokens", "max_tokens")] = max(
                getattr(m, key.replace("tokens", "max_tokens")) for m in metas)
    folder = layout.task_dir(config.output_dir, task, config.p3_layout)
    count = shard_count(config, stats["examples"])
    files = _write_shards(config, info, split, metas, folder, count)
    version = layout.P3_SEQIO_VERSION if config.p3_layout else layout.seqio_version()
    info_text = layout.info_json(features(info) if stats["examples"] else {}, count, version)
    for name, text in ((layout.info_name(split), info_text),
                       (layout.stats_name(split), layout.stats_json(stats))):
        fs.write_bytes(fs.join(folder, name), text.encode())
        files[name] = hashlib.sha256(text.encode()).hexdigest()
    summary.update(stats=stats, num_shards=count, files=files)
    fs.write_bytes(summary_path, json.dumps(summary, sort_keys=True).encode())
    return summary


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
            path = parts.part_path(config.work_dir, task, split, index, ".tfrecord")
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
    """Write the manifest, then COMPLETED, if every split is complete; returns the status."""
    task = info.spec.name
    by_split = {s["split"]: s for s in summaries}
    failed = [f"{split}: {s['failed']}" for split, s in by_split.items() if "failed" in s]
    missing = [split for split in info.splits if split not in by_split]
    if failed or missing:
        return {"task": task, "failed": "; ".join(failed + [f"{m}: not built" for m in missing])}
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
            "rows_read", "rows_kept", "dropped", "errors", "stats", "num_shards", "files")}
            for split in info.splits},
    }
    folder = layout.task_dir(config.output_dir, task, config.p3_layout)
    fs.write_bytes(fs.join(folder, layout.MANIFEST), layout.dumps(manifest).encode())
    fs.write_bytes(fs.join(folder, layout.COMPLETED), b"")
    fs.delete_tree(fs.join(config.work_dir, task))
    return {"task": task, "manifest": manifest}
