"""Which dataset: a Hugging Face dataset name and, for those that have them, a subset
(promptsource's and T0's "dataset/subset"), with the one spelling of its name and its folder."""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass


@functools.total_ordering
@dataclass(frozen=True)
class DatasetKey:
    dataset: str
    subset: str | None = None

    @classmethod
    def parse(cls, text: str) -> DatasetKey:
        """`dataset` or `dataset/subset`, as on the command line and in promptsource."""
        dataset, _, subset = text.partition("/")
        return cls(dataset, subset or None)

    @property
    def name(self) -> str:
        return f"{self.dataset}/{self.subset}" if self.subset else self.dataset

    def folder(self, root: str | os.PathLike[str]) -> str:
        """`<root>/<dataset>[/<subset>]`: where mirrors, samples and templates keep it."""
        return f"{os.fspath(root).rstrip('/')}/{self.name}"

    def __lt__(self, other: DatasetKey) -> bool:
        """By name parts, a dataset without a subset first (None does not compare with str)."""
        return (self.dataset, self.subset or "") < (other.dataset, other.subset or "")

    def __str__(self) -> str:
        return self.name
