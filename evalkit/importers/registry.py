"""The registry of importers: each format evalkit can turn into a corpus plus a frozen eval set.

An importer registers its import function with :func:`register_importer`, under its name
(the verb of ``evalkit import <name>``), with a one-line summary and, for a CLI verb, the
click command that wraps it, named as ``"module:attribute"`` so that nothing of the CLI is
imported until the verb is used:

    @register_importer("myformat", summary="my in-house QA dump", command="my_pkg.cli:myformat")
    def import_myformat(source, name, out_dir, **options): ...

``evalkit import`` lists the registered verbs (:class:`evalkit.commands.importers`); plugin
modules named in ``EVALKIT_PLUGINS`` (:mod:`evalkit.plugins`) add their own the same way.
"""
from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from evalkit.errors import UnknownNameError, did_you_mean
from evalkit.plugins import load_plugins

BUILTIN_MODULES = ("evalkit.importers.beir", "evalkit.importers.dataset", "evalkit.importers.hotpotqa")

_F = TypeVar("_F", bound=Callable[..., Any])


@dataclass(frozen=True)
class ImporterInfo:
    """One registered importer: its function, what it reads (one line), and its CLI verb's command."""

    name: str
    function: Callable[..., Any]
    summary: str
    command: str | None = None  # "module:attribute" of the click command, or None (library only)

    def load_command(self) -> Any:
        """The click command of ``evalkit import <name>`` (imported now), or None."""
        if self.command is None:
            return None
        module, _, attr = self.command.partition(":")
        return getattr(importlib.import_module(module), attr)


IMPORTERS: dict[str, ImporterInfo] = {}
"""Importers by name (the ``evalkit import`` verb)."""


def register_importer(name: str, *, summary: str, command: str | None = None) -> Callable[[_F], _F]:
    """Decorator: register an import function as importer ``name`` (once)."""
    def add(function: _F) -> _F:
        if name in IMPORTERS and IMPORTERS[name].function is not function:
            raise ValueError(f"importer '{name}' is registered twice")
        IMPORTERS[name] = ImporterInfo(name, function, summary, command)
        return function
    return add


def importers() -> dict[str, ImporterInfo]:
    """Every registered importer: the built-ins, then the user's plugins."""
    for module in BUILTIN_MODULES:
        importlib.import_module(module)
    load_plugins()
    return IMPORTERS


def importer(name: str) -> ImporterInfo:
    """The importer registered as ``name``; ``UnknownNameError`` with a did-you-mean."""
    found = importers().get(name)
    if found is None:
        raise UnknownNameError(f"unknown importer '{name}'{did_you_mean(name, IMPORTERS)}")
    return found
