"""xP3 tasks defined the stock way, for `xp3_cache.py`: what `t0_style_tasks` is to T0's.

Per row: xP3's recipe (`removeHyphen`, the fork's own `Template.apply` with `truncate`, its map
and filter: `tests/helpers/xp3_reference.py`) in a one-shard `seqio.FunctionDataSource` fed by a
Python generator; then tokenize, append_eos and a cache placeholder, mT5's vocabulary shape
(extra ids inside the model: seqio's 0). The fork's `templates.py` and the prompt folder come
from its archive (`P3DATA_XP3_ARCHIVES` or `shared/xp3/`), rows from the benchmark's mirror
(`P3DATA_BENCH_MIRROR`). Imported by `seqio_cache_tasks --module_import=xp3_style_tasks`.
"""

from __future__ import annotations

import functools
import json
import os
import sys
import tempfile
from pathlib import Path

import seqio
import tensorflow as tf
from common import add_stock_task

from p3data.dataset_key import DatasetKey
from p3data.t0 import task_name
from p3data.templates.install import TEMPLATE_SETS
from p3data.xp3_recipe.recipe import prompt_folder

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from helpers.template_sets import shared_archive  # noqa: E402
from helpers.xp3_reference import extract_fork, load_fork, xp3_apply  # noqa: E402

PREFIX = "xp3style_"
DATASET = "GEM/xlsum"
# XL-Sum's languages in xP3 by script: written with spaces, and without (xP3 has no Japanese
# or Thai: Chinese is its only language written without spaces, besides code)
SPACED = {"arabic": "arabic", "bengali": "bengali", "hindi": "devanagari",
          "swahili": "latin", "tamil": "tamil"}
UNSPACED = {"chinese_simplified": "chinese", "chinese_traditional": "chinese"}
MIRROR = os.environ.get("P3DATA_BENCH_MIRROR", "")
VOCABULARY = seqio.SentencePieceVocabulary(os.environ.get("P3DATA_VOCAB", ""), extra_ids=0)
FEATURES = {
    "inputs": seqio.Feature(VOCABULARY, add_eos=False, dtype=tf.int32),
    "targets": seqio.Feature(VOCABULARY, add_eos=True, dtype=tf.int32),
}


@functools.cache
def fork_templates(folder: str) -> dict:
    """The fork's templates of one prompt folder, by name, as the recipe reads them."""
    extracted = extract_fork(shared_archive(TEMPLATE_SETS["xp3"]),
                             Path(tempfile.mkdtemp(prefix="xp3style-")), [folder])
    _, by_folder = load_fork(extracted, [folder])
    return {template.name: template for template in by_folder[folder].values()}


def dataset_fn(split, shuffle_files, seed=None, *, config, folder, template_name):
    del shuffle_files, seed
    template = fork_templates(folder)[template_name]
    path = Path(DatasetKey(DATASET, config).folder(MIRROR)) / f"{split}.jsonl"

    def examples():
        with path.open() as handle:
            for index, line in enumerate(handle):
                kept = xp3_apply(template, json.loads(line), index, strip_connection=True)
                if kept.inputs is not None:
                    yield {"inputs": kept.inputs, "targets": kept.target}

    signature = {"inputs": tf.TensorSpec((), tf.string), "targets": tf.TensorSpec((), tf.string)}
    return tf.data.Dataset.from_generator(examples, output_signature=signature)


def register(configs) -> None:
    """Register `xp3style_<task>` (`<task>`: p3data's name) for every template of these
    configs' prompt folder."""
    for config in configs:
        folder = prompt_folder(DATASET, config, english_prompts=True)
        for name in sorted(fork_templates(folder)):
            add_stock_task(f"{PREFIX}xp3_{task_name(DATASET, config, name)}",
                           functools.partial(dataset_fn, config=config, folder=folder,
                                             template_name=name), FEATURES)


register([*SPACED, *UNSPACED])
