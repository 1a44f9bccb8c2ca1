"""Few-shot variants of every T0 task: leak-proof exemplars, prompts fitted to the length.

The pure core, free of the cache builder, the commands and seqio; it stands on the
foundation, the templates, the datasets and T0's definitions. Bottom up:
- `settings`: shot counts, separators, input length, rate split, seed, validated;
- `variants`: variant tasks (`T_<k>shot`) and mixtures (`<M>_fewshot`,
  `t0_eval_score_eval_<k>shot`, and any defined through `define_variant_mixture`);
- `draws`: per-query random streams keyed by (seed, task, split, row);
- `pool`: a template's exemplars over the pool split, rendered and measured once;
- `select`: which exemplars a query is shown;
- `fitting`: where an over-long query's cut falls, found in token space;
- `shorten`: an over-long query's passage cut at a word boundary, the rest kept;
- `example`: the prompt and the example's fields (`num_shots`, `exemplar_rows`);
- `stats`: per task, shot histogram, fitted rows, tokens cut;
- `prompter`: a task split's examples, all shot counts at once, batch by batch;
- `definitions`: every T0 task's variants and their mixtures, as a collection of the task set.
"""

from p3data.fewshot.draws import Draws, draw_key
from p3data.fewshot.example import ChoiceExample, FewshotExample, assemble, per_choice
from p3data.fewshot.pool import (
    ExemplarPool,
    PoolBuilder,
    PoolSource,
    build_pool,
    input_key,
    is_usable,
    pool_source,
)
from p3data.fewshot.prompter import FewshotPrompter
from p3data.fewshot.select import NO_ROOM, SHORT_POOL, Selection, select_exemplars
from p3data.fewshot.settings import DEFAULT_SHOTS, FewshotSettings, default_ratio
from p3data.fewshot.shorten import FittedQuery, QueryShortener, cut_text, passage_fields
from p3data.fewshot.stats import FewshotStats
from p3data.fewshot.variants import (
    VariantMixture,
    VariantSpec,
    all_variants,
    default_variant_mixtures,
    define_variant_mixture,
    eval_mixture_name,
    fewshot_mixture_name,
    variant_name,
)

__all__ = [
    "DEFAULT_SHOTS",
    "NO_ROOM",
    "SHORT_POOL",
    "ChoiceExample",
    "Draws",
    "ExemplarPool",
    "FewshotExample",
    "FewshotPrompter",
    "FewshotSettings",
    "FewshotStats",
    "FittedQuery",
    "PoolBuilder",
    "PoolSource",
    "QueryShortener",
    "Selection",
    "VariantMixture",
    "VariantSpec",
    "all_variants",
    "assemble",
    "build_pool",
    "cut_text",
    "default_ratio",
    "default_variant_mixtures",
    "define_variant_mixture",
    "draw_key",
    "eval_mixture_name",
    "fewshot_mixture_name",
    "input_key",
    "is_usable",
    "passage_fields",
    "per_choice",
    "pool_source",
    "select_exemplars",
    "variant_name",
]
