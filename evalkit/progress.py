"""Progress display for long loops: a tqdm bar on a terminal, plain lines in a log.

tqdm redraws its bar with carriage returns, which a log file (CI, ``nohup``, ``2>
run.log``) keeps as hundreds of ``\\r`` updates on one line, and a notebook shows as
plain lines. When the stream is not a terminal, :func:`progress` returns a
:class:`LineProgress` instead, which prints **one line, at the end** (``bm25: 120/120 q
(100%), 31 s``): a run of 20 variants in a notebook or a log prints 20 lines, not 220.
``periodic=True`` (the corpus encoding, a single long loop) adds one line when the loop
starts, one each time another :data:`EVERY_PERCENT` percent is done or
:data:`EVERY_SECONDS` seconds have passed (whichever comes first).

    bar = progress(len(records), "bm25", unit="q")
    for r in records:
        ...
        bar.update(1)
    bar.close()
"""
from __future__ import annotations

import sys
import time
from typing import Any, TextIO

EVERY_PERCENT = 10
EVERY_SECONDS = 30.0


def _is_terminal(stream: TextIO) -> bool:
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty())
    except ValueError:  # a closed stream
        return False


class LineProgress:
    """tqdm's ``update`` / ``close`` interface, printing whole lines (for logs and notebooks).

    ``periodic``: a line at the start, every ``every_percent`` / ``every_seconds`` and (with
    ``first_update``) after the first update; without it, only the closing line."""

    def __init__(self, total: int, desc: str, unit: str = "it", stream: TextIO | None = None,
                 every_percent: float = EVERY_PERCENT, every_seconds: float = EVERY_SECONDS,
                 clock: Any = time.monotonic, first_update: bool = False, periodic: bool = True):
        self.total, self.desc, self.unit = total, desc, unit
        self._first_update = first_update  # a line after the first update too: an ETA from the first batch
        self.stream = stream if stream is not None else sys.stderr
        self.every_percent, self.every_seconds, self._clock = every_percent, every_seconds, clock
        self.n = 0
        self._start = self._last_time = clock()
        self._last_percent = 0.0
        self._closed = False
        self.periodic = periodic
        if periodic:
            self._write(f"{desc}: 0/{total} {unit}")

    def _write(self, line: str) -> None:
        self.stream.write(line + "\n")
        self.stream.flush()

    def _line(self) -> str:
        elapsed = self._clock() - self._start
        pct = 100.0 * self.n / self.total if self.total else 100.0
        text = f"{self.desc}: {self.n}/{self.total} {self.unit} ({pct:.0f}%), {elapsed:.0f} s"
        if 0 < self.n < self.total:
            text += f", about {elapsed / self.n * (self.total - self.n):.0f} s left"
        return text

    def update(self, n: int = 1) -> None:
        self.n += n
        now = self._clock()
        pct = 100.0 * self.n / self.total if self.total else 100.0
        if self.n >= self.total or not self.periodic:
            return  # the final line comes from close()
        first, self._first_update = self._first_update, False
        if first or pct - self._last_percent >= self.every_percent or now - self._last_time >= self.every_seconds:
            self._last_percent, self._last_time = pct, now
            self._write(self._line())

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._write(self._line())


def progress(total: int, desc: str, unit: str = "it", stream: TextIO | None = None, leave: bool = True,
             first_update: bool = False, periodic: bool = False) -> Any:
    """A tqdm bar when ``stream`` (default stderr) is a terminal, else a :class:`LineProgress`: one line at the
    end, or with ``periodic`` lines along the way (``first_update``: also after the first update, for loops
    of slow batches)."""
    stream = stream if stream is not None else sys.stderr
    if not _is_terminal(stream):
        return LineProgress(total, desc, unit, stream, first_update=first_update, periodic=periodic)
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit=unit, file=stream, leave=leave)
