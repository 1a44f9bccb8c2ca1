"""A run's plan, shipped to its workers once: the driver writes it to the work folder, and the
graph's steps carry only its path.

Workers share nothing with the driver but the job and the output's storage. Pickled into the
job, the plan's tasks, source shards and vocabulary went into the graph once per step that
needs them (compressed, then base64), and Dataflow refuses a graph over 10 MB; from the work
folder, each worker process reads the plan once, whatever the number of tasks or the model's
size. Its name is its digest, so a worker of an earlier job never reads a later job's plan.
"""

from __future__ import annotations

import hashlib
import pickle
import threading
import zlib
from dataclasses import dataclass

from p3data import fs
from p3data.builder.jobs import CachePlan
from p3data.gc_policy import collection_paused

_received: dict[str, CachePlan] = {}  # this process's plan, by path (the latest only)
_receiving = threading.Lock()  # a worker's steps set up in several threads read it once


@dataclass(frozen=True)
class ShippedPlan:
    """Where a run's plan is: what the graph's steps carry instead of the plan."""

    path: str

    def receive(self) -> CachePlan:
        """The plan, read once per process."""
        with _receiving:
            if self.path not in _received:
                data = zlib.decompress(fs.read_bytes(self.path))
                # unpickling creates many objects, and a collection at each threshold walks
                # them all again (2.5x the CPU for every task's plan)
                with collection_paused():
                    plan = pickle.loads(data)
                _received.clear()
                _received[self.path] = plan
            return _received[self.path]

    def withdraw(self) -> None:
        """Remove the plan once its job has finished, and this process's copy (an in-process
        runner's steps ran here)."""
        fs.delete([self.path])
        with _receiving:
            _received.pop(self.path, None)


def ship(plan: CachePlan) -> ShippedPlan:
    """Write the plan to its work folder for the workers of the job about to run it."""
    data = zlib.compress(pickle.dumps(plan, protocol=pickle.HIGHEST_PROTOCOL))
    shipped = ShippedPlan(plan.config.workdir.plan(hashlib.sha256(data).hexdigest()))
    fs.write_bytes(shipped.path, data)
    return shipped
