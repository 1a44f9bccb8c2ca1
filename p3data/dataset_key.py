"""Which dataset: a Hugging Face dataset name and, for those that have them, a subset
(promptsource's and T0's "dataset/subset"), with the one spelling of its name and its folder."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, order=True)
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

    def folder(self, root: str) -> str:
        """`<root>/<dataset>[/<subset>]`: where mirrors, samples and templates keep it."""
        return f"{root.rstrip('/')}/{self.name}"

    def __str__(self) -> str:
        return self.name
