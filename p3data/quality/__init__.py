"""Checks to run before training: template lint, render-time validation, plans, overlap.

Each job is one module (`lint`, `validate`, `projection` for `p3data plan`, `overlap`);
`common` holds what they share. Nothing here imports seqio or TensorFlow: tokens are
counted with SentencePiece directly, so every check starts in well under a second.
"""

__all__: list[str] = []  # a package of modules, one job each: import the one you need
