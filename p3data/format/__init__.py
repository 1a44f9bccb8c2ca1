"""The cache's on-disk contract, in one place, with no TensorFlow and no Beam.

tfrecord          TFRecord framing, written and read with its checksums
index             each TFRecord shard's record offsets, for random access (no seqio pattern sees it)
tfrecord_shards   TFRecord shards as a `ShardFormat`: framing, and random access through the index
arrayrecord_shards ArrayRecord shards as a `ShardFormat`, through array_record's writer and reader
shard_format      the shard file format's interface, the formats by name, seqio's shard names
layout            file names and JSON of a task folder, exactly as seqio writes them (and P3's)
features          the one table of T0's features: seqio, `info.<split>.json`, TF, `show` use it
example           `tf.train.Example` bytes, encoded as protobuf's deterministic serialization
example_decoding  `tf.train.Example` bytes decoded: flat lists, or typed batches for readers
manifest          p3data's typed, versioned `manifest.json` beside seqio's files
cache_folder      a cache folder, read: its task folders, their task names, splits and shards
verify            a whole cache checked strictly against its manifests (`p3data verify`)
"""

__all__: list[str] = []  # a package of modules, one job each: import the one you need
