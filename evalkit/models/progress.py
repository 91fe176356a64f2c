"""Progress of long encodings, with an ETA from the first batch on.

On a terminal this is a tqdm bar (its ETA appears after the first update). Anywhere
else (a log file, CI, ``nohup``) a bar's carriage returns are noise, so it prints plain
lines instead: one after the first batch (rate and ETA), then at most every
``LINE_EVERY_S`` seconds, and one at the end. Everything goes to stderr.
"""
from __future__ import annotations

import sys
import time
from typing import Any, TextIO

LINE_EVERY_S = 30.0


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}h{m:02d}m{s:02d}s" if h else f"{m}m{s:02d}s" if m else f"{s}s"


class LineProgress:
    """``update(n)`` / ``close()`` like a tqdm bar, printing whole lines with rate and ETA."""

    def __init__(self, total: int, desc: str, stream: TextIO | None = None, every_s: float = LINE_EVERY_S):
        self.total, self.desc, self.every_s = total, desc, every_s
        self.stream = stream if stream is not None else sys.stderr
        self.done, self.t0, self.last = 0, time.perf_counter(), None

    def line(self) -> str:
        elapsed = max(time.perf_counter() - self.t0, 1e-9)
        rate = self.done / elapsed
        eta = (self.total - self.done) / rate if rate > 0 else float("inf")
        left = "done" if self.done >= self.total else f"ETA {_duration(eta)}"
        return (f"{self.desc}: {self.done:,}/{self.total:,} ({100 * self.done / self.total:.0f}%), "
                f"{rate:.1f}/s, {_duration(elapsed)} elapsed, {left}")

    def update(self, n: int) -> None:
        self.done += n
        now = time.perf_counter()
        if self.last is None or now - self.last >= self.every_s or self.done >= self.total:
            self.last = now
            print(self.line(), file=self.stream, flush=True)

    def close(self) -> None:
        if self.last is None or self.done < self.total:
            print(self.line(), file=self.stream, flush=True)


def progress(total: int, desc: str, stream: TextIO | None = None) -> Any:
    """A tqdm bar on a terminal, else a ``LineProgress``."""
    stream = stream if stream is not None else sys.stderr
    if getattr(stream, "isatty", lambda: False)():
        from tqdm import tqdm

        return tqdm(total=total, desc=desc, unit="text", file=stream, leave=False)
    return LineProgress(total, desc, stream)
