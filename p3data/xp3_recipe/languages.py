"""xP3's language folders: which of BLOOM's 46 folders a (dataset, config, template) goes to.

The recipe keys a map (`ds_to_lang`) by every spelling it may meet: BLOOM's codes, each
language's ISO 639-3 code, its lower-cased English name and that name's first word (so
`swahili (macrolanguage)` also gives `swahili`), a few fixed extras, and the code datasets and
`clue` by dataset name. ISO 639's names come from pycountry; the recipe used the unmaintained
`iso-639` package, whose map pycountry 22.3.5 reproduces exactly and 26.2.16 but for Chichewa's
name (`nyanja` there, `chichewa` here), a key no dataset or config uses.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from types import MappingProxyType

import pycountry

# BLOOM's pre-training languages, the recipe's output folders (`code` among them)
BLOOM_LANGUAGES = [
    "ak", "ar", "as", "bm", "bn", "ca", "code", "en", "es", "eu", "fon", "fr", "gu", "hi", "id",
    "ig", "ki", "kn", "lg", "ln", "ml", "mr", "ne", "nso", "ny", "or", "pa", "pt", "rn", "rw", "sn",
    "st", "sw", "ta", "te", "tn", "ts", "tum", "tw", "ur", "vi", "wo", "xh", "yo", "zh", "zu",
]

CODE_DATASETS = (
    "Muennighoff/mbpp", "openai_humaneval", "great_code", "neural_code_search",
    "codeparrot/codecomplex", "codeparrot/github-jupyter-text-code-pairs", "codeparrot/apps",
    "Fraser/python-state-changes", "codeparrot/xlcost-text-to-code", "teven/code_contests",
    "teven/code_docstring_corpus",
)

# the recipe's fixed extras: macrolanguage members the data uses, and names ISO 639 spells
# otherwise (`rundi`, `panjabi`) or not at all
_EXTRAS = {
    "clue": "zh", "cmn": "zh", "npi": "ne", "ory": "or", "swh": "sw", "kirundi": "rn",
    "punjabi": "pa", "chinese_simplified": "zh", "chinese_traditional": "zh",
}

DEFAULT_LANGUAGE = "en"


@cache
def ds_to_lang() -> Mapping[str, str]:
    """The recipe's map from a dataset name, config or language spelling to a BLOOM folder."""
    found = {dataset: "code" for dataset in CODE_DATASETS} | _EXTRAS
    for code in BLOOM_LANGUAGES:
        found[code] = code
        language = pycountry.languages.get(alpha_2=code)
        if language is None:  # `code` and the 3-letter fon, nso, tum: no ISO 639-1 entry
            continue
        name = language.name.lower()
        found[name] = found[name.split(" ")[0]] = found[language.alpha_3] = code
    return MappingProxyType(found)


def config_language(dataset: str, config: str | None) -> str | None:
    """The folder of every template of (dataset, config) but tatoeba's and wmt22's, which
    `template_language` decides per template. None where the recipe's lookup finds none."""
    known = ds_to_lang()
    if dataset == "facebook/flores":  # `<l1>-<l2>`: the target's ISO 639-3 prefix
        return known.get(config.split("-")[-1].split("_")[0])
    if dataset == "pasinit/xlwic" or (dataset == "GEM/wiki_lingua" and "_" in config):
        return known.get(config.split("_")[-1])  # `xlwic_en_zh`, `ar_en`: the last part
    if dataset in ("xquad", "mlqa"):  # `xquad.ar`, `mlqa.<context>.<question>`
        return known.get(config.split(".")[1])
    return known.get(dataset) or known.get(config, DEFAULT_LANGUAGE)


def template_language(dataset: str, config: str | None, template: str) -> str | None:
    """The folder of one template's output: tatoeba's and wmt22's prompts name their target
    language last (`translate-this-ara-eng` goes to `en`; wmt22's `-source+target` suffix is
    dropped first); every other dataset's is its config's."""
    known = ds_to_lang()
    if dataset == "Helsinki-NLP/tatoeba_mt":
        return known.get(template.split("-")[-1].split("_")[0], DEFAULT_LANGUAGE)
    if dataset in ("allenai/wmt22_african", "multi_eurlex"):
        return known.get(template.replace("-source+target", "").split("-")[-1])
    return config_language(dataset, config)
