"""`report`: a built cache as one self-contained HTML page, with a Markdown twin.

Nobody reads 313 manifests; the report shows their counts next to what decides training: how
long the examples are, what a length limit cuts, which datasets dominate a mixture. In data-flow
order: `collect` reads the cache (local, gs://, any fsspec path), `content` makes the tables
both pages show, `plots` draws inline SVG, `html` and `markdown` write the pages.
"""

__all__: list[str] = []  # `p3data report`'s modules, one job each: import the one you need
