"""ARCHITECTURE.md's layer table, enforced: every module of `p3data/` and `pipelines/` sits in
exactly one layer, every import (top level, inside a function, under `if TYPE_CHECKING:`)
points to its own layer or one below, and inside a package whose order the table gives, to a
module listed before it; no imports close a circle.

The table is read as written: one row per layer, top to bottom; its modules are backticked
paths (`p3data/builder/` holds every module under it, `p3data/t0.py` one module, `*` globs);
`p3data/builder/` (bottom up: `defaults`, `folder`, ...) orders the package's modules (its
`__init__` runs first, so it may only import them: the circle check sees to that). A module
that moves is one edit of its row.
"""

from __future__ import annotations

import ast
import fnmatch
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HEADING = "## Layers, bottom to top"
# where each importable package's files are (setup.cfg's package_dir)
PACKAGE_DIRS = {"p3data": "p3data", "p3data.pipelines": "pipelines"}
PATTERN = re.compile(r"`((?:p3data|pipelines)/[^`]*)`(?:\s*\(bottom up: ([^)]*)\))?")


@dataclass
class Layer:
    name: str
    patterns: list[str]
    # package folder ("p3data/builder/") -> its modules' names, bottom up
    orders: dict[str, list[str]] = field(default_factory=dict)


def read_layers(text: str) -> list[Layer]:
    """The table under HEADING, bottom layer first."""
    section = text.split(HEADING, 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ")][1:]  # no header
    layers = []
    for row in rows:
        name, cell = (part.strip() for part in row.strip("| ").split("|", 1))
        layer = Layer(name, [])
        for path, order in PATTERN.findall(cell):
            layer.patterns.append(path)
            if order:
                layer.orders[path] = re.findall(r"`([^`]+)`", order)
        layers.append(layer)
    return layers[::-1]


def module_files() -> dict[str, str]:
    """Every module's dotted name -> its path from the repository's root."""
    found = {}
    for package, folder in PACKAGE_DIRS.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            relative = path.relative_to(ROOT / folder).with_suffix("")
            parts = [package, *relative.parts]
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path.relative_to(ROOT).as_posix()
    return found


def imports(name: str, path: str, modules: dict[str, str]) -> Iterator[tuple[int, str]]:
    """(line, module) for each of p3data's modules that `name` imports, anywhere in it."""
    tree = ast.parse((ROOT / path).read_text(), path)
    package = name if path.endswith("__init__.py") else name.rpartition(".")[0]

    def known(dotted: str) -> str | None:  # the longest prefix that is one of ours
        while dotted and dotted not in modules:
            dotted = dotted.rpartition(".")[0]
        return dotted or None

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [known(alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}".rstrip(".")
            # `from package import module` runs the package's __init__ too: both count
            targets = [known(base), *(f"{base}.{alias.name}" for alias in node.names
                                      if f"{base}.{alias.name}" in modules)]
        else:
            continue
        for target in targets:
            if target is not None and target != name:
                yield node.lineno, target


def import_graph() -> tuple[dict[str, str], dict[str, dict[str, int]]]:
    """Every module's path, and what each imports (module -> first line importing it)."""
    modules = module_files()
    graph: dict[str, dict[str, int]] = {}
    for name, path in modules.items():
        graph[name] = {}
        for line, target in imports(name, path, modules):
            graph[name].setdefault(target, line)
    return modules, graph


def _matches(pattern: str, path: str) -> bool:
    if pattern.endswith("/"):
        return path.startswith(pattern)
    return fnmatch.fnmatchcase(path, pattern)


def placement(layers: list[Layer], modules: dict[str, str]) -> tuple[
        dict[str, tuple[int, int | None]], list[str]]:
    """Each module's rank (its layer, its place in its package's order if the table gives
    one) and what is wrong with the table: modules in no layer or two, stale entries."""
    problems = []
    rank: dict[str, tuple[int, int | None]] = {}
    for name, path in modules.items():
        homes = [(index, pattern) for index, layer in enumerate(layers)
                 for pattern in layer.patterns if _matches(pattern, path)]
        if len(homes) != 1:
            where = " and ".join(f"{pattern!r} ({layers[i].name})" for i, pattern in homes)
            problems.append(f"{path} is in {where or 'no layer'}")
            continue
        index, pattern = homes[0]
        order = layers[index].orders.get(pattern)
        if order is None:
            rank[name] = (index, None)
        elif path == f"{pattern}__init__.py":
            rank[name] = (index, None)  # runs before its modules: a circle if it imports back
        elif (stem := path.removeprefix(pattern).removesuffix(".py")) in order:
            rank[name] = (index, order.index(stem))
        else:
            problems.append(f"{path} is missing from {pattern}'s bottom-up order")
    paths = set(modules.values())
    for layer in layers:
        for pattern in layer.patterns:
            if not any(_matches(pattern, path) for path in paths):
                problems.append(f"{pattern!r} ({layer.name}) names no module")
            for stem in layer.orders.get(pattern, []):
                if f"{pattern}{stem}.py" not in paths:
                    problems.append(f"{pattern}'s order names {stem!r}, which is no module")
    return rank, problems


def upward_imports(layers: list[Layer], rank: dict[str, tuple[int, int | None]],
                   modules: dict[str, str], graph: dict[str, dict[str, int]]) -> list[str]:
    """Imports of a higher layer, or of a module later in the package's own order."""
    found = []
    for name, targets in graph.items():
        for target, line in targets.items():
            if name not in rank or target not in rank:
                continue
            (layer, place), (their_layer, their_place) = rank[name], rank[target]
            same_package = Path(modules[name]).parent == Path(modules[target]).parent
            ordered = place is not None and their_place is not None and same_package
            if their_layer > layer or (their_layer == layer and ordered and their_place > place):
                found.append(f"{modules[name]}:{line} imports {modules[target]}: "
                             f"{layers[their_layer].name} is above {layers[layer].name}"
                             if their_layer > layer else
                             f"{modules[name]}:{line} imports {modules[target]}, later in "
                             f"its package's bottom-up order")
    return found


def circles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """One circle of imports through each group of modules that import each other
    (Tarjan's strongly connected components, then a path back to the start)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups: list[set[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in graph.get(node, {}):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = set()
            while True:
                member = stack.pop()
                group.add(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(group)

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return [_circle_in(sorted(group)[0], group, graph) for group in groups]


def _circle_in(start: str, group: set[str], graph: dict[str, dict[str, int]]) -> list[str]:
    """The shortest path from start back to it inside group (breadth first)."""
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for target in sorted(graph[node]):
                if target == start:
                    return [*paths[node], start]
                if target in group and target not in paths:
                    paths[target] = [*paths[node], target]
                    following.append(target)
        frontier = following
    raise AssertionError(f"no circle through {start}")  # a strongly connected group has one


def _checked() -> tuple[list[Layer], dict[str, str], dict[str, dict[str, int]],
                        dict[str, tuple[int, int | None]], list[str]]:
    layers = read_layers((ROOT / "ARCHITECTURE.md").read_text())
    modules, graph = import_graph()
    rank, problems = placement(layers, modules)
    return layers, modules, graph, rank, problems


def test_every_module_is_in_exactly_one_layer():
    layers, modules, _, _, problems = _checked()
    assert len(layers) >= 8 and len(modules) > 100
    assert not problems, "ARCHITECTURE.md's layer table:\n" + "\n".join(problems)


def test_every_import_points_down():
    layers, modules, graph, rank, _ = _checked()
    found = upward_imports(layers, rank, modules, graph)
    assert not found, "imports pointing up:\n" + "\n".join(found)


def test_no_imports_close_a_circle():
    _, modules, graph, _, _ = _checked()
    found = [" -> ".join(modules[name] for name in circle) for circle in circles(graph)]
    assert not found, "circles of imports:\n" + "\n".join(found)


TOY_TABLE = """## Layers, bottom to top

| layer | modules |
|---|---|
| top | `p3data/cli.py` |
| middle | `p3data/builder/` (bottom up: `plan`, `driver`) |
| bottom | `p3data/fs.py`, `p3data/gone.py` |
"""


def test_the_checks_catch_bad_imports():
    """The checks themselves, on a toy tree: an import up a layer, one against a package's
    order, a module in no layer, a row naming no module, and a circle are each reported."""
    layers = read_layers(TOY_TABLE)
    assert [layer.name for layer in layers] == ["bottom", "middle", "top"]
    assert layers[1].orders == {"p3data/builder/": ["plan", "driver"]}
    modules = {"p3data.cli": "p3data/cli.py", "p3data.fs": "p3data/fs.py",
               "p3data.builder": "p3data/builder/__init__.py",
               "p3data.builder.plan": "p3data/builder/plan.py",
               "p3data.builder.driver": "p3data/builder/driver.py",
               "p3data.stray": "p3data/stray.py"}
    rank, problems = placement(layers, modules)
    assert problems == ["p3data/stray.py is in no layer",
                        "'p3data/gone.py' (bottom) names no module"]
    graph = {"p3data.cli": {"p3data.builder.driver": 3},
             "p3data.fs": {"p3data.cli": 7},
             "p3data.builder": {"p3data.builder.driver": 1},
             "p3data.builder.plan": {"p3data.builder.driver": 5, "p3data.fs": 6},
             "p3data.builder.driver": {"p3data.builder": 2}}
    assert upward_imports(layers, rank, modules, graph) == [
        "p3data/fs.py:7 imports p3data/cli.py: top is above bottom",
        "p3data/builder/plan.py:5 imports p3data/builder/driver.py, later in its package's "
        "bottom-up order"]
    assert circles(graph) == [["p3data.builder", "p3data.builder.driver", "p3data.builder"]]
