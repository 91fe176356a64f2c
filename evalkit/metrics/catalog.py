"""The registry of named metrics: every metric evalkit prints that is not a ranking metric.

Ranking metrics (``recall@20``, ``final:hit@5``) are parsed from their names by
:mod:`evalkit.metrics.registry`. Every other metric (answer, agentic, cost, tenancy,
routing, safety and the guard's rates) is registered here once, by the module that
computes it, with :func:`register_metrics`:

    register_metrics("answers",
        NamedMetric("faithfulness", "higher", "score", "supported / judged claims of an answer", header="faithful"),
        ...)

Each :class:`NamedMetric` gives the printed name, the direction (``higher`` or ``lower`` is
better, or ``none``: a count or share that describes rather than grades), the unit, a one-line
definition and the short console header. ``compare`` and ``gate`` (which way is better,
what to pair instead of a variant-level rate), the console tables (which table, which
column order, which header, integers or rates), the MLflow parent run (headline metrics) and
the table of docs/metrics.md (:mod:`evalkit.metrics.reference`) all read this registry; no
module guesses from parts of a name.

A name with a parameter (``attempt3_hit@5``, ``route_share.<label>``, ``degraded.<cause>``)
is registered once with a ``pattern`` (a regular expression over the printed name).

Within a concern, the metrics registered with ``column=True`` are the table's columns, most
important first, in registration order (the order :func:`register_metrics` gets them).
"""
from __future__ import annotations

import importlib
import re
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Literal, get_args

from evalkit.plugins import load_plugins

Direction = Literal["higher", "lower", "none"]
Unit = Literal["share", "score", "flag", "count", "mean", "ms", "s", "calls", "tokens"]
Concern = Literal["retrieval", "answers", "agentic", "routes", "safety", "cost", "other"]
DIRECTIONS: tuple[str, ...] = get_args(Direction)
UNITS: tuple[str, ...] = get_args(Unit)
CONCERNS: tuple[str, ...] = get_args(Concern)

BUILTIN_MODULES = ("evalkit.metrics.guard", "evalkit.metrics.answer", "evalkit.metrics.agentic",
                   "evalkit.metrics.tenancy", "evalkit.metrics.routing", "evalkit.metrics.safety",
                   "evalkit.metrics.cost")
"""The modules that register the built-in metrics (imported before any lookup), in table order."""


@dataclass(frozen=True)
class NamedMetric:
    """One registered metric: what its printed name means and which way is better.

    ``per_query``: for a variant-level rate, the per-query metric it aggregates (what ``compare``
    and ``gate`` pair instead). ``descriptive``: left out of the analysis commands' default metric
    lists (default: ``direction == "none"``). ``headline``: position among the answer metrics an
    MLflow parent run shows per variant (0: not shown). ``total``: a sum over queries (``loop_ms``),
    printed as an integer like a count. ``pattern``: a regular expression for a
    parameterised name; its groups fill ``header`` (``"hit@5({0})"``).
    """

    name: str
    direction: Direction
    unit: Unit
    definition: str
    header: str = ""
    per_query: str | None = None
    descriptive: bool | None = None
    headline: int = 0
    column: bool = True
    total: bool = False
    pattern: str | None = None
    concern: Concern = "other"
    source: str = ""  # the module that registered it (filled in by register_metrics)
    _regex: re.Pattern[str] | None = field(default=None, repr=False, compare=False)

    @property
    def is_descriptive(self) -> bool:
        return self.direction == "none" if self.descriptive is None else self.descriptive

    @property
    def is_count(self) -> bool:
        """Printed as an integer and never marked best: a count, a sum over queries (``total``), or a
        descriptive flag (``answered``)."""
        return self.unit == "count" or self.total or (self.unit == "flag" and self.is_descriptive)

    def header_of(self, name: str) -> str:
        """The printed column header of ``name`` (this metric's name, or one its pattern matches)."""
        if self._regex is not None:
            m = self._regex.fullmatch(name)
            if m and self.header:
                return self.header.format(*m.groups())
        return self.header or name


NAMED: dict[str, NamedMetric] = {}
"""Registered metrics by printed name (a pattern's entry under its ``name``, e.g. ``attempt<N>_hit@5``)."""
_PATTERNS: list[NamedMetric] = []
_loaded = False


def register_metrics(concern: Concern, *metrics: NamedMetric, source: str = "") -> tuple[NamedMetric, ...]:
    """Register ``metrics`` as columns of the ``concern`` table; a name can be registered once.

    Refuses an unknown direction, unit or concern and a name already registered, so two modules
    can never define one metric two ways.
    """
    if concern not in CONCERNS:
        raise ValueError(f"unknown concern {concern!r}; one of {', '.join(CONCERNS)}")
    out = []
    for m in metrics:
        if m.direction not in DIRECTIONS:
            raise ValueError(f"metric {m.name!r}: direction must be one of {', '.join(DIRECTIONS)}")
        if m.unit not in UNITS:
            raise ValueError(f"metric {m.name!r}: unit must be one of {', '.join(UNITS)}")
        if not m.definition.strip() or "\n" in m.definition:
            raise ValueError(f"metric {m.name!r}: the definition must be one line")
        if m.name in NAMED:
            raise ValueError(f"metric {m.name!r} is registered twice ({NAMED[m.name].source} and {source or '?'})")
        entry = replace(m, concern=concern, source=source,
                        _regex=re.compile(m.pattern) if m.pattern is not None else None)
        NAMED[m.name] = entry
        if entry._regex is not None:
            _PATTERNS.append(entry)
        out.append(entry)
    return tuple(out)


def _builtins(plugins: bool = True) -> None:
    """Import the modules that register the built-in metrics (once), then the user's plugins."""
    global _loaded
    if not _loaded:
        for module in BUILTIN_MODULES:
            importlib.import_module(module)
        _loaded = True
    if plugins:
        load_plugins()


def named_metric(name: str) -> NamedMetric | None:
    """The registered metric ``name`` is (by name, then by pattern); None for a ranking or unknown name."""
    _builtins()
    found = NAMED.get(name)
    if found is not None:
        return found
    return next((m for m in _PATTERNS if m._regex is not None and m._regex.fullmatch(name)), None)


def all_metrics(plugins: bool = True) -> Iterator[NamedMetric]:
    """Every registered metric, in registration order (``plugins=False``: the built-ins only)."""
    _builtins(plugins)
    rank = {module: i for i, module in enumerate(BUILTIN_MODULES)}  # not import order: that depends on the caller
    yield from sorted(NAMED.values(), key=lambda m: rank.get(m.source, len(rank)))


def headline(per_query: bool = False) -> tuple[str, ...]:
    """The answer metrics an MLflow parent run shows per variant, in ``headline`` order; with
    ``per_query``, the per-query metric each aggregates (what traces are assessed on)."""
    picked = sorted((m for m in all_metrics(plugins=False) if m.headline), key=lambda m: m.headline)
    return tuple((m.per_query or m.name) if per_query else m.name for m in picked)


def columns(concern: str) -> list[NamedMetric]:
    """The ``column=True`` metrics of one concern's table, most important first."""
    return [m for m in all_metrics() if m.concern == concern and m.column]
