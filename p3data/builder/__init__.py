"""The cache builder's stages, free of Beam: each a plain function over work units.

`plan` (which source shards to process, what is done) -> `shard_work` (stage 1: render all
templates of a dataset over one source shard, tokenize in batches, write one part per task) ->
`finalize` (stage 2: parts -> output shards, info/stats JSON, manifest, COMPLETED last);
`lock`, `progress` and `summary` serve the driver; `verify` checks a built cache. The Beam
graph and the driver that run the stages live in `pipelines/cache.py` (`p3data.pipelines`).
"""
