"""Templates, tasks and examples per language (xmtf#9 asked for xP3's): one table for
`p3data plan` (examples from the catalog) and `p3data report` (examples a build kept).

A task's language is its xP3 language folder (`TaskDef.language`, a manifest's `language`);
T0's tasks have none, and make no table.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

HEADER = ["language", "templates", "tasks", "examples"]
UNSIZED = "tasks of unknown size"  # a column when some are: their examples are not counted


@dataclass
class LanguageCount:
    """One language folder's tasks: their distinct templates (by id) and examples."""

    language: str
    templates: set[str] = field(default_factory=set)
    tasks: int = 0
    examples: int = 0
    unsized: int = 0  # tasks whose examples are unknown (None), not counted in `examples`


def by_language(tasks: Iterable[tuple[str | None, str, int | None]]) -> list[LanguageCount]:
    """Per language, from (language, template id, examples or None) per task: most tasks
    first, then by name; tasks without a language are left out."""
    counts: dict[str, LanguageCount] = {}
    for language, template, examples in tasks:
        if language is None:
            continue
        count = counts.setdefault(language, LanguageCount(language))
        count.templates.add(template)
        count.tasks += 1
        if examples is None:
            count.unsized += 1
        else:
            count.examples += examples
    return sorted(counts.values(), key=lambda c: (-c.tasks, c.language))


def language_table(counts: list[LanguageCount]) -> tuple[list[str], list[list[object]]]:
    """The header and rows, with a total (templates: distinct over all languages); the
    column `UNSIZED` when some task's examples are unknown."""
    unsized = any(count.unsized for count in counts)
    every = set().union(*(count.templates for count in counts))
    rows = [[c.language, len(c.templates), c.tasks, c.examples, c.unsized] for c in counts]
    rows.append([f"total ({len(counts)})", len(every), sum(c.tasks for c in counts),
                 sum(c.examples for c in counts), sum(c.unsized for c in counts)])
    if unsized:
        return [*HEADER, UNSIZED], rows
    return HEADER, [row[:-1] for row in rows]
