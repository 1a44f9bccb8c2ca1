"""p3data's xP3 row rule renders rows exactly as the xP3 fork's `Template.apply` plus xP3's
recipe did (`helpers/xp3_reference.py`), and the recipe's dataset steps do what it did."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from helpers.template_sets import shared_archive
from helpers.xp3_reference import Expected, extract_fork, load_fork, xp3_apply
from jinja2 import meta, nodes

from p3data.errors import RenderLimitError, RowError
from p3data.templates.install import TEMPLATE_SETS
from p3data.templates.model import Template
from p3data.templates.render import (
    BLANK,
    EMPTY_INPUTS,
    EMPTY_TARGETS,
    EXTRA_SEPARATOR,
    NO_SEPARATOR,
    RENDER_ERROR,
    T0_RULE,
    TEMPLATE_SPLIT_ERROR,
    CompiledTemplate,
    DatasetRenderer,
    Dropped,
    Rendered,
    XP3Rule,
    compiled_template,
)
from p3data.templates.sandbox import ENVIRONMENT
from p3data.templates.yaml_io import read_template_file
from p3data.xp3_recipe.steps import (
    APPS,
    STEPS,
    WIKI_LINGUA,
    XLCOST,
    apps_solution,
    clean_xlcost_code,
    wiki_lingua_languages,
    xlcost_code_clean,
)

# Real prompt folders of tr13: English prompts of mapped datasets, translation, code.
FOLDERS = [
    "xnli/en",
    "paws-x/en",
    "GEM/wiki_lingua/en_en",
    "mlqa/mlqa.en.en",
    "GEM/xlsum/english",
    "khalidalt/tydiqa-goldp/english",  # `choice` and `random`
    "facebook/flores/eng_Latn-swh_Latn",
    "Helsinki-NLP/tatoeba_mt/ara-eng",
    "codeparrot/xlcost-text-to-code/Python-program-level",
    "codeparrot/apps/all",
    "Muennighoff/mbpp/sanitized",
    "teven/code_contests",
]
HANDMADE = "handmade"


@pytest.fixture(scope="module")
def fork(tmp_path_factory):
    """The fork's module and FOLDERS' templates as it reads them, from tr13's archive."""
    folder = tmp_path_factory.mktemp("fork")
    templates_dir = extract_fork(shared_archive(TEMPLATE_SETS["xp3"]), folder, FOLDERS)
    module, by_folder = load_fork(templates_dir, FOLDERS)
    return module, by_folder, templates_dir


def _ours(outcome) -> Expected:
    if isinstance(outcome, Rendered):
        assert outcome.answer_choices is None, outcome
        return Expected(outcome.inputs, outcome.targets)
    return Expected(reason=outcome.reason)


def _same(ours: Expected, reference: Expected) -> bool:
    return (ours.inputs, ours.target, ours.reason) == (
        reference.inputs, reference.target, reference.reason)


# --- Hand-made templates and rows, one rule at a time ----------------------------------------

LONG_WORDS = ("lorem ipsum " * 300)[:3000]
CJK = "漢字文本" * 750  # 3,000 characters, no space
CASES = [  # (template, answer_choices, row)
    ("{{a}} ||| {{b}}", None, {"a": "x", "b": "y"}),
    ("{{a}} ||| {{b}}", None, {"a": "x ", "b": " y"}),  # the trailing-space rule
    ("{{a}}  ||| {{b}}", None, {"a": "x", "b": "y"}),
    ("{{a}}||| {{b}}", None, {"a": "x", "b": "y"}),
    ("{{a}} |||{{b}}", None, {"a": "x", "b": "y"}),
    ("{{a}}\n|||\n{{b}}\n", None, {"a": "x", "b": "y"}),
    ("{{a}} ||| {{b}}", None, {"a": "", "b": "y"}),  # empty inputs
    ("{{a}}||| {{b}}", None, {"a": "", "b": "y"}),  # empty inputs, no space: IndexError
    ("{{a}} ||| {{b}}", None, {"a": "x", "b": ""}),  # empty target
    ("{{a}} |||{{b}}", None, {"a": "x", "b": ""}),  # empty target after a space: IndexError
    ("{{a}} ||| {{b}}", None, {"a": "  ", "b": "  "}),
    ("{% if a %}{{a}} ||| {{b}}{% endif %}", None, {"a": "", "b": "y"}),  # blank
    ("{% if a %}{{a}} ||| {{b}}{% endif %}  ", None, {"a": "", "b": "y"}),  # blank when stripped
    ("{{a}}", None, {"a": "x"}),  # one part
    ("{{a}} ||| {{b}} ||| {{b}}", None, {"a": "x", "b": "y"}),  # three parts
    ("{{a}} ||| {{b}} |||{{b}}", None, {"a": "x", "b": ""}),
    ("{{a}} ||| {{b}} ||| {{b}}", None, {"a": "", "b": "y"}),
    ("{{a}} ||| {{b}}", None, {"a": "p ||| q", "b": "r|||s"}),  # `|||` inside values
    ("{{a}} ||| {{b}}", None, {"a": LONG_WORDS, "b": CJK}),
    ("{{a}} ||| {{b}}", None, {"a": "w " * 1026 + "w", "b": "z" * 2053}),  # 2,053: kept whole
    ("{{a}} ||| {{b}}", None, {"a": "w " * 1027, "b": "z" * 2054}),  # 2,054: cut
    ("{{a}} ||| {{b}}", None, {"a": None, "b": None}),
    ("{{a}} ||| {{b}} {{c}}", None, {"a": "x", "b": "y"}),  # c is no field: ""
    ("{{a}} ||| {{c}}", None, {"a": "x", "b": "y"}),
    ("{{ a.text[0] }} ||| {{b}}", None, {"a": None, "b": "y"}),  # UndefinedError
    ("{{ a.start[0] - 5 }} ||| {{b}}", None, {"a": {"start": []}, "b": "y"}),  # UndefinedError
    ("{{ a.start[0] - 5 }} ||| {{b}}", None, {"a": {"start": [12]}, "b": "y"}),
    ("{{ a - 1 }} ||| {{b}}", None, {"a": "x", "b": "y"}),  # TypeError
    ("{{ '{:d}'.format(a) }} ||| {{b}}", None, {"a": "x", "b": "y"}),  # ValueError
    ("{{a}} ||| {{b}}", None, {"a": "x", "b": "y", "answer_choices": "z"}),  # ValueError
    ("{{a_b}} ||| {{b}}", None, {"a-b": "x", "b": "y"}),  # removeHyphen
    ("{{a}} ||| {{answer_choices[b]}}", "no ||| yes", {"a": "x", "b": 1}),
    ("{{a}} ||| {{answer_choices[b]}}", "{{a}} ||| {{c}}", {"a": "x|||y", "b": 0, "c": "z"}),
    ("{{ [a, b] | choice }} ||| {{ [a, b, 'c'] | random }}", None, {"a": "x", "b": "y"}),
    ("{{ a | choice }} ||| {{ b }}", None, {"a": ["x", "y", "z"], "b": "y"}),
    ("{{ range(a) | random }}x ||| {{ b }}", None, {"a": 0, "b": "y"}),  # random of nothing: ""
    ("{{ range(a) | random }}x ||| {{ b }}", None, {"a": 4, "b": "y"}),
    ("{% if c %}{{ c }}{% else %}{{ a }}{% endif %} ||| {{ b }}", None, {"a": "x", "b": "y"}),
]


@pytest.mark.parametrize("strip_connection", [True, False], ids=["strip", "code"])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_handmade_rows_like_the_fork(fork, case, strip_connection):
    module, _, _ = fork
    jinja, choices, row = CASES[case]
    ours = Template(id=f"case-{case}", name=f"case {case}", jinja=jinja, dataset=HANDMADE,
                    answer_choices=choices)
    theirs = module.Template(ours.name, jinja, "", answer_choices=choices)
    theirs.id = ours.id
    expected = xp3_apply(theirs, copy.deepcopy(row), 3, strip_connection=strip_connection)
    got = CompiledTemplate(ours, rule=XP3Rule(strip_connection)).render(copy.deepcopy(row), 3)
    assert _same(_ours(got), expected), (got, expected)


def test_handmade_rows_exercise_every_outcome(fork):
    """The cases above are not vacuous: between them both ways reach every outcome."""
    module, _, _ = fork
    seen = set()
    for case, (jinja, choices, row) in enumerate(CASES):
        theirs = module.Template(f"case {case}", jinja, "", answer_choices=choices)
        for strip in (True, False):
            expected = xp3_apply(theirs, copy.deepcopy(row), 0, strip_connection=strip)
            seen.add(expected.reason or "kept")
    assert seen == {"kept", BLANK, NO_SEPARATOR, EXTRA_SEPARATOR, EMPTY_INPUTS, EMPTY_TARGETS,
                    RENDER_ERROR, TEMPLATE_SPLIT_ERROR}


def test_connection_kept_without_strip():
    """The fork's spacing rules, spelled out on one template."""
    def render(a, b, jinja="{{a}} ||| {{b}}"):
        template = Template(id="t", name="t", jinja=jinja, dataset=HANDMADE)
        return CompiledTemplate(template, rule=XP3Rule(False)).render({"a": a, "b": b})

    assert (render("x", "y").inputs, render("x", "y").targets) == ("x", " y")
    assert (render(" x", "y\n").inputs, render(" x", "y\n").targets) == ("x", " y")
    kept = render("x", "y", "{{a}}\n||| {{b}}")
    assert (kept.inputs, kept.targets) == ("x\n", " y")
    kept = render("x", "y", "{{a}} |||{{b}}")
    assert (kept.inputs, kept.targets) == ("x ", "y")
    dropped = render("x", "", "{{a}} |||{{b}}")
    assert dropped.reason == TEMPLATE_SPLIT_ERROR and "IndexError" in dropped.error.reason


# --- Every template of real folders, on rows made from its variables -------------------------

_METHODS = frozenset(dir(str)) | frozenset(dir(list)) | frozenset(dir(dict))
_LIST_FILTERS = {"choice", "random", "join", "first", "last", "length", "count", "sort",
                 "unique", "list", "select", "reject", "selectattr", "rejectattr", "map", "sum"}
LIST = object()  # a path step: the value is a list


def _chain(node: nodes.Node) -> tuple[str, list] | None:
    """(root name, keys from it) of `name.a["b"][0]`; an int or computed index is LIST."""
    path = []
    while isinstance(node, (nodes.Getattr, nodes.Getitem)):
        if isinstance(node, nodes.Getattr):
            if node.attr in _METHODS:  # text.split(...): the value stays text
                path.clear()
            else:
                path.append(node.attr)
        elif isinstance(node.arg, nodes.Const) and isinstance(node.arg.value, str):
            path.append(node.arg.value)
        else:
            path.append(LIST)
        node = node.node
    return (node.name, path[::-1]) if isinstance(node, nodes.Name) else None


def _shapes(template: Template) -> dict[str, dict]:
    """Each variable's shape, read from how the template uses it: {key or LIST: shape}."""
    sources = [template.jinja] + ([template.answer_choices] if template.answer_choices else [])
    shapes: dict[str, dict] = {}
    for source in sources:
        ast = ENVIRONMENT.parse(source)
        for name in meta.find_undeclared_variables(ast):
            if name not in ENVIRONMENT.globals and name != "answer_choices":
                shapes.setdefault(name, {})
        uses = [(node, []) for node in ast.find_all((nodes.Getattr, nodes.Getitem))]
        uses += [(node.node, [LIST]) for node in ast.find_all(nodes.Filter)
                 if node.name in _LIST_FILTERS and node.node is not None]
        uses += [(node.iter, [LIST]) for node in ast.find_all(nodes.For)]
        for node, tail in uses:
            if (found := _chain(node)) and found[0] in shapes:
                trie = shapes[found[0]]
                for key in found[1] + tail:
                    trie = trie.setdefault(key, {})
    return shapes


LEAVES = ["words", 0, 1, 2, -1, LONG_WORDS, CJK, "a ||| b", "", None, "  padded \n"]


def _value(shape: dict, leaf, name: str):
    keys = [key for key in shape if key is not LIST]
    if keys:
        return {key: _value(shape[key], leaf, key) for key in keys}
    if LIST in shape:
        return [_value(shape[LIST], leaf, name) for _ in range(3)]
    return f"{name} {leaf}" if leaf == "words" else leaf


def synthetic_rows(template: Template) -> list[dict]:
    """Rows in the shape the template reads: every leaf of one kind, then kinds mixed, then
    one variable missing."""
    shapes = _shapes(template)
    names = sorted(shapes)
    rows = [{name: _value(shapes[name], leaf, name) for name in names} for leaf in LEAVES]
    rows += [{name: _value(shapes[name], LEAVES[(i + shift) % len(LEAVES)], name)
              for i, name in enumerate(names)} for shift in range(1, len(LEAVES))]
    if names:
        rows.append({name: _value(shapes[name], "words", name) for name in names[1:]})
    return rows


def _read_folder(templates_dir: Path, folder: str) -> list[Template]:
    return read_template_file(templates_dir / folder / "templates.yaml")[2]


@pytest.mark.parametrize("strip_connection", [True, False], ids=["strip", "code"])
@pytest.mark.parametrize("folder", FOLDERS)
def test_real_templates_like_the_fork(fork, folder, strip_connection):
    _, by_folder, templates_dir = fork
    ours = _read_folder(templates_dir, folder)
    assert {t.id for t in ours} == set(by_folder[folder])  # p3data's loader reads them all
    mismatches, kept = [], {}
    for template in ours:
        theirs = by_folder[folder][template.id]
        assert (theirs.jinja, theirs.answer_choices) == (template.jinja, template.answer_choices)
        compiled = CompiledTemplate(template, rule=XP3Rule(strip_connection))
        kept[template.name] = 0
        for index, row in enumerate(synthetic_rows(template)):
            got = _ours(compiled.render(copy.deepcopy(row), index))
            expected = xp3_apply(theirs, copy.deepcopy(row), index,
                                 strip_connection=strip_connection)
            if not _same(got, expected):
                mismatches.append((template.name, index, row, got, expected))
            kept[template.name] += got.reason is None
    assert not mismatches, mismatches[:2]
    assert all(kept.values()), f"templates that keep no row: {kept}"


# --- The rule as a seam ---------------------------------------------------------------------

def test_compiled_templates_are_cached_per_rule():
    template = Template(id="t", name="t", jinja="{{a}} ||| {{b}}", dataset=HANDMADE)
    t0 = compiled_template(template)
    xp3 = compiled_template(template, 0, XP3Rule(True))
    assert t0.rule == T0_RULE and xp3.rule == XP3Rule(True)
    assert compiled_template(template, 0, XP3Rule(True)) is xp3
    assert compiled_template(template, 0, XP3Rule(False)) is not xp3
    row = {"a": "x", "b": ""}
    assert t0.render(row).targets == "<NO LABEL>"
    assert xp3.render(row).reason == EMPTY_TARGETS


def test_limits_hold_under_the_xp3_rule():
    hostile = Template(id="h", name="hostile", jinja="{{ (a * 10**9) }} ||| y", dataset=HANDMADE)
    good = Template(id="g", name="good", jinja="{{ a }} ||| {{ b }}", dataset=HANDMADE)
    renderer = DatasetRenderer([hostile, good], rule=XP3Rule(False))
    outcomes = renderer.render_batch([{"a": "x", "b": "y"}] * 12)
    assert all(isinstance(o, Dropped) and o.reason == RENDER_ERROR
               and isinstance(o.error, RenderLimitError) for o in outcomes["hostile"])
    assert "hostile" in renderer.broken  # taken out after its strikes, as under T0's rule
    assert {(o.inputs, o.targets) for o in outcomes["good"]} == {("x", " y")}


# --- The dataset steps ----------------------------------------------------------------------

def test_steps_are_found_by_dataset_name():
    expected = {WIKI_LINGUA: wiki_lingua_languages, APPS: apps_solution,
                XLCOST: xlcost_code_clean}
    assert expected == STEPS


def _wiki(source, target):
    return {"source_language": source, "target_language": target, "source": "s", "target": "t"}


def test_wiki_lingua_names_the_languages():
    row = wiki_lingua_languages(_wiki("zh", "en"), config="zh", index=0)
    assert (row["source_language_name"], row["target_language_name"]) == ("Chinese", "English")
    expected = {"ar": "Arabic", "en": "English", "es": "Spanish", "fr": "French",
                "hi": "Hindi", "id": "Indonesian", "pt": "Portuguese", "vi": "Vietnamese",
                "zh": "Chinese"}  # the iso-639 package's, which the recipe used
    assert {code: wiki_lingua_languages(_wiki(code, code), config=code, index=0)
            ["source_language_name"] for code in expected} == expected


def test_wiki_lingua_cross_pairs_keep_one_direction():
    kept = [pair for pair in [("hi", "en"), ("en", "hi"), ("hi", "hi"), ("en", "en")]
            if wiki_lingua_languages(_wiki(*pair), config="hi_en", index=0) is not None]
    assert kept == [("hi", "en")]
    assert wiki_lingua_languages(_wiki("en", "hi"), config="en", index=0) is not None


def test_wiki_lingua_unknown_code_is_one_line():
    with pytest.raises(RowError) as err:
        wiki_lingua_languages(_wiki("xx", "en"), config="xx", index=7)
    assert str(err.value) == ("GEM/wiki_lingua/xx, row 7, field 'source_language': 'xx' is no "
                              "ISO 639-1 language code")


def test_xlcost_code_clean():
    code = ("def f ( x ) : NEW_LINE INDENT if x : NEW_LINE INDENT return \" a STRNEWLINE b "
            "TABSYMBOL c \" NEW_LINE DEDENT return 0 NEW_LINE DEDENT DEDENT print ( f ( 2 ) ) "
            "NEW_LINE")
    assert clean_xlcost_code(code) == (
        "def f ( x ) :\n\tif x :\n\t\treturn \" a \n b \t c \"\n\treturn 0\nprint ( f ( 2 ) )\n")
    assert clean_xlcost_code("TABSYMBOL x TABSYMBOL NEW_LINE INDENT y") == "x\n\ty"
    row = xlcost_code_clean({"text": "t", "code": "a NEW_LINE b"}, config=None, index=0)
    assert row == {"text": "t", "code": "a NEW_LINE b", "code_clean": "a\nb"}


def test_apps_solution_is_a_seeded_draw():
    solutions = json.dumps(["s0", "s1", "s2"])
    rows = [{"solutions": solutions, "question": "q"}] * 60
    picks = [apps_solution(row, config="all", index=i)["solution"] for i, row in enumerate(rows)]
    assert set(picks) == {"s0", "s1", "s2"}  # drawn per row
    assert picks == [apps_solution(row, config="all", index=i)["solution"]
                     for i, row in enumerate(rows)]  # a pure function of seed and index
    assert picks != [apps_solution(row, config="all", index=i, seed=1)["solution"]
                     for i, row in enumerate(rows)]
    for empty in ("", "[]"):
        assert apps_solution({"solutions": empty}, config="all", index=0) is None
