"""Long-text reference tasks for `long_text.py`, defined as `t0_style_tasks` defines them.

Importing `t0_style_tasks` registers its short-text tasks too; the benchmark selects by name.
"""

from __future__ import annotations

from t0_style_tasks import register

DATASETS = [("imdb", None), ("cnn_dailymail", "3.0.0")]

register(DATASETS)
