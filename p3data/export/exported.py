"""What an export folder says of each task (`<out>/<task>/.p3data-export.json`): the
settings files were cut and encoded with, what they were made from, and the splits written.
A rerun compares against it to skip what is done."""

from __future__ import annotations

from typing import Any

import msgspec

from p3data import fs
from p3data.export.formats import export_format
from p3data.export.naming import EXPORTED
from p3data.export.schema import FeatureSpec
from p3data.export.shapes import P3

EXPORT_VERSION = 1  # bump when the bytes written for the same settings change
DEFAULT_EXAMPLES_PER_SHARD = 500_000
ROW_GROUP_EXAMPLES = 10_000


class ExportSettings(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """How files are cut and encoded: a rerun with other settings exports a task anew."""

    format: str  # a name in `formats.EXPORT_FORMATS`
    shape: str = P3  # a name in `shapes.EXPORT_SHAPES`: which columns rows have
    examples_per_shard: int = DEFAULT_EXAMPLES_PER_SHARD
    row_group_examples: int = ROW_GROUP_EXAMPLES
    version: int = EXPORT_VERSION

    @property
    def extension(self) -> str:
        return export_format(self.format).extension


class ExportedSplit(msgspec.Struct, frozen=True, omit_defaults=True):
    examples: int
    num_bytes: int  # the split's size in Arrow, as `datasets` cards count it
    files: dict[str, int]  # name -> bytes
    # An SFT shape's: the provenance fields the cache does not know for this split's rows.
    unknown: tuple[str, ...] = ()


class ExportedTask(msgspec.Struct, frozen=True):
    """`<out>/<task>/.p3data-export.json`: the splits exported so far, how, and from what."""

    task: str
    settings: ExportSettings
    source: dict[str, Any]  # the cache task folder's file sizes and manifest digest
    features: dict[str, FeatureSpec]
    splits: dict[str, ExportedSplit]
    complete: bool

    @property
    def files(self) -> dict[str, int]:
        return {name: size for split in self.splits.values() for name, size in
                split.files.items()}


def read_exported(folder: str) -> ExportedTask | None:
    """What a task folder says was exported; None when it says nothing, or nothing this p3data
    can use."""
    try:
        return msgspec.json.decode(fs.read_bytes(fs.join(folder, EXPORTED)), type=ExportedTask)
    except FileNotFoundError:
        return None
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None  # unreadable or of another version: the task is exported anew


def write_exported(folder: str, exported: ExportedTask) -> None:
    fs.write_bytes(fs.join(folder, EXPORTED),
                   msgspec.json.format(msgspec.json.encode(exported), indent=2) + b"\n")


def complete_exports(out: str) -> list[ExportedTask]:
    """The tasks whose every split `out` holds, by task name."""
    tasks = (read_exported(fs.parent_of(path)) for path in fs.glob(fs.join(out, "*", EXPORTED)))
    return sorted((t for t in tasks if t is not None and t.complete), key=lambda t: t.task)
