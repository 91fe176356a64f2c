"""From per-query results to a variant's numbers: metrics, per-type breakdown, usage, timing.

Pure functions over ``QueryResult`` records (what ``per_query.jsonl`` holds), so the
runner, the Ray executor and analysis tools all summarise a variant the same way.
"""
from __future__ import annotations

from collections.abc import Sequence

from evalkit.graph.events import guard_ran, guard_tripped
from evalkit.llm.usage import Usage
from evalkit.metrics import DEFAULT_METRICS, aggregate
from evalkit.metrics.agentic import aggregate_loops
from evalkit.metrics.answer import aggregate_answers
from evalkit.metrics.routing import aggregate_routing
from evalkit.metrics.tenancy import aggregate_tenancy
from evalkit.records import QueryResult



def variant_metrics(results: Sequence[QueryResult], retrieval: Sequence[str] = DEFAULT_METRICS
                    ) -> tuple[dict[str, float], int]:
    """Retrieval means over answerable queries, guard abstention rates, answer metrics.

    ``abstain_rate_answerable``: share of answerable queries the guard stopped (false
    abstentions); ``abstain_rate_unanswerable``: share of unanswerable queries it stopped
    (correct abstentions). Answer metrics (faithfulness, hallucination...) come from
    ``evalkit.metrics.answer.aggregate_answers`` for variants that generate; loop metrics
    (rescued / harmed / futile, loop cost) from ``evalkit.metrics.agentic.aggregate_loops``
    for variants with agentic nodes. Returns the metrics and the number of queries
    excluded from the retrieval metrics (no gold).
    """
    answerable = [r for r in results if r.gold_doc_ids]
    metrics = aggregate([{m: r.metrics[m] for m in retrieval} for r in answerable])
    if any(guard_ran(r) for r in results):
        unanswerable = [r for r in results if not r.gold_doc_ids]
        for name, group in (("abstain_rate_answerable", answerable), ("abstain_rate_unanswerable", unanswerable)):
            if group:
                metrics[name] = sum(guard_tripped(r) for r in group) / len(group)
    metrics.update(aggregate_answers([(bool(r.gold_doc_ids), r.metrics) for r in results]))
    metrics.update(aggregate_loops(results))  # reflection loops / router: evalkit.metrics.agentic
    metrics.update(aggregate_tenancy(results))  # tenant_leak_rate: evalkit.metrics.tenancy
    metrics.update(aggregate_routing(results))  # route_accuracy: evalkit.metrics.routing
    return metrics, len(results) - len(answerable)


def usage_totals(results: Sequence[QueryResult]) -> dict[str, dict[str, float]]:
    """LLM usage summed over queries, by purpose (generate, judge, ...)."""
    totals: dict[str, Usage] = {}
    for r in results:
        for purpose, u in r.usage.items():
            totals.setdefault(purpose, Usage()).add(Usage.from_dict(u))
    return {k: v.to_dict() for k, v in sorted(totals.items())}


def metrics_by_type(results: Sequence[QueryResult], retrieval: Sequence[str] = DEFAULT_METRICS
                    ) -> dict[str, dict[str, float]]:
    """The same metrics per question type (single, multi_hop, ..., unanswerable), with ``n``."""
    types = sorted({r.type or "" for r in results})
    out = {}
    for t in types:
        group = [r for r in results if (r.type or "") == t]
        out[t] = {"n": float(len(group)), **variant_metrics(group, retrieval)[0]}
    return out


def timing(results: Sequence[QueryResult]) -> dict[str, float]:
    per_query = sorted(sum(e["duration_ms"] for e in r.trace) for r in results)
    if not per_query:
        return {}
    p95 = per_query[min(len(per_query) - 1, int(round(0.95 * (len(per_query) - 1))))]
    reused = sum(bool(e.get("reused")) for r in results for e in r.trace)
    return {"latency_ms_mean": round(sum(per_query) / len(per_query), 3), "latency_ms_p95": round(p95, 3),
            "node_executions": float(sum(len(r.trace) for r in results)), "node_executions_reused": float(reused)}
