"""`import p3data.xp3` registers every xP3 and xP3mt task in seqio, with the mixtures `xp3`,
`xp3mt` and one per language folder (`xp3_sw`, `xp3mt_code`, ...), and the held-out
evaluation's rank-classification tasks and `xp3_eval`, as `import p3data.tasks` does T0's
(`seqio_cache_tasks --module_import=p3data.xp3`).

Needs both template sets installed (`p3data templates install xp3`, `... xp3mt`): without one,
the import fails in one line saying so. Offline: no rows are read until a dataset is asked for.
"""

from __future__ import annotations

from p3data.taskset import TaskSet, load_definitions

# `.part("xp3")` is xP3's tasks and mixtures, `.part("xp3mt")` xP3mt's, `.part("xp3eval")`
# the held-out evaluation's score-eval tasks and `xp3_eval`. Loaded before seqio is imported
# (some 10 s with TensorFlow and JAX): missing or damaged templates fail the import at once.
DEFINITIONS: TaskSet = load_definitions(("xp3", "xp3mt", "xp3eval"))

from p3data.registry import register_definitions  # noqa: E402 - after the check above

register_definitions(DEFINITIONS)
