"""Building seqio caches: files in seqio's exact format, written shard by shard, resumable.

The data flow: `units` (which source shards to process) -> `shard_work` (render all templates
of a dataset over one source shard, tokenize in batches, write one part file per task) ->
`finalize` (parts -> output shards, info/stats JSON, manifest, COMPLETED last).
The Beam graph that runs these steps lives in `pipelines/cache.py`.
"""
