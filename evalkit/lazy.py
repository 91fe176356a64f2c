"""Lazy exports: the names a package offers, each loading its module on first use (PEP 562).

What it is for: ``import evalkit`` (or ``evalkit.graph``, ``evalkit.llm``, ``evalkit.track``) must not
import the engine, the LLM client or MLflow behind them: ``evalkit score --run`` never uses them, and
their imports were most of its start-up. A package lists ``{name: module}``, imports the names under
``TYPE_CHECKING`` for type checkers, and takes its module ``__getattr__`` and ``__dir__`` from
:func:`lazy_exports`.
"""
from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(package: str, exports: Mapping[str, str],
                 namespace: Mapping[str, Any]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package`` (its module ``namespace``, ``globals()``) that load each
    name of ``exports`` (``{name: module}``) from its module when it is first read."""

    def __getattr__(name: str) -> Any:
        if name in exports:
            return getattr(importlib.import_module(exports[name]), name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(exports))

    return __getattr__, __dir__
