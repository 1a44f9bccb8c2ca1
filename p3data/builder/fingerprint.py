"""What identifies a build: a task's fingerprint (everything its output bytes depend on: code
and format versions, template, splits, the identity of the rows read, vocabulary, seed,
sharding, its row rule and dataset step when they are not T0's, how its splits are capped
when they are (xP3's), and for a few-shot variant what makes its prompts) and an exemplar
pool's. A rerun reuses only work whose fingerprint is this run's."""

from __future__ import annotations

import hashlib
import json

from p3data import __version__
from p3data.builder.jobs import CacheConfig, rendering_record
from p3data.builder.selection import selection_record
from p3data.fewshot import VariantSpec
from p3data.fewshot.pool import POOL_FILES
from p3data.format.manifest import EXEMPLARS, FORMAT_VERSION, PoolRef
from p3data.taskset import TaskDef
from p3data.templates import Template


def template_digest(template: Template) -> str:
    text = json.dumps([template.jinja, template.answer_choices])
    return hashlib.sha256(text.encode()).hexdigest()


def canonical_json(value: object) -> str:
    """`value` as JSON, as the manifest keeps it (a tuple reads back as a list)."""
    return json.dumps(value, sort_keys=True)


def task_fingerprint(config: CacheConfig, spec: TaskDef, sources: dict) -> str:
    payload = {
        "p3data": __version__, "format": FORMAT_VERSION, "task": spec.name,
        "template": [spec.template.id, template_digest(spec.template)],
        "score_eval": spec.score_eval, "splits": spec.split_mapping, "sources": sources,
        "vocab": config.vocab_sha256, "extra_ids": config.extra_ids,
        "seed": config.seed, "shards": config.shards, "p3_layout": config.p3_layout,
    }
    if (rendering := rendering_record(spec.row_rule, spec.dataset_step)) is not None:
        payload["rendering"] = rendering  # xP3's tasks' (T0's tasks have no such key)
    if (selection := selection_record(config.selection, config.cap, spec.split_cap)) is not None:
        payload["selection"] = selection  # a capped task's (T0's tasks have no such key)
    if isinstance(spec, VariantSpec):  # what makes its prompts (T0's tasks have no such key)
        payload["fewshot"] = spec.prompt_record()
    return in_shard_format(hashlib.sha256(canonical_json(payload).encode()).hexdigest(),
                           config.shard_format)


def in_shard_format(fingerprint: str, shard_format: str) -> str:
    """The fingerprint of a build whose TFRecord build's is `fingerprint`, with its shards in
    `shard_format` (TFRecord's, the default: the same). Derived from the TFRecord build's, so a
    TFRecord cache converted to another format (`p3data export --format arrayrecord`) is
    recorded as, and reused as, the build in that format."""
    if shard_format == "tfrecord":
        return fingerprint
    payload = {"build": fingerprint, "shard_format": shard_format}
    return hashlib.sha256(canonical_json(payload).encode()).hexdigest()


def pool_fingerprint(config: CacheConfig, spec: VariantSpec, split: str,
                     identity: dict) -> str:
    payload = {"p3data": __version__, "format": FORMAT_VERSION, "dataset": spec.entry.name,
               "split": split, "template": [spec.template.id, template_digest(spec.template)],
               # the settings that make its texts (keyed as when they were the separators alone)
               "separators": list(spec.settings.pool_record().values()),
               "rows": identity, "vocab": config.vocab_sha256, "extra_ids": config.extra_ids,
               "seed": config.seed, "files": POOL_FILES}  # a pool of other files is rebuilt
    return hashlib.sha256(canonical_json(payload).encode()).hexdigest()


def exemplar_pool(config: CacheConfig, spec: TaskDef, source: dict) -> PoolRef | None:
    """The pool a variant's task split draws from, from the split's `sources` entry (None: it
    shows no exemplars): what its manifest records, and the pool the build makes."""
    if (exemplars := source.get(EXEMPLARS)) is None:
        return None
    assert isinstance(spec, VariantSpec)
    split = exemplars["split"]
    rows = {key: value for key, value in exemplars.items() if key != "split"}
    return PoolRef(split, pool_fingerprint(config, spec, split, rows))
