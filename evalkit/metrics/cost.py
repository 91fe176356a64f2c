"""Cost and health metrics: what a variant cost and how often it failed, registered here.

Computed by the runner from the records (:mod:`evalkit.run.summarise`: latency, usage,
finish reasons; :mod:`evalkit.run.health`: degraded queries) and printed as the run's cost
table (:func:`evalkit.analysis.report.summary_tables`), whose columns are the ``column=True``
metrics below, in this order. ``n_claims_escalated`` / ``n_claims_judged`` come from
:func:`evalkit.metrics.answer.aggregate_answers` (a cascade judge's model calls).
"""
from __future__ import annotations

from evalkit.metrics.catalog import NamedMetric, register_metrics

_M = NamedMetric
register_metrics(
    "cost",
    _M("failed", "lower", "count", "query runs that raised (VariantSummary.n_failed)", header="failed"),
    _M("degraded_share", "lower", "share", "degraded queries / queries: no usable answer, an LLM call failed for "
       "good or the reply was empty, filtered or an error message", header="degraded"),
    _M("s/query", "lower", "s", "mean pipeline latency per query (sum of node durations)", header="s/query"),
    _M("p95 s", "lower", "s", "95th percentile of the per-query pipeline latency", header="p95 s"),
    _M("llm_calls", "lower", "calls", "LLM calls, every purpose (generate, judge, ...)", header="LLM calls"),
    _M("tokens_in", "lower", "tokens", "LLM prompt tokens, every purpose", header="tokens in"),
    _M("tokens_out", "lower", "tokens", "LLM answer tokens, every purpose", header="tokens out"),
    _M("cache_hits", "none", "calls", "LLM calls answered from the cache", header="LLM cache hits"),
    _M("reused", "none", "count", "node executions shared with another variant of the same run / all",
       header="reused steps"),
    _M("n_claims_escalated", "none", "count", "claims a cascade judge (offline+llm) sent to its model",
       header="claims to model"),
    _M("n_claims_judged", "none", "count", "claims a cascade judge judged (what a model-only judge would be asked)",
       header="claims judged"),
    _M("degraded", "lower", "count", "degraded queries (per query: 1 when degraded)", descriptive=True, column=False),
    _M("degraded.<cause>", "lower", "count", "degraded queries with that cause", pattern=r"degraded\.(.+)",
       column=False),
    _M("latency_ms_mean", "lower", "ms", "mean pipeline latency per query (VariantSummary.timing)", column=False),
    _M("latency_ms_p95", "lower", "ms", "95th percentile pipeline latency (VariantSummary.timing)", column=False),
    source=__name__,
)
register_metrics(  # how generators' answers ended: shown beside the answer metrics
    "answers",
    _M("truncated_answers", "lower", "count", "answers cut at max_tokens (finish reason length)", column=False),
    _M("content_filtered", "lower", "count", "answers the provider refused (finish reason content_filter)",
       column=False),
    source=__name__,
)
