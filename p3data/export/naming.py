"""The names of what an export folder holds: the card, what each task folder says was exported,
the data files."""

from __future__ import annotations

import re
from collections.abc import Iterable

CARD = "README.md"
EXPORTED = ".p3data-export.json"  # in each task folder: what was exported, from what, how


def export_file_name(split: str, index: int, count: int, extension: str) -> str:
    """`<split>-NNNNN-of-MMMMM<extension>`, as P3's files are named on the Hub."""
    return f"{split}-{index:05d}-of-{count:05d}{extension}"


def export_file_pattern(extensions: Iterable[str]) -> re.Pattern[str]:
    """`export_file_name`'s names with any of these extensions, read back."""
    either = "|".join(re.escape(extension) for extension in extensions)
    return re.compile(rf"\w+(\.\w+)*-\d{{5}}-of-\d{{5}}({either})")


def split_glob(task: str, split: str, extension: str) -> str:
    """The card's pattern of a split's files, relative to the card."""
    return f"{task}/{split}-*{extension}"  # split names are words: `train-*` is train's only


def split_order(split: str) -> tuple[int, str]:
    """train, validation, test, then the others by name, as `datasets` lists splits."""
    usual = ("train", "validation", "test")
    return (usual.index(split), "") if split in usual else (len(usual), split)
