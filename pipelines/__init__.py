"""Beam entry points, installed as `p3data.pipelines` so every Beam worker can import them."""

__all__: list[str] = []  # a package of modules, one job each: import the one you need
