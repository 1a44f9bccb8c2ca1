"""p3data: promptsource templates compiled into T0's seqio tasks, mixtures and caches."""

__version__ = "0.1.0"
