"""The pool stage, before stage 1: every exemplar pool the few-shot variants being built draw
from, in the work folder (`builder.pools` says where).

Per source shard of a pool split (`build_pool_parts`): the rows are read once and rendered by
every template whose pool they feed, each template's usable renders measured into a part; per
pool (`merge_pool`): the parts merged into one, sorted by (cost, row), texts streamed from the
parts, so no worker holds a pool split's texts in memory. Stage 1 then loads each pool
memory-mapped (`load_pool`); a pool in a remote work folder is copied to a local folder first,
once per process. Each part and pool is written before its record, so a rerun redoes only
what is missing or was built from other inputs.
"""

from __future__ import annotations

import functools
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from p3data import fs
from p3data.batching import row_batches
from p3data.builder.jobs import CacheConfig
from p3data.builder.pools import PoolSpec, PoolUnit
from p3data.builder.work_folder import PoolRecord, read_json, write_json
from p3data.datasets.stores import open_store
from p3data.errors import P3DataError, describe_bug, storage_refusal, writing_in
from p3data.fewshot.pool import POOL_FILES, ExemplarPool, PoolBuilder, merge_pools
from p3data.templates.render import DatasetRenderer
from p3data.tokenize import Tokenizer

RECORD = "record.json"


def _record(folder: str) -> str:
    return fs.join(folder, RECORD)


def build_pool_parts(config: CacheConfig, unit: PoolUnit, tokenizer: Tokenizer) -> None:
    """Write this source shard's part of every pool it feeds that lacks one. The parts' texts
    and ids go to local files as they come (`PoolBuilder`'s spill): a worker holds none of
    them, however many templates and rows the shard has."""
    work, rows = config.workdir, [unit.shard.start, unit.shard.stop]
    pending = [pool for pool in unit.pools
               if _done(pool.part(work, unit.index), pool.fingerprint, rows) is None]
    if not pending:
        return
    failed: dict[str, tuple[str, str]] = {}  # pool name -> (why, traceback)
    with tempfile.TemporaryDirectory(prefix="p3data-pool-") as spill:
        builders = {pool.name: PoolBuilder(pool.settings, tokenizer, spill=Path(spill, str(i)))
                    for i, pool in enumerate(pending)}
        try:
            renderer = DatasetRenderer({p.template.id: p.template for p in pending}.values(),
                                       config.seed)
            store = open_store(unit.entry, config.data_dir, config.rows_per_shard)
            start = unit.shard.start
            for batch in row_batches(store.read(unit.split, unit.shard)):
                for name, outcomes in renderer.render_each(batch, start):
                    for pool in pending:
                        if pool.template.name == name:
                            builders[pool.name].add(outcomes)
                start += len(batch)
            for pool in pending:
                if (broken := renderer.broken.get(pool.template.name)) is not None:
                    failed[pool.name] = (f"its template cannot render: {broken}", "")
        except P3DataError as err:  # e.g. an unreadable source file: fails the pools it feeds
            failed = {pool.name: (str(err), "") for pool in pending}
        except Exception as err:  # noqa: BLE001 - a bug fails these pools, not the run
            if storage_refusal(err) is not None:  # a full disk: no later write fares better
                raise
            failed = {pool.name: describe_bug(err) for pool in pending}
        for pool in pending:
            folder = pool.part(work, unit.index)
            built = 0 if pool.name in failed else len(builders[pool.name])
            if pool.name not in failed:
                _save(folder, builders[pool.name].save)
            why, text = failed.get(pool.name, ("", ""))
            write_json(_record(folder), PoolRecord(pool.fingerprint, rows, built, why, text))


def merge_pool(config: CacheConfig, pool: PoolSpec) -> None:
    """Merge the pool's parts into the pool, unless it is merged already; a missing or failed
    part fails the pool, and so the variants that draw from it."""
    work, merged = config.workdir, pool.merged(config.workdir)
    if _done(merged, pool.fingerprint) is not None:
        return
    parts = [read_json(_record(pool.part(work, i)), PoolRecord) for i in range(pool.shards)]
    why = text = ""
    if missing := [i for i, part in enumerate(parts) if part is None
                   or part.fingerprint != pool.fingerprint]:
        why = f"source shard {missing[0]} of {pool.split} was not processed"
    elif bad := next((part for part in parts if part.failed), None):
        why, text = bad.failed, bad.traceback
    else:
        loaded = [_open(pool.part(work, i)) for i in range(pool.shards)]
        _save(merged, functools.partial(merge_pools, loaded))
    write_json(_record(merged), PoolRecord(pool.fingerprint, [], sum(
        part.exemplars for part in parts if part is not None), why, text))


def load_pool(config: CacheConfig, pool: PoolSpec) -> ExemplarPool:
    """The merged pool, memory-mapped; a `P3DataError` saying why if it could not be built."""
    merged = pool.merged(config.workdir)
    record = _done(merged, pool.fingerprint)
    if record is None:
        raise P3DataError(f"the exemplar pool of {pool.entry.name}/{pool.split} was not built")
    if record.failed:
        raise P3DataError(f"the exemplar pool of {pool.entry.name}/{pool.split} could not be "
                          f"built: {record.failed}")
    return _open_once(merged)


def _done(folder: str, fingerprint: str, rows: list[int] | None = None) -> PoolRecord | None:
    """The folder's record if it is of this very pool (or part of its rows)."""
    record = read_json(_record(folder), PoolRecord)
    if record is None or record.fingerprint != fingerprint or (
            rows is not None and record.rows != rows):
        return None
    return record


def _save(folder: str, write: Callable[[str], None]) -> None:
    """`write` a pool's files into `folder`; into a local folder first if it is remote. A
    full disk names `folder` (the pool's files are written by numpy and pathlib)."""
    if (local := fs.on_local_disk(folder)) is not None:
        with writing_in(folder):
            write(local)
        return
    with tempfile.TemporaryDirectory() as scratch:
        write(scratch)
        for name in POOL_FILES:
            with open(os.path.join(scratch, name), "rb") as source, \
                    fs.atomic_writer(fs.join(folder, name)) as target:
                shutil.copyfileobj(source, target)


def _open(folder: str) -> ExemplarPool:
    """A pool's files memory-mapped (copied to a local folder first if remote: once mapped,
    the copy's names are removed, its pages still read, so that no worker leaves copies)."""
    if (local := fs.on_local_disk(folder)) is not None:
        return ExemplarPool.load(local)
    copy = Path(tempfile.mkdtemp(prefix="p3data-pool-"))
    try:
        for name in POOL_FILES:
            with fs.open_read(fs.join(folder, name)) as source, \
                    (copy / name).open("wb") as target:
                shutil.copyfileobj(source, target)
        return ExemplarPool.load(copy)
    finally:
        shutil.rmtree(copy)


# Several variants, splits and units of a worker draw from the same pool: mapped once.
_open_once = functools.lru_cache(maxsize=256)(_open)
