"""One module per ``evalkit`` command (loaded lazily by ``evalkit.cli``), and what they share."""
from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import click

from evalkit.errors import EvalkitError


def user_errors(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Turn an ``EvalkitError`` (bad input file, existing output...) into one line and exit code 1.

    An error class with an ``exit_code`` keeps it (2 for an output or eval set another process holds).
    """
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except EvalkitError as exc:
            error = click.ClickException(str(exc))
            # e.g. 2 for an output or eval set another process holds. click annotates exit_code as a ClassVar,
            # yet main() reads it from the raised instance, so a per-instance code is what click honours
            error.exit_code = getattr(exc, "exit_code", 1)  # type: ignore[misc]
            raise error from exc
    return wrapper
