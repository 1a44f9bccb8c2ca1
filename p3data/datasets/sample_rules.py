"""Sample rows made by rule: xP3's families whose configs are languages or pairs of them.

FLORES-200's 1,980 ordered pairs, wmt22's 92, tatoeba's 47, wiki_lingua's 81, mlqa's 32, xquad's 6
and xlsum's 22 would be thousands of sample files that say the same few sentences. Instead,
`p3data/data/samples/languages.yaml` holds three parallel sentences per language (and, for the
question-answering families, a question and its answer), and each family's rule makes a config's
rows from its languages' entries, row number by row number: a pair config's row `i` is sentence
`i` in both languages (the same meaning, as in FLORES, whose pair rows share their ids). The
rows follow the catalog's schema for the config; `p3data cache --samples` reads them through
`RuleStore`, and `samples.sample_rows` gives them as it gives the files' rows.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from p3data.dataset_key import DatasetKey
from p3data.datasets.catalog import DatasetEntry
from p3data.datasets.errors import DataNotFoundError
from p3data.datasets.shards import ROWS_PER_SHARD, Shard, row_runs

SAMPLES_DIR = Path(__file__).parent.parent / "data" / "samples"
LANGUAGES_FILE = SAMPLES_DIR / "languages.yaml"


@dataclass(frozen=True)
class Language:
    code: str  # FLORES-200's
    sentences: tuple[str, ...]
    question: str | None = None  # asks about the second sentence
    answer: str | None = None  # a word of the second sentence

    def text(self, start: int) -> str:
        """The sentences as one passage, the `start`-th first (a row's own passage)."""
        rotated = self.sentences[start:] + self.sentences[:start]
        return " ".join(rotated)


@functools.cache
def languages() -> dict[str, Language]:
    """Every language of `languages.yaml`, under its FLORES code and each of its `names`."""
    found: dict[str, Language] = {}
    for code, item in yaml.safe_load(LANGUAGES_FILE.read_text(encoding="utf-8")).items():
        language = Language(code, tuple(item["sentences"]), item.get("question"),
                            item.get("answer"))
        for name in (code, *item.get("names", ())):
            found[name] = language
    return found


def _language(name: str, key: DatasetKey) -> Language:
    try:
        return languages()[name]
    except KeyError:
        raise DataNotFoundError(f"{key}: no sample sentences for the language {name!r} in "
                                f"{LANGUAGES_FILE}") from None


# A family's row `i` of a config, from the config's name and its (source, target) languages.
RowMaker = Callable[[str, int, Language, Language], dict[str, Any]]


def _flores(subset: str, i: int, source: Language, target: Language) -> dict[str, Any]:
    first, second = subset.split("-")
    return {"id": i + 1, "URL": f"https://en.wikinews.org/wiki/p3data_sample_{i + 1}",
            "domain": "wikinews", "topic": "daily life", "has_image": 0, "has_hyperlink": 0,
            f"sentence_{first}": source.sentences[i], f"sentence_{second}": target.sentences[i]}


def _wmt22(subset: str, i: int, source: Language, target: Language) -> dict[str, Any]:
    first, second = subset.split("-")
    return {"translation": {first: source.sentences[i], second: target.sentences[i]},
            "laser_score": 1.25 - i / 8}


def _tatoeba(subset: str, i: int, source: Language, target: Language) -> dict[str, Any]:
    first, second = subset.split("-")
    return {"sourceLang": first, "targetlang": second, "sourceString": source.sentences[i],
            "targetString": target.sentences[i]}


def _wiki_lingua(subset: str, i: int, source: Language, target: Language) -> dict[str, Any]:
    first, _, second = subset.partition("_")
    return {"gem_id": f"wikilingua_{subset}-sample-{i}", "gem_parent_id": f"wikilingua-{i}",
            "source_language": first, "target_language": second or first,
            "source": source.text(i), "target": target.sentences[i],
            "references": [target.sentences[i]]}


def _question_answer(subset: str, i: int, context: Language,
                     question: Language) -> dict[str, Any]:
    """mlqa's `mlqa.<context>.<question>` and xquad's `xquad.<language>`."""
    passage = context.text(i)
    answer = context.answer or ""
    return {"id": f"{subset}-sample-{i}", "context": passage, "question": question.question,
            "answers": {"text": [answer], "answer_start": [passage.index(answer)]}}


LONG_ARTICLE = 5_500  # characters: xlsum's xp3long* templates read text[1000:5000], text[5000:]


def _xlsum(subset: str, i: int, source: Language, target: Language) -> dict[str, Any]:
    """Row 0's article is long (its passage again and again), as the long-text templates need."""
    summary = source.sentences[(i + 1) % len(source.sentences)]
    text = source.text(i)
    if i == 0:
        text = " ".join([text] * (LONG_ARTICLE // len(text) + 1))
    return {"gem_id": f"xlsum_{subset}-sample-{i}", "url": f"https://www.bbc.com/p3data-{i}",
            "title": source.sentences[i], "target": summary, "references": [summary],
            "text": text}


def _pair(separator: str) -> Callable[[str], tuple[str, str]]:
    def languages_of(subset: str) -> tuple[str, str]:
        first, _, second = subset.partition(separator)
        return first, second or first
    return languages_of


def _one(subset: str) -> tuple[str, str]:
    return subset, subset  # xlsum's arabic


def _dotted(subset: str) -> tuple[str, str]:
    parts = subset.split(".")  # mlqa.hi.zh, xquad.hi
    return parts[1], parts[-1]


@dataclass(frozen=True)
class Family:
    splits: tuple[str, ...]  # those xP3's tasks read
    languages_of: Callable[[str], tuple[str, str]]  # (source, target) of a config
    row: RowMaker


FAMILIES: dict[str, Family] = {
    "facebook/flores": Family(("dev", "devtest"), _pair("-"), _flores),
    "allenai/wmt22_african": Family(("train",), _pair("-"), _wmt22),
    "Helsinki-NLP/tatoeba_mt": Family(("test",), _pair("-"), _tatoeba),
    "GEM/wiki_lingua": Family(("test", "train"), _pair("_"), _wiki_lingua),
    "mlqa": Family(("test",), _dotted, _question_answer),
    "xquad": Family(("validation",), _dotted, _question_answer),
    "GEM/xlsum": Family(("test", "train"), _one, _xlsum),
}


def rule_splits(key: DatasetKey) -> list[str] | None:
    """The splits a family's rule gives rows for, sorted; None when `key` has no rule."""
    family = FAMILIES.get(key.dataset)
    return sorted(family.splits) if family and key.subset else None


def rule_rows(key: DatasetKey, split: str) -> list[dict[str, Any]]:
    """`key`'s sample rows of `split`, made by its family's rule, one per sentence."""
    family = FAMILIES[key.dataset]
    if split not in family.splits:
        raise DataNotFoundError(f"{key}: the sample rule of {key.dataset} makes no rows for "
                                f"split {split!r} (it makes {', '.join(family.splits)})")
    assert key.subset is not None
    source, target = (_language(name, key) for name in family.languages_of(key.subset))
    return [family.row(key.subset, i, source, target) for i in range(len(source.sentences))]


def is_samples(root: str) -> bool:
    """Whether a mirror root is the bundled samples' folder (`--samples`)."""
    return "://" not in root and Path(root).resolve() == SAMPLES_DIR.resolve()


class RuleStore:
    """A rule family's sample rows, as a `RowStore` (`p3data cache --samples`)."""

    drift: tuple[str, ...] = ()

    def __init__(self, entry: DatasetEntry, rows_per_shard: int = ROWS_PER_SHARD):
        self.entry = entry
        self.rows_per_shard = rows_per_shard

    def list_shards(self, split: str) -> list[Shard]:
        count = len(rule_rows(self.entry.key, split))
        return [Shard(f"{LANGUAGES_FILE.name}[{start}:{stop}]", start, stop)
                for start, stop in row_runs(count, self.rows_per_shard)]

    def read(self, split: str, shard: Shard) -> Iterator[dict[str, Any]]:
        yield from rule_rows(self.entry.key, split)[shard.start:shard.stop]

    def identity(self, split: str) -> dict[str, Any]:
        data = LANGUAGES_FILE.read_bytes()
        return {"files": {LANGUAGES_FILE.name: {"size": len(data),
                                                "sha256": hashlib.sha256(data).hexdigest()}},
                "sample_rule": self.entry.dataset}
