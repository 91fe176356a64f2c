"""Router accuracy against gold routes: ``route_accuracy`` and its confusion table, defined here.

An eval record may name the ``gold_route`` its question should take (a label of the
router's ``routes``). Read from a finished query's record only (its trace and
``gold_route``): the **chosen route** is the ``route`` written by the first trace event of
a node with the ``router`` role (the decision that picked the retrieval path; a later
router in a loop does not overwrite it). A query whose router did not run or wrote no
route chose ``(none)``, which is wrong.

Per query: ``metrics["route_correct"]`` = 1.0 when the chosen route equals the gold route
(exact string match), else 0.0; absent when the record has no gold route or the variant
has no router (no router event in the trace and none in the variant).

Per variant: ``route_accuracy`` = correct / queries with a gold route (those that carry
``route_correct``), ``n_gold_route`` that denominator, and :func:`route_confusion`,
``{gold: {chosen: count}}`` over the same queries, which reports print as a table
(rows gold, columns chosen).
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from evalkit.graph.events import events_of, wrote
from evalkit.graph.schema import ROUTE, Role
from evalkit.metrics.catalog import NamedMetric, register_metrics
from evalkit.records import QueryResult

NONE = "(none)"


def chosen_route(trace: Sequence[Any]) -> str | None:
    """The route the first router event wrote; None when no router ran; ``(none)`` when it wrote no route."""
    events = list(events_of(trace, Role.ROUTER))
    if not events:
        return None
    value = wrote(events[0]).get(ROUTE)
    return NONE if value is None else str(value)


def query_route_metrics(result: QueryResult, has_router: bool) -> dict[str, float]:
    """``{"route_correct": 1.0 | 0.0}`` for a record with a gold route in a variant with a router, else ``{}``."""
    if result.gold_route is None or not has_router:
        return {}
    chosen = chosen_route(result.trace) or NONE
    return {"route_correct": float(chosen == result.gold_route)}


def route_confusion(results: Sequence[QueryResult]) -> dict[str, dict[str, int]]:
    """``{gold route: {chosen route: queries}}`` over the results that carry ``route_correct``."""
    table: dict[str, dict[str, int]] = {}
    for r in results:
        if r.gold_route is None or r.metrics.get("route_correct") is None:
            continue
        chosen = chosen_route(r.trace) or NONE
        row = table.setdefault(r.gold_route, {})
        row[chosen] = row.get(chosen, 0) + 1
    return {g: dict(sorted(row.items())) for g, row in sorted(table.items())}


def aggregate_routing(results: Sequence[QueryResult]) -> dict[str, float]:
    """``route_accuracy`` and ``n_gold_route``; ``{}`` when no query carries ``route_correct``."""
    flags = [float(ok) for r in results if (ok := r.metrics.get("route_correct")) is not None]
    if not flags:
        return {}
    return {"route_accuracy": math.fsum(flags) / len(flags), "n_gold_route": float(len(flags))}


def confusion_rows(confusion: Mapping[str, Mapping[str, int]]) -> tuple[list[str], list[list[str]]]:
    """The confusion table as (header, rows) of text: one row per gold route, one column per chosen route."""
    chosen = sorted({c for row in confusion.values() for c in row})
    header = ["gold \\ chosen", *chosen, "n", "correct"]
    rows = []
    for gold, row in confusion.items():
        n = sum(row.values())
        rows.append([gold, *(str(row.get(c, 0)) for c in chosen), str(n), f"{row.get(gold, 0) / n:.3f}"])
    return header, rows


register_metrics(
    "other",
    NamedMetric("route_accuracy", "higher", "share", "queries whose router chose the gold route / queries with a "
                "gold route", per_query="route_correct"),
    NamedMetric("route_correct", "higher", "flag", "1 when the router chose the record's gold_route (per query)",
                column=False),
    NamedMetric("n_gold_route", "none", "count", "queries whose record names a gold_route"),
    source=__name__,
)
