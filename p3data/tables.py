"""Tables for people, in one style: plain text for the console, Markdown and HTML for reports.

A cell is None ("-"), an int (thousands separated), a float (two decimals, or none from 100
up) or text; columns whose every cell is a number are right-aligned.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

Cell = str | int | float | None


def cell(value: Cell) -> str:
    if value is None:
        return "-"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.2f}"
    return str(value)


def _numeric(header: Sequence[str], rows: Sequence[Sequence[Cell]]) -> list[bool]:
    return [all(isinstance(row[i], int | float | None) for row in rows)
            for i in range(len(header))]


def text_table(header: Sequence[str], rows: Sequence[Sequence[Cell]]) -> str:
    """Aligned columns separated by two spaces."""
    numeric = _numeric(header, rows)
    cells = [list(header)] + [[cell(value) for value in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    return "\n".join(
        "  ".join(value.rjust(width) if right else value.ljust(width)
                  for value, width, right in zip(row, widths, numeric, strict=True)).rstrip()
        for row in cells)


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[Cell]]) -> str:
    numeric = _numeric(header, rows)
    lines = ["| " + " | ".join(header) + " |",
             "|" + "|".join("---:" if n else "---" for n in numeric) + "|"]
    lines += ["| " + " | ".join(cell(v).replace("|", "\\|") for v in row) + " |"
              for row in rows]
    return "\n".join(lines)


def html_table(kind: str, header: Sequence[str], rows: Sequence[Sequence[Cell]]) -> str:
    """A `<table class=kind>` in a scrolling box; numeric cells get `class=num`."""
    numeric = _numeric(header, rows)
    head = "".join(f'<th{" class=num" if n else ""}>{html.escape(h)}</th>'
                   for h, n in zip(header, numeric, strict=True))
    body = "".join(
        "<tr>" + "".join(f'<td{" class=num" if n else ""}>{html.escape(cell(v))}</td>'
                         for v, n in zip(row, numeric, strict=True)) + "</tr>"
        for row in rows)
    return (f'<div class="scroll"><table class="{kind}"><thead><tr>{head}</tr></thead>'
            f"<tbody>{body}</tbody></table></div>")
