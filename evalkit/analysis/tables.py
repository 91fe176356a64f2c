"""Console tables: data first, rendered by ``rich``, fitted to the width, columns chosen by name.

Every table the analysis commands print (``run`` / ``demo`` summary, ``compare``,
``gate``, ``calibrate``) is built as a :class:`TableData` (a title, named columns,
string cells) and rendered here, so they all behave the same way:

* a column whose cells are empty (``""`` or ``"-"``) in every row is not shown;
* ``--columns a,b`` (:attr:`Layout.columns`) keeps the row-label columns and the named
  ones (by key, e.g. ``hit@5``, or by printed header); tables with none of them are left out;
* without ``--wide`` the table fits :attr:`Layout.width`: columns are dropped from the
  right (each table lists its columns most important first) until it fits, and a note
  under the table names what was left out and how to see it;
* the width is the terminal's when stdout is a terminal, :data:`DEFAULT_WIDTH` (120)
  otherwise (logs, pipes, CI): :func:`output_width`.

The same :class:`TableData` also renders as Markdown (:func:`markdown`), for reports.
"""
from __future__ import annotations

import io
import math
import shutil
import sys
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TextIO

from rich import box
from rich.console import Console
from rich.measure import Measurement
from rich.table import Table

from evalkit.errors import EvalkitError, did_you_mean

DEFAULT_WIDTH = 120
"""Width of every table when stdout is not a terminal."""
EMPTY_CELLS = frozenset({"", "-"})
WIDE = 100_000  # the console width --wide renders at: wide enough that rich never squeezes a column


class ColumnsError(EvalkitError):
    """``--columns`` names a column no table has (the message lists the choices)."""


@dataclass(frozen=True)
class Column:
    """One column: ``key`` is what ``--columns`` names, ``header`` what is printed."""

    key: str
    header: str = ""
    numeric: bool = True  # right-aligned

    @property
    def label(self) -> str:
        return self.header or self.key


@dataclass
class TableData:
    """A table before rendering. The first ``keep`` columns label the rows and are always shown, and so
    are the ``pinned`` ones (by key, e.g. a verdict at the right end): fitting drops other columns."""

    title: str
    columns: list[Column]
    rows: list[list[str]]
    notes: list[str] = field(default_factory=list)
    keep: int = 1
    pinned: tuple[str, ...] = ()

    def always_shown(self, i: int) -> bool:
        """Column ``i`` is a row label or pinned: never hidden by fitting or ``--columns``."""
        return i < self.keep or self.columns[i].key in self.pinned

    def column(self, i: int) -> list[str]:
        return [r[i] for r in self.rows]


@dataclass(frozen=True)
class Layout:
    """How tables are laid out: target width, ``--wide`` (no fitting) and ``--columns`` (a choice)."""

    width: int = DEFAULT_WIDTH
    wide: bool = False
    columns: tuple[str, ...] = ()


def output_width(stream: TextIO | None = None) -> int:
    """The terminal's width when ``stream`` (stdout) is a terminal, else :data:`DEFAULT_WIDTH`."""
    stream = stream or sys.stdout
    isatty = getattr(stream, "isatty", None)
    if isatty is not None and isatty():
        return shutil.get_terminal_size((DEFAULT_WIDTH, 24)).columns
    return DEFAULT_WIDTH


def parse_columns(spec: str | Sequence[str] | None) -> tuple[str, ...]:
    """``"hit@5, ndcg@10"`` (or repeated values) -> ``("hit@5", "ndcg@10")``."""
    if not spec:
        return ()
    items = [spec] if isinstance(spec, str) else list(spec)
    return tuple(dict.fromkeys(s.strip() for item in items for s in item.split(",") if s.strip()))


def check_columns(tables: Sequence[TableData], names: Sequence[str]) -> None:
    """Refuse a ``--columns`` name that no table has, with a did-you-mean over keys and headers."""
    known = {n for t in tables for c in t.columns for n in (c.key, c.label)}
    for name in names:
        if name not in known:
            raise ColumnsError(f"no column '{name}'{did_you_mean(name, sorted(known))} "
                               f"(columns: {', '.join(_choices(tables))})")


def _choices(tables: Sequence[TableData]) -> list[str]:
    return list(dict.fromkeys(c.key for t in tables for c in t.columns[t.keep:]))


def _without_empty(t: TableData) -> TableData:
    keep = [i for i, c in enumerate(t.columns)
            if i < t.keep or not t.rows or any(cell not in EMPTY_CELLS for cell in t.column(i))]
    return _take(t, keep)


def _take(t: TableData, idx: Sequence[int]) -> TableData:
    return replace(t, columns=[t.columns[i] for i in idx], rows=[[r[i] for i in idx] for r in t.rows])


def _chosen(t: TableData, names: Sequence[str]) -> TableData | None:
    wanted = set(names)
    idx = [i for i, c in enumerate(t.columns) if t.always_shown(i) or c.key in wanted or c.label in wanted]
    return _take(t, idx) if any(not t.always_shown(i) for i in idx) else None


def _rich_table(t: TableData):
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, highlight=False)
    for c in t.columns:
        table.add_column(c.label, justify="right" if c.numeric else "left", no_wrap=c.numeric,
                         overflow="fold")
    for r in t.rows:
        table.add_row(*r)
    return table


def _console(width: int):
    return Console(file=io.StringIO(), width=width, color_system=None, highlight=False, emoji=False,
                   markup=False, soft_wrap=False, legacy_windows=False, force_terminal=False)


def natural_width(t: TableData) -> int:
    """Characters the table needs with no column squeezed (as rich measures it; CJK counts double)."""
    console = _console(WIDE)
    return Measurement.get(console, console.options, _rich_table(t)).maximum


def fit(t: TableData, width: int) -> tuple[TableData, list[str]]:
    """Drop columns from the right (never the row labels or pinned ones) until ``t`` fits ``width``, keeping at
    least one other column; the dropped keys."""
    dropped: list[str] = []
    while natural_width(t) > width:
        droppable = [i for i in range(len(t.columns)) if not t.always_shown(i)]
        if len(droppable) < (2 if not t.pinned else 1):
            break
        dropped.insert(0, t.columns[droppable[-1]].key)
        t = _take(t, [i for i in range(len(t.columns)) if i != droppable[-1]])
    return t, dropped


def arrange(tables: Sequence[TableData], layout: Layout) -> list[TableData]:
    """The tables as they will print: empty columns gone, ``--columns`` applied, fitted unless wide."""
    if layout.columns:
        check_columns(tables, layout.columns)
    out = []
    for t in tables:
        t = _without_empty(t)
        if layout.columns:
            chosen = _chosen(t, layout.columns)
            if chosen is None:
                continue
            t = chosen
        if not layout.wide:
            t, dropped = fit(t, layout.width)
            if dropped:
                t = replace(t, notes=[*t.notes, (f"not shown to fit {layout.width} columns: {', '.join(dropped)} "
                                                "(--wide shows every column, --columns NAME,... chooses)")])
        blank = [r for r in t.rows if all(c in EMPTY_CELLS for c in r[t.keep:])]
        if blank and len(t.columns) > t.keep:
            t = replace(t, rows=[r for r in t.rows if r not in blank],
                        notes=[*t.notes, f"no value in the columns shown: {', '.join(r[0] for r in blank)}"])
        out.append(t)
    return out


def render(tables: Sequence[TableData], layout: Layout | None = None) -> str:
    """Plain text of ``tables`` (see :func:`arrange`), a blank line between tables; no colour codes."""
    layout = layout or Layout()
    blocks = []
    for t in arrange(tables, layout):
        console = _console(WIDE if layout.wide else layout.width)
        if t.rows:
            console.print(_rich_table(t))
        body = [line.rstrip() for line in console.file.getvalue().splitlines()]
        notes = [wrap(n, WIDE if layout.wide else layout.width) for n in t.notes]
        blocks.append("\n".join(x for x in [t.title, *body, *notes] if x))
    return "\n\n".join(blocks)


def wrap(text: str, width: int = DEFAULT_WIDTH, indent: str = "  ") -> str:
    """A long line of prose or ids, wrapped to ``width`` with continuation lines indented."""
    return "\n".join(textwrap.wrap(text, width, subsequent_indent=indent, break_on_hyphens=False,
                                   break_long_words=False)) or text


def wrap_lines(text: str, width: int = DEFAULT_WIDTH) -> str:
    """Every line of ``text`` wrapped to ``width``, continuation lines indented past the line's own indent."""
    out = []
    for line in text.splitlines():
        indent = " " * (len(line) - len(line.lstrip(" ")) + 4)
        out.append(wrap(line, width, indent) if len(line) > width else line)
    return "\n".join(out)


def markdown(tables: Sequence[TableData], layout: Layout | None = None) -> str:
    """The same tables as Markdown (empty columns hidden, ``--columns`` applied, never fitted)."""
    layout = replace(layout or Layout(), wide=True)

    def esc(cell: str) -> str:
        return str(cell).replace("|", "\\|").replace("\n", " ")

    out: list[str] = []
    for t in arrange(tables, layout):
        out += [f"**{t.title}**", "", "| " + " | ".join(esc(c.label) for c in t.columns) + " |",
                "|" + "".join("---:|" if c.numeric else "---|" for c in t.columns)]
        out += ["| " + " | ".join(esc(c) for c in r) + " |" for r in t.rows]
        out += ["", *t.notes, ""] if t.notes else [""]
    return "\n".join(out).rstrip() + "\n"


def is_nan(x: float | None) -> bool:
    """True for ``None`` and NaN."""
    return x is None or (isinstance(x, float) and math.isnan(x))
