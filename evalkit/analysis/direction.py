"""Which way is better, per metric name: the one definition every analysis command uses.

Higher is better for every metric except

* names containing one of :data:`LOWER_IS_BETTER_MARKERS`: ``hallucinat`` (the variant's
  ``hallucination_rate`` and the per-query ``hallucinated``), ``unverified`` (``unverified_rate``,
  the per-query ``unverified``, ``claims_unverified``), ``abstain_rate_answerable``,
  ``invalid``, ``latency``, ``degraded`` (queries whose LLM failed), ``truncated`` (answers cut
  at ``max_tokens``), ``unsupported`` (``claims_unsupported``), ``judge_failed``, ``correctness_failed``,
  and the reflection-loop costs and harms (``harmed``, ``futile``, ``loop_ms``,
  ``loop_llm_calls``, ``loop_tokens``, ``llm_fallbacks``, ``gate_failed_first``) and
  ``tenant_leak`` (``tenant_leak_rate``, evalkit.metrics.tenancy);
* the names in :data:`LOWER_IS_BETTER_NAMES`: ``abstention_rate`` (in
  ``evalkit.metrics.answer`` that is the share of *answerable* questions abstained on).

``abstain_rate_unanswerable`` and ``correct_abstention_rate`` (correct abstentions) are
higher-is-better. Per-query counts that describe an answer rather than grade it
(:func:`is_descriptive`: ``answered``, ``abstained``, ``claims``, ``citations``, ``n_*``...)
have no direction; analysis commands leave them out unless asked for by name. The safety
block rates (``block_rate``...) have none either: good on attacks, bad on ordinary questions.
"""
from __future__ import annotations

LOWER_IS_BETTER_MARKERS: tuple[str, ...] = ("hallucinat", "unverified", "abstain_rate_answerable", "invalid", "latency",
                                            "degraded", "truncated", "unsupported", "judge_failed", "correctness_failed", "harm", "futile", "loop_ms",
                                            "loop_llm", "loop_tokens", "llm_fallback", "gate_fail",
                                            "tenant_leak")
LOWER_IS_BETTER_NAMES: frozenset[str] = frozenset({"abstention_rate"})
DESCRIPTIVE_NAMES: frozenset[str] = frozenset({"answered", "abstained", "degraded", "claims", "claims_supported",
                                               "claims_not_checkable", "claims_escalated", "citations", "attempts", "attempts_mean",
                                               "looped", "loop_rate", "citation_claims", "citation_claims_supported",
                                               "citations_checked", "citations_precise",
                                               # on an attack set higher is better, on ordinary questions lower
                                               "block_rate", "input_block_rate", "output_block_rate"})


def higher_is_better(metric: str) -> bool:
    """False for the lower-is-better names above, True for everything else."""
    return metric not in LOWER_IS_BETTER_NAMES and not any(m in metric for m in LOWER_IS_BETTER_MARKERS)


def sign(metric: str) -> int:
    """+1 when higher is better, -1 when lower is better: ``sign * (b - a) > 0`` means b is better."""
    return 1 if higher_is_better(metric) else -1


def is_descriptive(metric: str) -> bool:
    """A count or flag that describes an answer (``answered``, ``claims``, ``n_answered``), not a grade."""
    return metric in DESCRIPTIVE_NAMES or metric.startswith("n_")


class LowerIsBetter:
    """A container view of the rule: ``name in LowerIsBetter()`` (for code that expects a set)."""

    def __contains__(self, metric: object) -> bool:
        return isinstance(metric, str) and not higher_is_better(metric)


PER_QUERY_NAMES: dict[str, str] = {
    "hallucination_rate": "hallucinated",
    "unverified_rate": "unverified",
    "claim_hallucination_rate": "claims_unsupported",
    "abstention_rate": "abstained",
    "correct_abstention_rate": "abstained",
    "unanswerable_hallucination_rate": "answered",
    "invalid_citation_rate": "citations_invalid",
    "tenant_leak_rate": "tenant_leak",
    "route_accuracy": "route_correct",
}
"""Variant-level answer metrics and the per-query metric they are aggregated from."""


def per_query_hint(metric: str) -> str:
    """Why ``metric`` cannot be paired query by query, and what to name instead ("" if no hint).

    ``compare`` and ``gate`` pair per-query values; a variant-level rate such as
    ``hallucination_rate`` exists only in the summary.
    """
    if metric not in PER_QUERY_NAMES:
        return ""
    return (f"; '{metric}' is a variant-level rate, and paired tests need a per-query metric: use "
            f"'{PER_QUERY_NAMES[metric]}' (see evalkit/metrics/answer.py for how the rate aggregates it)")

