"""`import p3data.tasks` registers every T0 task and T0's 8 mixtures in seqio, and every
task's few-shot variants (`T_0shot`, `T_1shot`, `T_3shot`, `T_5shot`) with their 6 mixtures.

Offline and fast: names, features and rates come from the bundled catalog and the template
files; no data is read, no vocabulary loaded and no network used until a dataset is asked for.
Set `P3DATA_CATALOG` / `P3DATA_TEMPLATE_DIRS` before importing to add your own datasets and
templates, `P3DATA_DATA_DIR` to read rows from a local mirror, `P3DATA_VOCAB` for another
SentencePiece model.
"""

from __future__ import annotations

from p3data.taskset import TaskSet, load_definitions

# T0's collection and its variants: `.part("t0")` is T0's own tasks and mixtures.
# Loaded before seqio is imported (some 10 s with TensorFlow and JAX): missing or damaged
# templates fail the import in one line at once.
DEFINITIONS: TaskSet = load_definitions(("t0", "fewshot"))

from p3data.registry import register_definitions  # noqa: E402 - after the check above

register_definitions(DEFINITIONS)
