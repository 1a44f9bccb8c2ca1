"""JAX / grain: a cached task split is a grain random-access data source as it is.

    pip install 'p3data[grain]'
    python examples/grain_t0.py [CACHE]          # default: demo_output/t0_train (make demo)
"""

import sys

import grain

from p3data.read import open_cache

cache = open_cache(sys.argv[1] if len(sys.argv) > 1 else "demo_output/t0_train")
split = cache.split("cos_e_v1.11_description_question_option_id", "validation")
dataset = (grain.MapDataset.source(split)
           .shuffle(seed=0)
           .map(lambda example: {"inputs": example["inputs"], "targets": example["targets"]}))
print(len(dataset), "examples;", {name: ids.shape for name, ids in dataset[0].items()})
