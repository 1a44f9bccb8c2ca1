"""Every task and mixture p3data defines, as one set: one lookup by name, one `select`.

Each command and the public API (`p3data.load_definitions`) choose tasks here, so a mixture
that one of them knows, all of them know. The set is made of collections: a collection is a
module that contributes task specs and mixtures (T0's tasks in `p3data.t0`, their few-shot
variants in `p3data.fewshot`), found through the `p3data.collections` entry points, so that a
new collection, p3data's or a user's package, is added without editing this module. A
collection may build on others' tasks (`requires`): the variants are T0's tasks, re-prompted.
A collection that cannot load here (xP3's, without its templates installed) raises
`CollectionUnavailable`: the set is then the others', and asking for a name it would define
gives its reason, so that every command keeps working with what is there.

Pure data: no seqio, no rows, no vocabulary loaded (`one_vocabulary` names which). What a
task spec and a mixture must offer is stated by `TaskDef` and `MixtureDef`; registering them
in seqio is `p3data.registry`'s job.
"""

from __future__ import annotations

import importlib.metadata
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from p3data.errors import NotFoundError, P3DataError

if TYPE_CHECKING:
    from p3data.datasets.catalog import DatasetEntry
    from p3data.templates import Template
    from p3data.templates.render import RowRule, RowStep
    from p3data.vocab import Vocabulary

ENTRY_POINTS = "p3data.collections"
# A mixture weighed by examples counts a task's examples in this split, whichever split the
# mixture is read from, as seqio's `mixing_rate_num_examples` does (xP3's tasks hold every
# training split of the recipe's in it).
RATE_SPLIT = "train"
LISTED_BY = "p3data list"  # where the known task names are listed, and the mixtures' names
MIXTURES_LISTED_BY = "p3data list --mixtures"
# What a task split reads (`TaskDef.split_mapping`'s values): one source split, or several
# whose examples it holds one after another, in order (xP3's `train`: every training split of
# the recipe's, as it concatenates them). T0's are one source split, so their records stay as
# they were.
SourceSplits = str | tuple[str, ...]


def source_splits(source: SourceSplits) -> tuple[str, ...]:
    """The source splits a task split reads, in order."""
    return (source,) if isinstance(source, str) else tuple(source)


def source_label(source: SourceSplits) -> str:
    """The source splits a task split reads, for people: `validation+test`."""
    return "+".join(source_splits(source))


def single_source(spec: TaskDef, split: str, *, use: str) -> str:
    """The one source split `spec`'s `split` reads, or one line saying that `use` reads only
    task splits of one source split."""
    source = spec.split_mapping[split]
    if not isinstance(source, str):
        raise P3DataError(f"{spec.name}: its {split!r} split reads {len(source)} source splits "
                          f"({', '.join(source)}); {use} reads a split of one source split")
    return source


@dataclass(frozen=True)
class SplitCap:
    """At most `cap` examples of each split of a task, chosen among `pool` candidate rows
    (xP3's recipe: 100,000 among 500,000; `p3data.builder.selection` chooses them)."""

    cap: int
    pool: int

    def scaled(self, cap: int | None) -> SplitCap:
        """This cap with `cap` examples instead (None: as it is), the pool in proportion."""
        return self if cap is None else SplitCap(cap, -(-self.pool * cap // self.cap))


class TaskDef(Protocol):
    """What every task spec offers the builder, the registry and the commands."""

    @property
    def name(self) -> str: ...

    @property
    def entry(self) -> DatasetEntry: ...

    @property
    def template(self) -> Template: ...

    @property
    def split_mapping(self) -> dict[str, SourceSplits]: ...  # task split -> what it reads

    @property
    def score_eval(self) -> bool: ...

    @property
    def cap(self) -> int: ...  # the task's training rate in mixtures weighed by caps

    @property
    def row_rule(self) -> RowRule: ...  # how a render becomes an example (T0's: `T0_RULE`)

    @property
    def dataset_step(self) -> RowStep | None: ...  # on each row before templating (T0's: none)

    @property
    def vocabulary(self) -> Vocabulary: ...  # its collection's (`p3data.vocab.T5`, `MT5`)

    @property
    def split_cap(self) -> SplitCap | None: ...  # examples kept per split (T0's: no cap)

    @property
    def language(self) -> str | None: ...  # of all its examples (xP3's folder; T0's: None)


class MixtureDef(Protocol):
    """A mixture: its tasks, and the one rule that weighs them (`rate`)."""

    @property
    def name(self) -> str: ...

    @property
    def tasks(self) -> tuple[str, ...]: ...

    @property
    def rate_by_cap(self) -> bool: ...  # else weighed by the examples of each task's cache

    @property
    def rate_rule(self) -> str: ...  # the rule, said for people

    def share(self, task: TaskDef) -> float: ...  # the task's share of what the rule gives

    # `examples`: the task's in its cache's RATE_SPLIT; None: no cache, when a rule gives
    # a rate only if it has a placeholder (xP3's), else seqio's own count stands for it
    def rate(self, task: TaskDef, examples: int | None = None) -> float | None: ...


class Part(Protocol):
    """What a collection contributes."""

    @property
    def tasks(self) -> Mapping[str, TaskDef]: ...

    @property
    def mixtures(self) -> Mapping[str, MixtureDef]: ...


class Collection(Protocol):
    """A module's tasks and mixtures, defined over the collections it `requires`. It may
    declare a `prefix: str` that every name it defines starts with, so that commands choosing
    tasks by name define it only when they can reach it (`chosen`)."""

    name: str
    requires: tuple[str, ...]

    def define(self, base: TaskSet) -> Part: ...


class CollectionUnavailable(P3DataError):
    """A collection cannot define its tasks here; the message says how to fix that in one line,
    `claims` is a regex matching the task and mixture names it would define."""

    def __init__(self, reason: str, *, claims: str):
        super().__init__(reason)
        self.claims = claims


@dataclass(frozen=True)
class Contribution:
    """A collection's tasks and mixtures, when it has nothing else to say (`Part`)."""

    tasks: dict[str, TaskDef] = field(default_factory=dict)
    mixtures: dict[str, MixtureDef] = field(default_factory=dict)


@dataclass(frozen=True)
class TaskSet:
    """Tasks and mixtures by name, and each collection's part (`part`), in loading order;
    `unavailable`: the collections that could not load, and why."""

    tasks: dict[str, TaskDef] = field(default_factory=dict)
    mixtures: dict[str, MixtureDef] = field(default_factory=dict)
    parts: dict[str, Part] = field(default_factory=dict)
    unavailable: dict[str, CollectionUnavailable] = field(default_factory=dict)

    def part(self, collection: str) -> Part:
        """What `collection` contributed (e.g. `"t0"`: `t0.T0Definitions`)."""
        if collection in self.unavailable:
            raise self.unavailable[collection]
        if collection not in self.parts:
            raise NotFoundError.unknown("collection", collection, self.parts)
        return self.parts[collection]

    def _check_unavailable(self, what: str, name: str) -> None:
        """The reason a collection that could not load gives, for a name it would define."""
        for collection, why in self.unavailable.items():
            if re.fullmatch(why.claims, name):
                raise NotFoundError(f"the {what} {name!r} is the collection {collection!r}'s, "
                                    f"which cannot load: {why}", setting=why.setting)

    def task(self, name: str) -> TaskDef:
        """The task called `name`, or the one error for a task that is not defined (saying
        so when `name` is a mixture's)."""
        spec = self.tasks.get(name)
        if spec is not None:
            return spec
        if name in self.mixtures:
            raise NotFoundError(f"{name!r} is a mixture, not a task; its tasks: "
                                f"p3data list --mixture {name}")
        self._check_unavailable("task", name)
        raise NotFoundError.unknown("task", name, self.tasks, listed_by=LISTED_BY)

    def mixture(self, name: str) -> MixtureDef:
        """The mixture called `name`, or the one error for a mixture that is not defined."""
        spec = self.mixtures.get(name)
        if spec is None:
            self._check_unavailable("mixture", name)
            raise NotFoundError.unknown("mixture", name, self.mixtures,
                                        listed_by=MIXTURES_LISTED_BY, setting="tasks")
        return spec

    def mixture_tasks(self, name: str) -> list[TaskDef]:
        """The tasks of a mixture, in the mixture's order."""
        return [self.tasks[task] for task in self.mixture(name).tasks]

    def rate(self, mixture: str, task: str, examples: int | None = None) -> float | None:
        """`MixtureDef.rate` of one task of one mixture, by name."""
        return self.mixture(mixture).rate(self.task(task), examples)

    def select(self, mixtures: Sequence[str] = (),
               patterns: Sequence[str] = ()) -> list[TaskDef]:
        """The tasks of the given mixtures, narrowed (or, without mixtures, chosen among all)
        by regexes that must match whole task names, as seqio's `--tasks` does; by name."""
        if not mixtures and not patterns:
            raise P3DataError("no tasks chosen: name mixtures or task patterns",
                              setting="tasks")
        names = (list(dict.fromkeys(t for name in mixtures for t in self.mixture(name).tasks))
                 if mixtures else list(self.tasks))
        if patterns:
            names = matching(names, patterns)
        if not names:
            where = f" in {', '.join(mixtures)}" if mixtures else ""
            raise P3DataError(f"no task{where} fully matches {' or '.join(patterns)}",
                              setting="tasks")
        return [self.tasks[name] for name in sorted(names)]

    def adding(self, collection: str, part: Part) -> TaskSet:
        """This set with `part` of `collection` added; a name defined twice is an error."""
        for kind, mine, theirs in (("task", self.tasks, part.tasks),
                                   ("mixture", self.mixtures, part.mixtures)):
            if twice := next((name for name in theirs if name in mine), None):
                owner = next(c for c, p in self.parts.items()
                             if twice in getattr(p, f"{kind}s"))
                raise P3DataError(f"the {kind} {twice!r} is defined by the collections "
                                  f"{owner!r} and {collection!r}; rename one of them")
        return TaskSet({**self.tasks, **part.tasks}, {**self.mixtures, **part.mixtures},
                       {**self.parts, collection: part}, self.unavailable)

    def lacking(self, collection: str, why: CollectionUnavailable) -> TaskSet:
        """This set, knowing that `collection` could not load, and why."""
        return TaskSet(self.tasks, self.mixtures, self.parts,
                       {**self.unavailable, collection: why})


def one_vocabulary(specs: Sequence[TaskDef]) -> Vocabulary:
    """The vocabulary of these tasks (T5's for none): one cache is tokenized with one, so tasks
    of collections with different vocabularies are refused."""
    from p3data.vocab import T5, VocabularyError

    found = {spec.vocabulary for spec in specs}
    if len(found) > 1:
        names = " and ".join(sorted(vocabulary.name for vocabulary in found))
        raise VocabularyError(f"the tasks asked for are tokenized with {names} vocabularies: "
                              "a cache has one; build one per collection", setting="vocab")
    return found.pop() if found else T5


def matching(names: Iterable[str], patterns: Sequence[str]) -> list[str]:
    """The names that some regex of `patterns` matches whole, as seqio's `--tasks` does."""
    try:
        compiled = [re.compile(pattern) for pattern in patterns]
    except re.error as err:
        raise P3DataError(f"a task pattern is not a regular expression: {err}",
                          setting="task_pattern") from None
    return [name for name in names if any(c.fullmatch(name) for c in compiled)]


def installed_collections() -> dict[str, Collection]:
    """The collections installed p3data and other packages declare, by name."""
    found = {point.name: point for point in importlib.metadata.entry_points(group=ENTRY_POINTS)}
    if not found:
        raise P3DataError(f"no task collections are installed (entry points {ENTRY_POINTS!r}): "
                          "p3data's package metadata is missing; reinstall p3data "
                          "(pip install p3data, or pip install -e . in a source tree)")
    return {name: point.load() for name, point in sorted(found.items())}


def in_order(collections: Mapping[str, Collection],
             wanted: Iterable[str] | None = None) -> list[Collection]:
    """`wanted` (default: all) and what they require, each after what it requires."""
    ordered: list[Collection] = []

    def visit(name: str, chain: tuple[str, ...]) -> None:
        if name in chain:
            loop = " -> ".join((*chain, name))
            raise P3DataError(f"task collections require each other: {loop}")
        if any(c.name == name for c in ordered):
            return
        if name not in collections:
            raise NotFoundError.unknown("collection", name, collections)
        for required in collections[name].requires:
            visit(required, (*chain, name))
        ordered.append(collections[name])

    for name in collections if wanted is None else wanted:
        visit(name, ())
    return ordered


def define(collections: Iterable[Collection], *, optional: bool = False) -> TaskSet:
    """The task set of `collections`, each defined over those before it. `optional`: a
    collection that cannot load (`CollectionUnavailable`), or requires one that cannot, is left
    out and its reason kept (`TaskSet.unavailable`); else its reason is the error."""
    taskset = TaskSet()
    for collection in collections:
        try:
            if missing := [name for name in collection.requires if name in taskset.unavailable]:
                raise taskset.unavailable[missing[0]]
            taskset = taskset.adding(collection.name, collection.define(taskset))
        except CollectionUnavailable as why:
            if not optional:
                raise
            taskset = taskset.lacking(collection.name, why)
    return taskset


def chosen(mixtures: Sequence[str] = (), patterns: Sequence[str] = ()) -> list[TaskDef]:
    """`load_definitions().select(mixtures, patterns)`, defining only the collections whose
    names these can reach (by their `prefix`): a T0 job defines none of xP3's tasks, an xP3
    job not xP3mt's. A collection that cannot load is left out as there."""
    installed = installed_collections()
    reached = [name for name, collection in installed.items()
               if any(_may_start(item, getattr(collection, "prefix", ""))
                      for item in [*mixtures, *patterns])]
    taskset = define(in_order(installed, reached or None), optional=True)
    return taskset.select(mixtures, patterns)


def _may_start(pattern: str, prefix: str) -> bool:
    """Whether a name that `pattern` (a name, or a regex matched whole) matches may start with
    `prefix`: its literal head (up to its first regex syntax, less a character that may be
    repeated no times) and the prefix agree where both reach. A top-level `|` may start
    anything (with `[` or `\\` in the pattern, any `|` counts as top-level)."""
    head = re.match(r"[\w-]*", pattern).group()
    if pattern[len(head):len(head) + 1] in ("?", "*", "{"):
        head = head[:-1]
    depth, bracketed = 0, "[" in pattern or "\\" in pattern
    for char in pattern:
        depth += (char == "(") - (char == ")")
        if char == "|" and (depth == 0 or bracketed):
            return True
    return head.startswith(prefix) or prefix.startswith(head)


def load_definitions(collections: Iterable[str] | None = None) -> TaskSet:
    """Every task and mixture p3data defines (or those of the named `collections`, and what
    they require), over the catalog and templates in effect (`P3DATA_CATALOG` and
    `P3DATA_TEMPLATE_DIRS` included), as data: `.tasks` maps a task name to its spec (dataset,
    template, splits, rate cap), `.mixtures` a mixture name to its spec; `.task(name)` and
    `.mixture(name)` look one up or raise `NotFoundError` naming close matches; `.select`
    chooses as `p3data cache --mixture/--tasks` does. Reads package data only: no rows, no
    vocabulary, no seqio. A set without any task is an error, never an empty registry. Without
    `collections`, one that cannot load here (xP3's without its templates) is left out and
    names it would define say why; a named one that cannot load is the error."""
    ordered = in_order(installed_collections(), collections)
    taskset = define(ordered, optional=collections is None)
    if not taskset.tasks:
        names = ", ".join(collection.name for collection in ordered) or "none"
        raise P3DataError(f"the task collections chosen ({names}) define no task")
    return taskset
