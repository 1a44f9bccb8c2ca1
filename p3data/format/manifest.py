"""`manifest.json`, p3data's record beside seqio's files in every task folder: what was built
from what, how rows fared, and the sha256 of every file the folder may hold. Typed and
versioned: every reader goes through `read_manifest`, which refuses a version it does not know.
A few-shot variant's manifest also records what made its prompts (`fewshot`) and, per split,
its few-shot statistics, the rows its exemplars were drawn from (`sources[split][EXEMPLARS]`)
and, for a split with exemplars, the fingerprint of their pool (`pool`, added within format
version 2: a manifest written before it reads as one without a pool recorded). A capped
task's (xP3's) records how its splits were capped (`selection`: rule, cap, candidate pool),
and an xP3 task its language folder (`language`). T0's tasks' manifests have none of these
keys, as before.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import msgspec

from p3data import fs
from p3data.errors import P3DataError
from p3data.format import layout
from p3data.format.layout import MANIFEST, dumps
from p3data.format.shard_format import is_shard

# The version of what p3data writes (manifests, and the bytes of caches: fingerprints carry
# it, so a new version rebuilds older caches). Bump it when either changes.
FORMAT_VERSION = 2
# A variant split's `sources` entry names its exemplars' rows too: {"split": ..., **identity}.
EXEMPLARS = "exemplars"


class ManifestError(P3DataError):
    """A task's manifest.json is missing, cannot be parsed, or is of an unknown version."""


@dataclass(frozen=True)
class TemplateRecord:
    name: str
    id: str
    origin: str  # which template source: "promptsource", "project" or a user folder
    sha256: str  # of the Jinja and answer_choices text


@dataclass(frozen=True)
class VocabularyRecord:
    sha256: str  # of the SentencePiece model, before extra ids are added
    extra_ids: int


@dataclass(frozen=True)
class PoolRef:
    """The exemplar pool a variant split's prompts drew from: its split, and its fingerprint
    (of the pool split's rows, the template, the separators, the vocabulary and the seed)."""

    split: str
    fingerprint: str


@dataclass(frozen=True)
class SplitRecord:
    rows_read: int
    rows_kept: int
    dropped: dict[str, int]  # rows the row rule (or xP3's dataset step) leaves out, per reason
    render_errors: int  # rows that failed to render
    errors: list[str]  # the first few render errors, verbatim
    schema: dict[str, int]  # rows per schema mismatch category
    stats: dict[str, int]  # what stats.<split>.json holds
    num_shards: int
    files: dict[str, str]  # name -> sha256: the split's shards, info and stats
    fewshot: dict | None = None  # a variant's: `fewshot.FewshotStats.as_dict()`
    pool: PoolRef | None = None  # a variant's with exemplars (not at 0 shots)
    # A split of several source splits (xP3's `train`): the examples each gave, in order.
    source_examples: dict[str, int] | None = None

    @property
    def examples(self) -> int:
        return self.stats["examples"]

    @property
    def shards(self) -> list[str]:
        """The split's shards, in order (`-00000-of-N` first)."""
        return sorted(name for name in self.files if is_shard(name))

    @property
    def tokens(self) -> int:
        return self.stats.get("inputs_tokens", 0) + self.stats.get("targets_tokens", 0)


@dataclass(frozen=True)
class Manifest:
    task: str
    fingerprint: str  # of everything the bytes depend on: equal means "built the same way"
    dataset: str
    template: TemplateRecord
    score_eval: bool
    sources: dict[str, dict]  # task split -> identity of the rows it was read from
    # task split -> its source split, or the source splits whose examples it holds in order
    split_mapping: dict[str, str | list[str]]
    vocabulary: VocabularyRecord
    seed: int
    layout: str  # "seqio" or "p3"
    splits: dict[str, SplitRecord]
    p3data_version: str
    format_version: int = FORMAT_VERSION
    # A variant's: its T0 task, shot count and the settings that make its prompts.
    fewshot: dict | None = None
    # A capped task's (xP3's): its selection rule, cap and candidate pool per split.
    selection: dict | None = None
    # An xP3 task's: the language folder of all its examples (the recipe's `lang_dir`).
    language: str | None = None

    @property
    def files(self) -> set[str]:
        """Every file the task folder may hold besides the manifest and COMPLETED."""
        return {name for record in self.splits.values() for name in record.files}

    def to_json(self) -> str:
        data = msgspec.to_builtins(self)
        for record in [data, *data["splits"].values()]:  # T0's tasks: no such keys
            # (a record listed twice is one dict)
            for key in ("fewshot", "pool", "selection", "language", "source_examples"):
                if record.get(key, 0) is None:
                    del record[key]
        return dumps(data)


def parse_manifest(data: bytes, where: str) -> Manifest:
    """A manifest from its bytes; `where` names it in errors."""
    try:
        raw = msgspec.json.decode(data)
    except msgspec.DecodeError as err:
        raise ManifestError(f"{where}: not valid JSON ({err})") from None
    if not isinstance(raw, dict) or "splits" not in raw:
        raise ManifestError(f"{where}: not a p3data manifest")
    version = raw.get("format_version")
    if version != FORMAT_VERSION:
        raise ManifestError(
            f"{where}: format version {version} (this p3data reads {FORMAT_VERSION})"
            + ("; written by an older p3data: rebuild the task" if not isinstance(version, int)
               or version < FORMAT_VERSION else "; written by a newer p3data: upgrade p3data"))
    try:
        return msgspec.convert(raw, Manifest)
    except msgspec.ValidationError as err:
        raise ManifestError(f"{where}: {err}") from None


def read_manifest(folder: str) -> Manifest:
    """A task folder's manifest, or a `ManifestError` naming the file."""
    path = fs.join(folder, MANIFEST)
    try:
        data = fs.read_bytes(path)
    except FileNotFoundError:
        raise ManifestError(f"{path}: missing") from None
    except OSError as err:
        raise ManifestError(f"{path}: cannot be read ({err})") from None
    return parse_manifest(data, path)


def read_manifests(folders: list[str]) -> list[Manifest]:
    """`read_manifest` of several task folders; on an object store read together."""
    paths = [fs.join(folder, MANIFEST) for folder in folders]
    try:
        texts = fs.read_files(paths)
    except OSError:  # one of them: which, and why, in `read_manifest`'s words
        return [read_manifest(folder) for folder in folders]
    return [parse_manifest(data, path) for data, path in zip(texts, paths, strict=True)]


def write_manifest(folder: str, manifest: Manifest) -> None:
    fs.write_bytes(fs.join(folder, MANIFEST), manifest.to_json().encode())


def write_p3_index(root: str) -> None:
    """P3's `data_split_sizes.csv`: `task|{"split": examples, ...}` for every complete task,
    non-empty splits only (the JSON is written as is, as P3's file has it)."""
    lines = [layout.P3_INDEX_HEADER]
    for completed in fs.glob(fs.join(root, "data", "*", layout.COMPLETED)):
        manifest = read_manifest(fs.parent_of(completed))
        sizes = {split: record.examples for split, record in manifest.splits.items()
                 if record.examples}
        lines.append(f"{manifest.task}|{json.dumps(sizes)}")
    fs.write_bytes(fs.join(root, layout.P3_INDEX), ("\n".join(lines) + "\n").encode())
