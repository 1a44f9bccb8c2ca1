"""`import p3data.tasks` registers every T0 task and T0's 8 mixtures in seqio, and every
task's few-shot variants (`T_0shot`, `T_1shot`, `T_3shot`, `T_5shot`) with their 6 mixtures.

Offline and fast: names, features and rates come from the bundled catalog and the template
files; no data is read, no vocabulary loaded and no network used until a dataset is asked for.
Set `P3DATA_CATALOG` / `P3DATA_TEMPLATE_DIRS` before importing to add your own datasets and
templates, `P3DATA_DATA_DIR` to read rows from a local mirror, `P3DATA_VOCAB` for another
SentencePiece model.
"""

from __future__ import annotations

from p3data import t0
from p3data.datasets.catalog import Catalog
from p3data.fewshot import Definitions, with_variants
from p3data.registry import register_definitions, register_variants
from p3data.templates import TemplateCollection

DEFINITIONS: t0.T0Definitions = t0.define(Catalog.load(), TemplateCollection.default())
VARIANTS: Definitions = with_variants(DEFINITIONS)
register_definitions(DEFINITIONS)
register_variants(VARIANTS)
