"""Long-text reference tasks for `long_text.py`, defined as `t0_style_tasks` defines them.

Importing `t0_style_tasks` registers its short-text tasks too; the benchmark selects by name.
"""

from __future__ import annotations

import functools

import seqio
from promptsource.templates import DatasetTemplates
from t0_style_tasks import FEATURES, PREFIX, dataset_fn

from p3data.t0 import task_name

DATASETS = [("imdb", None), ("cnn_dailymail", "3.0.0")]

for _dataset, _subset in DATASETS:
    for _name in DatasetTemplates(_dataset, _subset).all_template_names:
        seqio.TaskRegistry.add(
            PREFIX + task_name(_dataset, _subset, _name),
            source=seqio.FunctionDataSource(
                functools.partial(dataset_fn, dataset=_dataset, subset=_subset,
                                  template_name=_name),
                splits=["train"]),
            preprocessors=[seqio.preprocessors.tokenize, seqio.preprocessors.append_eos,
                           seqio.CacheDatasetPlaceholder(required=False)],
            output_features=FEATURES,
        )
