"""The progress bar of `p3data export` and `fetch`: the work an item does not do leaves the
total, the bar names the item in hand, notes go above it. The line of `compare` and `index`:
at most one every so often, saying what is done, its rate and the caller's status. The line of
`cache`: the rows of the units whose markers are written."""

from __future__ import annotations

import io
import sys

from p3data import fs
from p3data.builder.work_folder import WorkDir
from p3data.progress import MarkerProgress, ProgressBar, ProgressLine, duration


class Terminal(io.StringIO):
    def isatty(self) -> bool:  # tqdm draws only on a terminal
        return True


def test_work_an_item_does_not_do_leaves_the_total(monkeypatch):
    monkeypatch.setattr(sys, "stderr", Terminal())
    with ProgressBar({"a": 10, "b": 5, "c": 0}, unit="rows", label="p3data fetch") as progress:
        assert progress.bar.total == 15 and progress.bar.desc.startswith("a")
        progress.advance(4, 2048)
        progress.finish("a")  # 6 rows of a were not written after all
        assert progress.bar.total == 9 and progress.bar.desc.startswith("b")
        progress.advance(5)
        progress.finish("b")
        progress.finish("c")
        assert progress.bar.n == progress.bar.total == 9
        progress.note("accepted drift")
    drawn = sys.stderr.getvalue()
    assert "[p3data fetch] accepted drift\n" in drawn and "2.00kB written" in drawn


def test_duration():
    assert [duration(s) for s in (0, 61.9, 3600, 7325)] == ["0m00s", "1m01s", "1h00m", "2h02m"]


def test_a_progress_line_at_most_every_so_often():
    stream = io.StringIO()
    quiet = ProgressLine("p3data compare", unit="examples", every=3600, stream=stream)
    for _ in range(1000):
        quiet.update()
    assert quiet.done == 1000 and stream.getvalue() == ""  # none due within the hour
    every = ProgressLine("p3data index", unit="shards", every=0, stream=stream, status="start")
    every.update(2)
    every.update(0, status="task t")
    lines = stream.getvalue().splitlines()
    assert len(lines) == 2 and lines[0].startswith("[p3data index] 2 shards · ")
    assert lines[0].endswith(" · start · elapsed 0m00s")
    assert lines[1].endswith(" · task t · elapsed 0m00s")


def test_the_cache_line_counts_units_of_datasets_named_with_a_slash(tmp_path):
    """A unit's marker is named after its dataset: `GEM/xlsum`'s lie in a folder of their own
    (xP3's datasets are mostly `<org>/<name>`), and count as `glue`'s do."""
    work = WorkDir(str(tmp_path))
    names = ["glue/mrpc/train/00000", "GEM/xlsum/swahili/train/00000",
             "facebook/flores/x/dev/00001"]
    todo = {work.unit_marker(name): rows for name, rows in zip(names, (3, 5, 7), strict=True)}
    stream = io.StringIO()
    with MarkerProgress(unit_markers=work.unit_markers, todo=todo, splits=3, interval=3600,
                        assembled_markers=work.assembled_markers, stream=stream) as progress:
        for marker in list(todo)[:2]:
            fs.write_bytes(marker, b"{}")
        assert progress.rows_done() == 8
        fs.write_bytes(list(todo)[2], b"{}")
        assert progress.rows_done() == 15
    assert stream.getvalue().startswith(
        "[p3data cache] rows 15/15 done · task splits assembled 0/3")
