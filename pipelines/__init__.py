"""Beam entry points, installed as `p3data.pipelines` so every Beam worker can import them."""
