"""The cache builder's defaults that `p3data cache` shows in its help, kept apart from the
builder so the command line can show them without importing it."""

# Real data renders without errors under T0's templates (T0's own pipeline stopped at the first
# one), so more than 1 failing row in 100 means a template or the data is wrong.
DEFAULT_MAX_ERROR_RATE = 0.01

# How a capped task (xP3's) chooses the examples it keeps (`builder.selection`): xP3's own rule
# by default, since mT0 was trained on what it kept (docs/xp3.md).
SELECTIONS = ("xp3", "uniform")
DEFAULT_SELECTION = "xp3"
