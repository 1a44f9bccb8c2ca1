"""A p3data build beside P3, the data T0 was trained on as BigScience published it.

cached   the complete tasks of a cache, read through their manifests, and their examples
counts   P3's published example count per task split (package data), against a cache's
compare  a cache against a downloaded copy of P3, example by example
"""

__all__: list[str] = []  # a package of modules, one job each: import the one you need
