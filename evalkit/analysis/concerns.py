"""Which concern a metric belongs to, its short header and its chart family: defined once.

The console tables (:mod:`evalkit.analysis.report`) are split by concern and the HTML
report draws one small chart per family; both ask this module.

* **retrieval**: names the metric registry parses (``recall@20``, ``retrieval:hit@5``)
  and the guard's abstention rates (``abstain_rate_answerable`` / ``_unanswerable``);
* **answers**: the answer metrics of :mod:`evalkit.metrics.answer` (faithfulness,
  hallucination, correctness, citations, abstentions, claim counts);
* **agentic**: the loop metrics of :mod:`evalkit.metrics.agentic`;
* **routes**: a router's share of queries per route (``route_share.<label>``);
* **safety**: how often the ``input_filter`` / ``moderate`` nodes blocked (:mod:`evalkit.metrics.safety`);
* **cost**: failures, degraded queries (``degraded_share``, ``degraded.<cause>``), latency and
  LLM usage (the runner's timing, not metrics);
* **other**: anything else, shown last.

Within a concern, :data:`ORDER` lists the columns most important first (tables that
must drop columns to fit drop from the end); a name not listed keeps its first-seen
order after the listed ones.
"""
from __future__ import annotations

import re

from evalkit.analysis.direction import is_descriptive
from evalkit.analysis.pairing import ABSTAIN_RATES, is_retrieval_metric

CONCERNS = ("retrieval", "answers", "agentic", "routes", "safety", "cost", "other")

ORDER: dict[str, tuple[tuple[str, str], ...]] = {
    "retrieval": (("recall@20", "recall@20"), ("hit@5", "hit@5"), ("mrr@10", "mrr@10"), ("ndcg@10", "ndcg@10"),
                  ("abstain_rate_answerable", "guard(ans)"), ("abstain_rate_unanswerable", "guard(unans)")),
    "answers": (("faithfulness", "faithful"), ("hallucination_rate", "halluc"), ("hallucinated", "halluc"),
                ("unverified_rate", "unverif"), ("unverified", "unverif"), ("n_no_checkable_claims", "no-claims"),
                ("answer_f1", "F1"),
                ("answer_correctness", "correct"), ("citation_recall", "cite.rec"), ("citation_precision", "cite.prec"),
                ("cited_gold_precision", "cite.gold"),
                ("abstention_rate", "declined(ans)"), ("correct_abstention_rate", "declined(unans)"),
                ("unanswerable_hallucination_rate", "answered(unans)"), ("claim_hallucination_rate", "halluc(claims)"),
                ("answer_em", "EM"), ("invalid_citation_rate", "cite.invalid"), ("n_answered", "answered"),
                ("n_abstained", "declined"), ("n_judge_failed", "judge-failed"),
                ("n_correctness_failed", "grade-failed")),
    "agentic": (("loop_rate", "looped"), ("attempts_mean", "attempts"), ("rescued", "rescued"),
                ("harmed", "harmed"), ("futile", "futile"), ("gate_refusals", "gate-refused"),
                ("gate_fail_rate_first", "gate-fail(1st)"),
                ("first_attempt_hit@5", "hit@5(1st)"), ("rescue_rate", "rescue%"), ("harm_rate", "harm%"),
                ("futile_rate", "futile%"), ("rescued_new_docs", "rescued(new)"), ("loop_ms_mean", "loop ms/q"),
                ("llm_fallbacks", "llm-fallback"), ("futile_rewrites", "same-rewrite"),
                ("first_attempt_recall@20", "recall@20(1st)")),
    "safety": (("block_rate", "blocked"), ("input_block_rate", "blocked(in)"), ("output_block_rate", "blocked(out)"),
               ("n_blocked", "n blocked")),
    "cost": (("failed", "failed"), ("degraded_share", "degraded"), ("s/query", "s/query"), ("p95 s", "p95 s"), ("llm_calls", "LLM calls"),
             ("tokens_in", "tokens in"), ("tokens_out", "tokens out"), ("cache_hits", "LLM cache hits"),
             ("reused", "reused steps"), ("n_claims_escalated", "claims to model"),
             ("n_claims_judged", "claims judged")),
}
_HEADER = {name: header for cols in ORDER.values() for name, header in cols}
_RANK = {name: i for cols in ORDER.values() for i, (name, _) in enumerate(cols)}

_ANSWER_MARKERS = ("faithful", "hallucinat", "unverified", "answer", "citation", "abstention", "claim", "judge",
                   "correctness", "refus", "answered", "abstained")
_AGENTIC_MARKERS = ("loop", "rescue", "harm", "futile", "attempt", "route_share", "gate_fail", "gate_refus",
                    "llm_fallback")


def _is_retrieval(name: str) -> bool:
    return name in ABSTAIN_RATES or is_retrieval_metric(name)


def concern(name: str) -> str:
    """One of :data:`CONCERNS` for a metric name (see the module docstring)."""
    if any(name == n for n, _ in ORDER["cost"]) or "latency" in name or name.startswith("degraded"):
        return "cost"
    if name.startswith("route_share."):
        return "routes"
    if any(name == n for n, _ in ORDER["safety"]):
        return "safety"
    if any(m in name for m in _AGENTIC_MARKERS):
        return "agentic"
    if _is_retrieval(name):
        return "retrieval"
    if any(m in name for m in _ANSWER_MARKERS):
        return "answers"
    return "other"


COUNTS = frozenset({"rescued", "rescued_new_docs", "harmed", "futile", "llm_fallbacks", "futile_rewrites", "loop_ms",
                    "loop_llm_calls", "loop_tokens", "loop_undetermined", "gate_refusals", "gate_refusals_unanswerable",
                    "degraded", "truncated_answers", "content_filtered"})

SENTENCE_ONLY = frozenset({"n_first_attempt_queries", "n_first_attempt_hits"})
"""Counts printed in the agentic table's sentences (:mod:`evalkit.analysis.loop_reading`), not as columns."""


def is_count(name: str) -> bool:
    """A count (printed as an integer, never "best"): ``n_*``, ``attemptN_queries``, the loop counts and totals."""
    return name in COUNTS or name.startswith(("n_", "degraded.")) or name.endswith("_queries") or (
        is_descriptive(name) and not name.endswith(("_mean", "_rate")))


def header(name: str) -> str:
    """The short column header of a metric (its own name when it has none; a route's label for route shares)."""
    if name.startswith("route_share."):
        return name.removeprefix("route_share.")
    attempt = re.fullmatch(r"attempt(\d+)_(.+)", name)
    return f"{attempt.group(2)}({attempt.group(1)})" if attempt else _HEADER.get(name, name)


def ordered(names: list[str]) -> list[str]:
    """``names`` most important first: the :data:`ORDER` ones in that order, then the rest as given."""
    first_seen = {n: i for i, n in enumerate(names)}
    return sorted(names, key=lambda n: (n not in _RANK, _RANK.get(n, 0), first_seen[n]))


def chart_family(name: str) -> str | None:
    """The small-multiple chart a metric is drawn in (None: not a 0-1 quantity worth a chart).

    Retrieval metrics go by registry family (``recall``, ``hit``, ``mrr``, ``ndcg``,
    ``precision``); the guard's rates and the answer, citation and agentic rates each have
    a panel; counts (``n_*``, ``rescued``...) and costs are not charted.
    """
    if name.startswith("n_") or concern(name) == "cost":
        return None
    if name in ABSTAIN_RATES or name in ("abstention_rate", "correct_abstention_rate",
                                         "unanswerable_hallucination_rate"):
        return "abstention"
    if is_retrieval_metric(name):
        from evalkit.metrics import parse_metric

        return parse_metric(name).family
    c = concern(name)
    if c == "answers":
        if name in CHARTED_ANSWERS:
            return "answers"
        return "citations" if name in ("citation_recall", "citation_precision", "cited_gold_precision",
                                       "invalid_citation_rate") else None
    if c in ("routes", "safety"):
        return c
    if c == "agentic":
        return "agentic" if name.endswith(("_rate", "_first")) or "@" in name else None
    return None


CHARTED_ANSWERS = ("faithfulness", "hallucination_rate", "hallucinated", "unverified_rate", "unverified", "answer_f1",
                   "answer_em", "answer_correctness", "claim_hallucination_rate")
"""Answer metrics drawn in the "answers" panel (claim counts and failure flags are not rates worth a bar)."""
