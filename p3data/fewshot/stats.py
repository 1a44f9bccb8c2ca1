"""What a few-shot task's build did, per task: for the summary, `validate` and `report`.

Per task, the histogram of shot counts (fewer shots when the pool is short or no more fit,
never a dropped query), how many queries were shortened to fit and the tokens that cost, and
how many stayed over the length even with their passages emptied (kept whole, never dropped).
Counts merge across shards by addition, so any sharding gives the same totals.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from p3data.fewshot.select import NO_ROOM, SHORT_POOL

# How the summary, `validate` and `report` head a task's few-shot figures (`FewshotStats.cells`).
STATS_COLUMNS = ("shots: examples", "fitted", "tokens cut", "unfit", "short pool", "no room")
STATS_LEGEND = ("shots: examples per shot count · fitted: queries whose passage was shortened "
                "to fit the input length · tokens cut: by that shortening · unfit: over the "
                "length even so, kept whole · short pool / no room: fewer shots because the "
                "pool has no more exemplars / no more fit")


@dataclass
class FewshotStats:
    examples: int = 0
    shots: Counter[int] = field(default_factory=Counter)  # num_shots -> examples
    fitted: int = 0  # queries shortened to fit
    cut_tokens: int = 0  # tokens the shortening removed, over all fitted queries
    unfit: int = 0  # queries over the length even shortened: kept whole
    short_pool: int = 0  # fewer shots than asked: the pool has too few exemplars
    no_room: int = 0  # fewer shots than asked: no more exemplars fit

    def add_query(self, *, num_shots: int, cut_tokens: int, fits: bool,
                  shortfall: str | None) -> None:
        self.examples += 1
        self.shots[num_shots] += 1
        self.fitted += bool(cut_tokens)
        self.cut_tokens += cut_tokens
        self.unfit += not fits
        self.short_pool += shortfall == SHORT_POOL
        self.no_room += shortfall == NO_ROOM

    def merge(self, other: FewshotStats) -> FewshotStats:
        """The sum of two parts' counts (a new object)."""
        return FewshotStats(self.examples + other.examples, self.shots + other.shots,
                            self.fitted + other.fitted, self.cut_tokens + other.cut_tokens,
                            self.unfit + other.unfit, self.short_pool + other.short_pool,
                            self.no_room + other.no_room)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready, shot counts as string keys in order (as JSON objects need)."""
        return {"examples": self.examples,
                "shots": {str(k): self.shots[k] for k in sorted(self.shots)},
                "fitted": self.fitted, "cut_tokens": self.cut_tokens, "unfit": self.unfit,
                "short_pool": self.short_pool, "no_room": self.no_room}

    def histogram(self) -> str:
        """Examples per shot count, most shots first: `5:28 4:2`."""
        return " ".join(f"{k}:{self.shots[k]:,}" for k in sorted(self.shots, reverse=True))

    def cells(self) -> list[str | int]:
        """The figures under `STATS_COLUMNS`."""
        return [self.histogram(), self.fitted, self.cut_tokens, self.unfit, self.short_pool,
                self.no_room]

    @classmethod
    def summed(cls, dicts: Iterable[dict[str, Any] | None]) -> FewshotStats:
        """The sum of parts' or splits' `as_dict()`s (None or empty: nothing counted)."""
        total = cls()
        for data in dicts:
            if data:
                total = total.merge(cls.from_dict(data))
        return total

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FewshotStats:
        return cls(data["examples"], Counter({int(k): v for k, v in data["shots"].items()}),
                   data["fitted"], data["cut_tokens"], data["unfit"], data["short_pool"],
                   data["no_room"])
