"""p3data: promptsource templates compiled into T0's seqio tasks, mixtures and caches.

What is public, by job. Each name loads its layer on first use, so `import p3data` stays free
of seqio, TensorFlow and Beam:

- registering: `import p3data.tasks` registers T0's tasks and mixtures and their few-shot
  variants in seqio; `load_definitions()` gives every task and mixture p3data defines as data
  (names, templates, splits, rates), as every command chooses among them;
  `register_prompted()` adds tasks for datasets of your own catalog files, named and shaped as
  T0's are.
- reading a cache (no TensorFlow): `open_cache`, `mixture_sampler`, `pack`, `PackedStream`;
  bridges to PyTorch, grain and tf.data in `p3data.read.adapters`, to Hugging Face's T5 in
  `p3data.read.hf`.
- exporting a cache as P3 is on the Hub (parquet or JSON lines): `export_tasks`,
  `ExportSettings`.
- errors: every failure p3data expects is a `P3DataError` (a name it cannot find, a
  `NotFoundError`).
The packages' own `__all__` say what else each offers; the command line is `p3data --help`.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_HOMES = {
    "load_definitions": "p3data.taskset",
    "register_prompted": "p3data.registry",
    "open_cache": "p3data.read",
    "mixture_sampler": "p3data.read",
    "pack": "p3data.read",
    "PackedStream": "p3data.read",
    "export_tasks": "p3data.export",
    "ExportSettings": "p3data.export",
    "P3DataError": "p3data.errors",
    "NotFoundError": "p3data.errors",
}
__all__ = ["__version__", *_HOMES]


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module 'p3data' has no attribute {name!r}")
    return getattr(importlib.import_module(_HOMES[name]), name)


def __dir__() -> list[str]:
    return sorted({*globals(), *_HOMES})
