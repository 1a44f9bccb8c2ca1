"""Reading caches without TensorFlow or seqio: `open_cache(root)` lists a cache's complete tasks
and their splits; a `TaskSplit` yields its examples as numpy arrays and strings, in order or by
number."""

from p3data.format.example_decoding import FeatureInfo
from p3data.read.mixture import MissingTasksError, MixtureSampler, mixture_sampler
from p3data.read.packing import PackedStream, pack
from p3data.read.reader import CacheReader, TaskSplit, open_cache

__all__ = ["CacheReader", "FeatureInfo", "TaskSplit", "open_cache",
           "MissingTasksError", "MixtureSampler", "mixture_sampler", "pack", "PackedStream"]
