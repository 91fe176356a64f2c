"""Options shared by the commands that print tables: ``--wide`` and ``--columns``."""
from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import click

from evalkit.analysis.tables import DEFAULT_WIDTH, Layout, output_width, parse_columns


def table_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """Add ``--wide`` and ``--columns`` (passed to the command as ``wide`` and ``columns``)."""
    f = click.option("--columns", "columns", default=None, metavar="NAME,...",
                     help="Show only these table columns (metric names such as hit@5,faithfulness, or printed "
                          "headers), beside the row labels.")(f)
    return click.option("--wide", is_flag=True,
                        help=f"Print every column, however wide (default: fit the terminal, or {DEFAULT_WIDTH} "
                             "characters when stdout is not a terminal).")(f)


def layout(wide: bool, columns: str | None) -> Layout:
    """The :class:`Layout` of the tables: the terminal's width, ``--wide``, ``--columns``."""
    return Layout(width=output_width(sys.stdout), wide=wide, columns=parse_columns(columns))


def render_checked(render: Callable[[Layout], str], lay: Layout) -> str:
    """``render(lay)``; an unknown ``--columns`` name is a usage error (exit 2) naming the choices."""
    from evalkit.analysis.tables import ColumnsError

    try:
        return render(lay)
    except ColumnsError as exc:
        raise click.BadParameter(str(exc), param_hint="--columns") from exc
