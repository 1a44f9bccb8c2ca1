"""The cache's on-disk contract, in one place, with no TensorFlow and no Beam.

layout    file names and JSON of a task folder, exactly as seqio writes them (and P3's layout)
features  the one table of T0's features: seqio, `info.<split>.json`, TF and `show` derive from it
example   `tf.train.Example` bytes, encoded and decoded
tfrecord  TFRecord framing, written and read with its checksums
index     each output shard's record offsets, for random access (no seqio pattern matches it)
manifest  p3data's typed, versioned `manifest.json` beside seqio's files
work      the work folder a build keeps while it runs (parts, markers, summaries, statuses)
"""
