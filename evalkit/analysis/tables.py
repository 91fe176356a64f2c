"""Fixed-width text tables for the terminal output of the analysis commands."""
from __future__ import annotations

import math
from collections.abc import Sequence


def text_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """Header, rule and rows; the first column left-aligned, the others right-aligned."""
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

    return [line(header), line(["-" * w for w in widths]), *[line(r) for r in rows]]


def is_nan(x: float | None) -> bool:
    """True for ``None`` and NaN."""
    return x is None or (isinstance(x, float) and math.isnan(x))
