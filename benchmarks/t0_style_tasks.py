"""Reference tasks defined the way T0 defined them, for `cache_vs_stock.py`.

Per row: promptsource's `Template.apply` after `removeHyphen`, T0's row rule, in a one-shard
`seqio.FunctionDataSource` fed by a Python generator; then tokenize, append_eos and a cache
placeholder. Rows come from the benchmark's JSON Lines mirror (`P3DATA_BENCH_MIRROR`), where T0
read Hugging Face datasets. Imported by stock `seqio_cache_tasks --module_import=t0_style_tasks`;
`register` defines the same tasks for other datasets (`t0_style_long_tasks.py`).
"""

from __future__ import annotations

import functools
import json
import os

import seqio
import tensorflow as tf
from common import add_stock_task
from promptsource.templates import DatasetTemplates
from promptsource.utils import removeHyphen

from p3data.t0 import task_name

PREFIX = "t0style_"
DATASETS = [("app_reviews", None), ("dbpedia_14", None), ("web_questions", None)]
MIRROR = os.environ.get("P3DATA_BENCH_MIRROR", "")
VOCABULARY = seqio.SentencePieceVocabulary(os.environ.get("P3DATA_VOCAB", ""), extra_ids=100)
FEATURES = {
    "inputs": seqio.Feature(VOCABULARY, add_eos=False, dtype=tf.int32),
    "targets": seqio.Feature(VOCABULARY, add_eos=True, dtype=tf.int32),
}


def dataset_fn(split, shuffle_files, seed=None, *, dataset, subset, template_name):
    del shuffle_files, seed  # as in T0: "HF datasets does not support file-level shuffling"
    template = DatasetTemplates(dataset, subset)[template_name]
    folder = os.path.join(MIRROR, dataset, subset) if subset else os.path.join(MIRROR, dataset)
    with_choices = template.get_answer_choices_expr() is not None

    def examples():
        with open(os.path.join(folder, f"{split}.jsonl")) as handle:
            for line in handle:
                example = removeHyphen(json.loads(line))
                parts = template.apply(example)
                choices = template.get_answer_choices_list(example)
                if len(parts) != 2 or not parts[0]:
                    continue
                out = {"inputs": parts[0], "targets": parts[1] or "<NO LABEL>"}
                if with_choices:
                    out["answer_choices"] = choices
                yield out

    signature = {"inputs": tf.TensorSpec((), tf.string), "targets": tf.TensorSpec((), tf.string)}
    if with_choices:
        signature["answer_choices"] = tf.TensorSpec((None,), tf.string)
    return tf.data.Dataset.from_generator(examples, output_signature=signature)


def register(datasets: list[tuple[str, str | None]]) -> None:
    """Register `t0style_<task>` for every template of these (dataset, subset) pairs."""
    for dataset, subset in datasets:
        for name in DatasetTemplates(dataset, subset).all_template_names:
            add_stock_task(PREFIX + task_name(dataset, subset, name),
                           functools.partial(dataset_fn, dataset=dataset, subset=subset,
                                             template_name=name), FEATURES)


register(DATASETS)
