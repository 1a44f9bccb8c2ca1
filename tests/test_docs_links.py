"""Every relative link in the project's Markdown pages leads somewhere: the file exists and, for
`page.md#anchor`, the page has a heading GitHub gives that anchor. Content moves between the
README and docs/ (the README stays short); a moved section must not leave a dead link."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)
LINK = re.compile(r"\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6} +(.+?) *$", re.MULTILINE)


def pages() -> list[Path]:
    listed = subprocess.run(["git", "ls-files", "*.md"], cwd=ROOT, capture_output=True,
                            text=True).stdout.split()
    return [ROOT / name for name in listed] or sorted(ROOT.glob("**/*.md"))


def prose(page: Path) -> str:
    """The page without its code blocks, whose `#` lines and brackets are not Markdown."""
    return FENCE.sub("", page.read_text())


def anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    found, seen = set(), {}
    for heading in HEADING.findall(prose(page)):
        base = anchor(heading)
        count = seen.get(base, 0)
        found.add(base if count == 0 else f"{base}-{count}")
        seen[base] = count + 1
    return found


def test_anchor_is_githubs():
    assert anchor("tf.data and Keras") == "tfdata-and-keras"
    assert anchor("Random access: the record index") == "random-access-the-record-index"
    assert anchor("P3 at scale (simulated)") == "p3-at-scale-simulated"
    assert anchor("`p3data cache`, then `verify`") == "p3data-cache-then-verify"


@pytest.mark.parametrize("page", pages(), ids=lambda page: str(page.relative_to(ROOT)))
def test_every_relative_link_leads_somewhere(page):
    dead = []
    for target in LINK.findall(prose(page)):
        if re.match(r"[a-z]+:", target):
            continue  # https:, mailto: ...
        path, _, fragment = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        if not linked.exists():
            dead.append(f"{target}: no such file")
        elif fragment and linked.suffix == ".md" and fragment not in anchors(linked):
            dead.append(f"{target}: no heading with that anchor")
    assert dead == []
