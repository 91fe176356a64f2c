"""Per-tool diagnostics of agent-scheduler variants, read from the trace (never re-run).

A retriever that calls tools per query (the ``agent_scheduler``) writes ``tool_stats``
(per tool: ``latency_ms``, ``hits``, ``supplied``, ``unique``; see
:mod:`evalkit.nodes.scheduler`), ``tool_hits`` (each tool's own ranking),
``scheduler_class`` and ``scheduler_source``. Events are found by role and field
(:func:`evalkit.graph.events.events_of`), so any retriever writing these fields is read.
Over a variant's queries, per tool:

* ``calls``: scheduler executions that called the tool (a query in a loop may call twice);
* ``supplied_mean`` / ``unique_mean``: mean per call of the documents of the fused top
  ``stats_k`` found in the tool's own top ``stats_k``, and of those no other tool had;
* ``unique_total``: the sum of ``unique`` over calls;
* ``gold_supplied`` / ``gold_unique``: the same counts restricted to gold documents of
  answerable queries, recomputed here from ``tool_hits`` and the variant's final
  ``retrieved`` ranking (top ``top_n`` documents);
* ``latency_ms_mean`` / ``latency_ms_p50`` / ``latency_ms_p95``: the tool's search time
  per call (nearest-rank percentiles);

plus how often each class was chosen, by what (``rule``, ``llm``, ``default``), and how
many scheduler executions recorded an ``llm_fallback``.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from evalkit.graph.events import events_of, wrote
from evalkit.graph.schema import (
    LLM_FALLBACK,
    SCHEDULER_CLASS,
    SCHEDULER_SOURCE,
    TOOL_HITS,
    TOOL_STATS,
    Role,
)
from evalkit.records import QueryResult

TOP_N = 20


def _docs(items: Any, n: int) -> list[str]:
    """The first ``n`` distinct documents of a traced ranking (``[id, doc, score]`` rows, maybe compacted)."""
    if isinstance(items, Mapping):  # compacted: {"n": total, "first": [...]}
        items = items.get("first", [])
    docs = [str(row[1]) for row in items if isinstance(row, (list, tuple)) and len(row) >= 2]
    return list(dict.fromkeys(docs))[:n]


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (``q`` in 0..100) of ``values``; NaN when empty."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return float(ordered[rank - 1])


def tool_diagnostics(results: Sequence[QueryResult], top_n: int = TOP_N) -> dict[str, Any]:
    """Per-tool calls, contributions and latency, and class / source counts (see the module docstring)."""
    calls: dict[str, int] = {}
    supplied: dict[str, list[int]] = {}
    unique: dict[str, list[int]] = {}
    latency: dict[str, list[float]] = {}
    gold_supplied: dict[str, int] = {}
    gold_unique: dict[str, int] = {}
    classes: dict[str, int] = {}
    sources: dict[str, int] = {}
    executions = fallbacks = 0
    queries: set[str] = set()
    for r in results:
        final = [str(d["doc_id"]) for d in r.retrieved][:top_n]
        for event in events_of(r.trace, Role.RETRIEVER):
            w = wrote(event)
            stats = w.get(TOOL_STATS)
            if not isinstance(stats, Mapping):
                continue
            executions += 1
            queries.add(r.query_id)
            fallbacks += bool(w.get(LLM_FALLBACK))
            for key, counter in ((SCHEDULER_CLASS, classes), (SCHEDULER_SOURCE, sources)):
                if w.get(key) is not None:
                    counter[str(w[key])] = counter.get(str(w[key]), 0) + 1
            for tool, s in stats.items():
                calls[tool] = calls.get(tool, 0) + 1
                supplied.setdefault(tool, []).append(int(s.get("supplied", 0)))
                unique.setdefault(tool, []).append(int(s.get("unique", 0)))
                if s.get("latency_ms") is not None:
                    latency.setdefault(tool, []).append(float(s["latency_ms"]))
            hits = w.get(TOOL_HITS)
            if r.gold_doc_ids and isinstance(hits, Mapping):
                gold = set(r.gold_doc_ids) & set(final)
                own = {t: set(_docs(items, top_n)) for t, items in hits.items()}
                for t, docs in own.items():
                    others = set().union(*(d for o, d in own.items() if o != t))
                    gold_supplied[t] = gold_supplied.get(t, 0) + len(gold & docs)
                    gold_unique[t] = gold_unique.get(t, 0) + len((gold & docs) - others)
    tools = {}
    for t in sorted(calls):
        lat = latency.get(t, [])
        tools[t] = {"calls": calls[t], "supplied_mean": sum(supplied[t]) / len(supplied[t]),
                    "unique_mean": sum(unique[t]) / len(unique[t]), "unique_total": sum(unique[t]),
                    "gold_supplied": gold_supplied.get(t, 0), "gold_unique": gold_unique.get(t, 0),
                    "latency_ms_mean": sum(lat) / len(lat) if lat else math.nan,
                    "latency_ms_p50": percentile(lat, 50), "latency_ms_p95": percentile(lat, 95)}
    return {"top_n": top_n, "queries": len(queries), "executions": executions, "tools": tools,
            "classes": dict(sorted(classes.items())), "sources": dict(sorted(sources.items())),
            "llm_fallbacks": fallbacks}


def has_tools(results: Sequence[QueryResult]) -> bool:
    """Whether any query of the variant has a retriever event that wrote ``tool_stats``."""
    return any(isinstance(wrote(e).get(TOOL_STATS), Mapping) for r in results for e in events_of(r.trace, Role.RETRIEVER))


def format_tools(name: str, diag: Mapping[str, Any]) -> str:
    """Plain-text per-tool diagnostics of one variant."""
    out = [f"tool diagnostics: {name} ({diag['executions']} scheduler executions over {diag['queries']} queries; "
           f"contributions to the fused top {diag['top_n']} documents)"]
    for t, s in diag["tools"].items():
        out.append(f"  {t:<6} called {s['calls']}x; supplies {s['supplied_mean']:.2f} docs/call, "
                   f"{s['unique_mean']:.2f} that no other tool had ({s['unique_total']} in all); "
                   f"gold: {s['gold_supplied']} supplied, {s['gold_unique']} only by it; latency ms "
                   f"mean {s['latency_ms_mean']:.1f}, p50 {s['latency_ms_p50']:.1f}, p95 {s['latency_ms_p95']:.1f}")
    if diag["classes"]:
        out.append("  classes: " + ", ".join(f"{c} {n}" for c, n in diag["classes"].items()))
    if diag["sources"]:
        out.append("  decided by: " + ", ".join(f"{c} {n}" for c, n in diag["sources"].items())
                   + f"; llm fallbacks {diag['llm_fallbacks']}")
    return "\n".join(out)
