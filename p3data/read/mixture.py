"""T0's mixtures without seqio: an endless, seeded stream of examples over cached tasks, drawn
by the registered rates, whose position can be saved and restored (a preempted training run
resumes the very same stream).

The stream is a function of the seed, `shuffle`, and the tasks' names, rates and sizes alone:
step s picks a task from the draws of block s // BLOCK (seeded by the seed and the block),
and a task's k-th example is its permutation of epoch k // size (seeded by the seed, the
task's name and the epoch) at k % size. So a state is a few numbers per task, never a
permutation. Permutations are made when a task first needs one, one per task (at most 4 bytes
per example of a task of up to 2**32 examples). The draws are NumPy's (`default_rng`), whose
streams NumPy keeps from version to version but does not promise to: resume a run under the
NumPy it started with.
"""

from __future__ import annotations

import hashlib
import logging
import math
import numbers
import os
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Self

import msgspec
import numpy as np

from p3data.errors import P3DataError
from p3data.read.reader import CacheReader, open_cache
from p3data.taskset import RATE_SPLIT, MixtureDef, TaskDef, TaskSet, load_definitions

STATE_VERSION = 1
_LOG = logging.getLogger(__name__)


class MissingTasksError(P3DataError):
    """A cache lacks some of a mixture's tasks (`missing`) for the split asked for."""

    def __init__(self, message: str, missing: Sequence[str]):
        super().__init__(message, setting="allow_missing")
        self.missing = tuple(missing)


class _TaskPosition(msgspec.Struct, forbid_unknown_fields=True):
    rate: float
    examples: int
    drawn: int  # examples of the task the stream has yielded


class _State(msgspec.Struct, forbid_unknown_fields=True):
    version: int
    seed: int
    shuffle: bool
    step: int
    tasks: dict[str, _TaskPosition]


class MixtureSampler:
    """Endless examples of several tasks: each step draws a task with probability
    rate / sum(rates), as `seqio.Mixture` does (rate 0: never), then yields its next example.
    Each task goes through its examples epoch after epoch, in a fresh permutation per epoch
    when `shuffle`, fetching them by index from its source (any sequence: a cached task
    split, a list). `task_key` names a feature added to every example to carry its task's
    name; by default examples are yielded as their source gives them.
    """

    BLOCK = 4096  # task draws made at a time

    def __init__(self, sources: Mapping[str, Sequence[Mapping[str, Any]]],
                 rates: Mapping[str, float], *, seed: int, shuffle: bool = True,
                 task_key: str | None = None):
        _check_rates(sources, rates)
        if not isinstance(seed, numbers.Integral) or seed < 0:
            raise P3DataError(f"the mixture seed must be a non-negative integer, not {seed!r}",
                              setting="seed")
        self._sources = dict(sources)
        self._names = sorted(sources)
        self._rates = {name: float(rates[name]) for name in self._names}
        self._sizes = {name: len(sources[name]) for name in self._names}
        empty = [name for name in self._names if self._rates[name] > 0 and not self._sizes[name]]
        if empty:
            raise P3DataError(f"task {empty[0]!r} has no examples but a mixing rate of "
                              f"{self._rates[empty[0]]:g}: give it rate 0 or leave it out")
        self._drawable = [name for name in self._names if self._rates[name] > 0]
        weights = np.array([self._rates[name] for name in self._drawable])
        self._probabilities = weights / weights.sum()
        self.seed, self.shuffle, self.task_key = int(seed), shuffle, task_key
        self._step = 0
        self._drawn = dict.fromkeys(self._names, 0)
        self._draws: tuple[int, np.ndarray] = (-1, np.zeros(0, np.int64))  # block, its draws
        self._orders: dict[str, tuple[int, np.ndarray]] = {}  # task -> epoch, permutation

    @property
    def rates(self) -> dict[str, float]:
        """Each task's mixing rate (not normalized)."""
        return dict(self._rates)

    @property
    def step(self) -> int:
        """Examples yielded so far."""
        return self._step

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return self

    def __next__(self) -> dict[str, Any]:
        name = self._task_at(self._step)
        example = self._sources[name][self._index(name, self._drawn[name])]
        self._step += 1
        self._drawn[name] += 1
        return {**example, self.task_key: name} if self.task_key else example

    def _task_at(self, step: int) -> str:
        block, offset = divmod(step, self.BLOCK)
        if self._draws[0] != block:
            generator = np.random.default_rng([self.seed, 0, 0, block])
            self._draws = block, generator.choice(len(self._drawable), size=self.BLOCK,
                                                  p=self._probabilities)
        return self._drawable[self._draws[1][offset]]

    def _index(self, name: str, drawn: int) -> int:
        epoch, offset = divmod(drawn, self._sizes[name])
        if not self.shuffle:
            return offset
        if name not in self._orders or self._orders[name][0] != epoch:
            generator = np.random.default_rng([self.seed, 1, _name_number(name), epoch])
            permutation = generator.permutation(self._sizes[name])
            self._orders[name] = epoch, permutation.astype(np.min_scalar_type(len(permutation)))
        return int(self._orders[name][1][offset])

    def state(self) -> dict[str, Any]:
        """The stream's position, as JSON-ready builtins: `load_state` resumes it exactly."""
        tasks = {name: _TaskPosition(self._rates[name], self._sizes[name], self._drawn[name])
                 for name in self._names}
        return msgspec.to_builtins(_State(STATE_VERSION, self.seed, self.shuffle, self._step,
                                          tasks))

    def load_state(self, state: Mapping[str, Any]) -> Self:
        """Continue from `state()` of a sampler over the same tasks, rates, sizes and seed."""
        saved = _parse_state(state)
        mine = msgspec.convert(self.state(), _State)
        for field in ("seed", "shuffle"):
            if getattr(saved, field) != getattr(mine, field):
                raise _mismatch(f"its {field} is {getattr(saved, field)!r}, this sampler's "
                                f"{getattr(mine, field)!r}")
        if saved.tasks.keys() != mine.tasks.keys():
            only = sorted(saved.tasks.keys() ^ mine.tasks.keys())
            where = "the state" if only[0] in saved.tasks else "this sampler"
            raise _mismatch(f"task {only[0]!r} is only in {where}")
        for name, position in saved.tasks.items():
            if (position.rate, position.examples) != (mine.tasks[name].rate,
                                                      mine.tasks[name].examples):
                raise _mismatch(f"task {name!r} has rate {position.rate:g} and "
                                f"{position.examples:,} examples there, rate "
                                f"{mine.tasks[name].rate:g} and {mine.tasks[name].examples:,} "
                                "examples here")
        self._step = saved.step
        self._drawn = {name: position.drawn for name, position in saved.tasks.items()}
        return self

    @classmethod
    def restore(cls, sources: Mapping[str, Sequence[Mapping[str, Any]]],
                rates: Mapping[str, float], state: Mapping[str, Any], *,
                task_key: str | None = None) -> MixtureSampler:
        """A sampler over `sources` at the position `state` recorded (its seed and shuffle)."""
        saved = _parse_state(state)
        return cls(sources, rates, seed=saved.seed, shuffle=saved.shuffle,
                   task_key=task_key).load_state(state)


def mixture_sampler(cache: CacheReader | str | os.PathLike, mixture: str, split: str = "train", *,
                    seed: int, shuffle: bool = True, task_key: str | None = None,
                    allow_missing: bool = False,
                    definitions: TaskSet | None = None) -> MixtureSampler:
    """A `MixtureSampler` over `mixture` (any of `p3data.load_definitions()`: T0's, the
    few-shot ones) as `seqio.MixtureRegistry` has it, reading the tasks' `split` from `cache`
    (a `CacheReader` or its path): the tasks whose definition has the split (seqio skips the
    others), rated by the mixture's rule (`MixtureDef.rate`). A task the cache lacks is an
    error naming it, unless `allow_missing`: then the mixture is sampled over the tasks it
    holds, with a warning."""
    reader = cache if isinstance(cache, CacheReader) else open_cache(os.fspath(cache))
    definitions = definitions or load_definitions()
    spec = definitions.mixture(mixture)
    wanted = [name for name in spec.tasks if split in definitions.tasks[name].split_mapping]
    if not wanted:
        raise P3DataError(f"no task of {mixture} has a {split!r} split", setting="split")
    cached = set(reader.tasks)
    missing = [name for name in wanted if name not in cached or split not in reader.splits(name)]
    if missing:
        lack = (f"{reader.root} lacks {len(missing)} of {mixture}'s {len(wanted)} tasks with a "
                f"{split!r} split: {_names(missing)}")
        if not allow_missing or len(missing) == len(wanted):
            raise MissingTasksError(f"{lack}; cache them (p3data cache --mixture {mixture}) or "
                                    "pass allow_missing=True to sample the others", missing)
        _LOG.warning("%s; sampling the other %d", lack, len(wanted) - len(missing))
    tasks = [name for name in wanted if name not in missing]
    rates = {name: _rate(reader, spec, definitions.tasks[name]) for name in tasks}
    return MixtureSampler({name: reader.split(name, split) for name in tasks}, rates, seed=seed,
                          shuffle=shuffle, task_key=task_key)


def _rate(reader: CacheReader, spec: MixtureDef, task: TaskDef) -> float:
    """The task's rate by `spec`'s rule, over the examples of its train split in the cache,
    as the registry's seqio mixture computes it."""
    if spec.rate_by_cap:
        return spec.rate(task)
    if RATE_SPLIT not in reader.splits(task.name):
        raise P3DataError(f"{reader.folder(task.name)}: no {RATE_SPLIT!r} split, whose examples "
                          f"rate the task in {spec.name} (seqio's mixture fails on it too); "
                          "give a MixtureSampler rates of your own")
    return spec.rate(task, len(reader.split(task.name, RATE_SPLIT)))


def _names(names: Sequence[str], shown: int = 10) -> str:
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return ", ".join(names[:shown]) + more


def _check_rates(sources: Mapping[str, Sequence[Any]], rates: Mapping[str, float]) -> None:
    if sources.keys() != rates.keys():
        only = sorted(sources.keys() ^ rates.keys())
        where = "sources" if only[0] in sources else "rates"
        raise P3DataError(f"task {only[0]!r} is only in the mixture's {where}: give every task "
                          "both a source and a rate")
    bad = [f"{name}={rate!r}" for name, rate in rates.items()
           if not isinstance(rate, numbers.Real) or not math.isfinite(rate) or rate < 0]
    if bad:
        raise P3DataError(f"mixing rates must be finite and non-negative: {', '.join(bad)}")
    if not any(rates.values()):
        raise P3DataError("no task of the mixture has a positive mixing rate")


def _name_number(name: str) -> int:
    """A task's stable number for seeding its permutations (not Python's salted hash)."""
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big")


def _parse_state(state: Mapping[str, Any]) -> _State:
    try:
        saved = msgspec.convert(state, _State)
    except msgspec.ValidationError as err:
        raise P3DataError(f"not a mixture sampler state: {err}") from None
    if saved.version != STATE_VERSION:
        raise P3DataError(f"a mixture sampler state of version {saved.version}; this p3data "
                          f"reads version {STATE_VERSION}")
    if saved.step != sum(position.drawn for position in saved.tasks.values()):
        raise P3DataError(f"not a mixture sampler state: step {saved.step:,} is not the sum "
                          "of the tasks' drawn examples")
    return saved


def _mismatch(reason: str) -> P3DataError:
    return P3DataError(f"the mixture state is not of this sampler: {reason}; restore it with "
                       "the same tasks, rates and seed")
