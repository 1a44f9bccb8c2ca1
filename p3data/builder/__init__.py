"""The cache builder, free of Beam: its stages, each a plain function over work units, and the
driver that runs them.

`planning` (which source shards to process, what is done) -> `pool_work` (few-shot variants'
exemplar pools) -> `shard_work` (stage 1: render all templates of a dataset over one source
shard, tokenize in batches, write one part per task; variants' prompts in `fewshot_work`) ->
`assembly` (stage 2: parts -> output shards, info/stats JSON, split summaries) -> `completion`
(manifest, COMPLETED last; before a rebuild, `withdraw`). Beneath them: the run's types
(`jobs`), its work folder (`work_folder`), fingerprints and exemplar pools' places (`pools`).
`driver` runs a build (lock, plan, withdraw, run the graph, collect verdicts); `folder` and
`summary` serve it. The Beam graph that runs the stages is
`p3data.pipelines.cache`; a built cache is checked by `p3data.format.verify`.
"""

__all__: list[str] = []  # a package of modules, one job each: import the one you need
