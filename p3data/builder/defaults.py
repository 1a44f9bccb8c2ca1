"""The cache builder's defaults that `p3data cache` shows in its help, kept apart from the
builder so the command line can show them without importing it."""

# Real data renders without errors under T0's templates (T0's own pipeline stopped at the first
# one), so more than 1 failing row in 100 means a template or the data is wrong.
DEFAULT_MAX_ERROR_RATE = 0.01
