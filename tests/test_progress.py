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
