"""From per-query results to a variant's numbers: metrics, per-type breakdown, usage, timing.

Pure functions over ``QueryResult`` records (what ``per_query.jsonl`` holds), so the
runner, the Ray executor and analysis tools all summarise a variant the same way.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from evalkit.graph.events import events_of, guard_ran, guard_tripped
from evalkit.graph.schema import Role
from evalkit.llm.usage import Usage
from evalkit.metrics import DEFAULT_METRICS, aggregate
from evalkit.metrics.agentic import aggregate_loops
from evalkit.metrics.answer import aggregate_answers
from evalkit.metrics.routing import aggregate_routing
from evalkit.metrics.safety import aggregate_safety
from evalkit.metrics.tenancy import aggregate_tenancy
from evalkit.records import QueryResult, VariantSummary
from evalkit.run.health import degraded_metrics


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
    metrics.update(aggregate_answers([(r.answerable, r.metrics) for r in results]))
    metrics.update(aggregate_loops(results))  # reflection loops / router: evalkit.metrics.agentic
    metrics.update(degraded_metrics(results))  # calls that failed for good: evalkit.run.health
    metrics.update(finish_metrics(results))
    metrics.update(aggregate_tenancy(results))  # tenant_leak_rate: evalkit.metrics.tenancy
    metrics.update(aggregate_routing(results))  # route_accuracy: evalkit.metrics.routing
    metrics.update(aggregate_safety(results))  # block_rate: evalkit.metrics.safety
    return metrics, len(results) - len(answerable)


def finish_metrics(results: Sequence[QueryResult]) -> dict[str, float]:
    """How generators' answers ended: ``truncated_answers`` (cut at ``max_tokens``, finish reason
    ``length``) and ``content_filtered`` (the provider refused, ``content_filter``), counted over the
    queries whose generator events carry that finish reason; absent for variants that do not generate."""
    counts = {"truncated_answers": 0.0, "content_filtered": 0.0}
    seen = False
    for r in results:
        events = list(events_of(r.trace, Role.GENERATOR))
        seen = seen or bool(events)
        llm = [e.get("llm") or {} for e in events]
        counts["truncated_answers"] += float(any(u.get("finish_reason.length") for u in llm))
        counts["content_filtered"] += float(any(u.get("finish_reason.content_filter") for u in llm))
    return counts if seen else {}


def variant_summary(results: Sequence[QueryResult], retrieval: Sequence[str] = DEFAULT_METRICS,
                    **fields: Any) -> VariantSummary:
    """The ``VariantSummary`` of one variant's finished, eval-set-ordered results.

    Metrics, failure and exclusion counts, timing, per-type breakdown and usage come from
    the records; ``fields`` are the rest (``config_path``, ``index``, ``seconds``, ``judge``...).
    ``timing`` given in ``fields`` is merged over the records' own timing.
    """
    metrics, excluded = variant_metrics(results, retrieval)
    extra_timing = fields.pop("timing", {})
    return VariantSummary(metrics=metrics, n_failed=sum(r.error is not None for r in results),
                          n_queries=len(results), n_excluded=excluded, timing={**timing(results), **extra_timing},
                          by_type=metrics_by_type(results, retrieval, overall=metrics), usage=usage_totals(results),
                          **fields)


def usage_totals(results: Sequence[QueryResult]) -> dict[str, dict[str, float]]:
    """LLM usage summed over queries, by purpose (generate, judge, ...)."""
    totals: dict[str, Usage] = {}
    for r in results:
        for purpose, u in r.usage.items():
            totals.setdefault(purpose, Usage()).add(Usage.from_dict(u))
    return {k: v.to_dict() for k, v in sorted(totals.items())}


def metrics_by_type(results: Sequence[QueryResult], retrieval: Sequence[str] = DEFAULT_METRICS,
                    overall: dict[str, float] | None = None) -> dict[str, dict[str, float]]:
    """The same metrics per question type (single, multi_hop, ..., unanswerable), with ``n``.

    ``overall``: :func:`variant_metrics` of ``results``, when the caller has it: with one type, that type's
    group is ``results`` itself, in its order, so its metrics are those (not computed a second time)."""
    types = sorted({r.type or "" for r in results})
    if overall is not None and len(types) == 1:
        return {types[0]: {"n": float(len(results)), **overall}}
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
