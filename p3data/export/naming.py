"""The names of what an export folder holds: the card, each task's record, the data files."""

from __future__ import annotations

import re

CARD = "README.md"
RECORD = ".p3data-export.json"  # in each task folder: what was exported, from what, how
_FILE = re.compile(r"\w+(\.\w+)*-\d{5}-of-\d{5}\.(parquet|jsonl)")


def export_file_name(split: str, index: int, count: int, extension: str) -> str:
    """`<split>-NNNNN-of-MMMMM<extension>`, as P3's files are named on the Hub."""
    return f"{split}-{index:05d}-of-{count:05d}{extension}"


def is_export_file(name: str) -> bool:
    return _FILE.fullmatch(name) is not None


def split_glob(task: str, split: str, extension: str) -> str:
    """The card's pattern of a split's files, relative to the card."""
    return f"{task}/{split}-*{extension}"  # split names are words: `train-*` is train's only


def split_order(split: str) -> tuple[int, str]:
    """train, validation, test, then the others by name, as `datasets` lists splits."""
    usual = ("train", "validation", "test")
    return (usual.index(split), "") if split in usual else (len(usual), split)
