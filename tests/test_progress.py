"""Progress in logs: whole lines every 10% or 30 s, never carriage returns; a tqdm bar on a terminal."""
from __future__ import annotations

import io

from evalkit.progress import LineProgress, progress


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def test_lines_every_ten_percent_and_at_the_end():
    out, clock = io.StringIO(), Clock()
    bar = LineProgress(120, "bm25", "q", out, clock=clock)
    for _ in range(120):
        clock.t += 0.1
        bar.update(1)
    bar.close()
    bar.close()                                               # idempotent
    lines = out.getvalue().splitlines()
    assert "\r" not in out.getvalue()
    assert lines[0] == "bm25: 0/120 q" and lines[-1] == "bm25: 120/120 q (100%), 12 s"
    assert len(lines) == 1 + 9 + 1                              # start, 12, 24, ... 108 (10% steps), end
    assert lines[1].startswith("bm25: 12/120 q (10%), 1 s, about 11 s left")


def test_a_slow_loop_reports_every_thirty_seconds():
    out, clock = io.StringIO(), Clock()
    bar = LineProgress(1000, "slow", "q", out, clock=clock)
    for _ in range(4):                                          # 4 queries of 20 s: 0.4% done, but time passes
        clock.t += 20
        bar.update(1)
    assert out.getvalue().splitlines()[1:] == ["slow: 2/1000 q (0%), 40 s, about 19960 s left",
                                               "slow: 4/1000 q (0%), 80 s, about 19920 s left"]


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_tqdm_on_a_terminal_lines_elsewhere():
    assert isinstance(progress(10, "x", stream=io.StringIO()), LineProgress)
    bar = progress(10, "x", stream=Tty())
    assert type(bar).__name__ == "tqdm"
    bar.close()


def test_off_a_terminal_each_variant_prints_one_line():
    """A notebook or a log (not a TTY): a variant's loop of 120 queries prints its closing line and nothing else,
    so 3 variants print 3 lines (before: 11 each)."""
    import re

    out = io.StringIO()
    for name in ("bm25", "vector", "hybrid_rrf"):
        bar = progress(120, name, unit="q", stream=out)
        for _ in range(120):
            bar.update(1)
        bar.close()
        bar.close()                                           # idempotent
    lines = out.getvalue().splitlines()
    assert len(lines) == 3 and "\r" not in out.getvalue()
    for name, line in zip(("bm25", "vector", "hybrid_rrf"), lines):
        assert re.fullmatch(rf"{name}: 120/120 q \(100%\), \d+ s", line), line


def test_an_interrupted_variant_still_prints_one_line_with_how_far_it_got():
    out = io.StringIO()
    bar = progress(120, "bm25", unit="q", stream=out)
    for _ in range(30):
        bar.update(1)
    assert out.getvalue() == ""                               # nothing until the loop ends
    bar.close()                                               # the runner closes it in a finally
    assert out.getvalue().splitlines() == [out.getvalue().splitlines()[0]]
    assert out.getvalue().startswith("bm25: 30/120 q (25%), ")
