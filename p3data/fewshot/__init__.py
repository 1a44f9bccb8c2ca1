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

# What users may use (docs/fewshot.md): settings, defining variant mixtures, and what a variant
# task and mixture are. The rest is imported from its module.
from p3data.fewshot.settings import FewshotSettings
from p3data.fewshot.variants import VariantMixture, VariantSpec, define_variant_mixture

__all__ = ["FewshotSettings", "VariantMixture", "VariantSpec", "define_variant_mixture"]
