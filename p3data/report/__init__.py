"""`report`: a built cache as one self-contained HTML page, with a Markdown twin.

Nobody reads 313 manifests; the report shows their counts next to what decides training: how
long the examples are, what a length limit cuts, which datasets dominate a mixture. In data-flow
order: `collect` reads the cache (local, gs://, any fsspec path), `content` makes the tables
both pages show, `plots` draws inline SVG, `html` and `markdown` write the pages.
"""

from p3data.report.collect import CacheReport, collect
from p3data.report.html import render_html
from p3data.report.markdown import render_markdown

__all__ = ["CacheReport", "collect", "render_html", "render_markdown"]
