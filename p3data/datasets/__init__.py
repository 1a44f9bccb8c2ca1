"""The rows side: which datasets T0 used and how their rows look (`catalog`, `schema`), where
rows come from (`stores`: a mirror on any filesystem, manual files, or the Hub's pinned parquet
files through `hub`), reading row files (`rows`, `parquet`: by row groups), checking what was
found against the catalog (`drift`), and the bundled sample rows (`samples`)."""

__all__: list[str] = []  # a package of modules, one job each: import the one you need
