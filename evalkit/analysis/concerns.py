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

from evalkit.analysis.pairing import ABSTAIN_RATES, is_retrieval_metric
from evalkit.metrics.catalog import CONCERNS, columns, named_metric
from evalkit.metrics.registry import DEFAULT_METRICS

__all__ = ["CONCERNS", "SENTENCE_ONLY", "chart_family", "concern", "header", "is_count", "ordered"]


def _is_retrieval(name: str) -> bool:
    return is_retrieval_metric(name)


def concern(name: str) -> str:
    """One of :data:`CONCERNS` for a metric name: the registered metric's, ``retrieval`` for a ranking
    metric, ``other`` for a name in neither registry."""
    m = named_metric(name)
    if m is not None:
        return m.concern
    return "retrieval" if _is_retrieval(name) else "other"


SENTENCE_ONLY = frozenset({"n_first_attempt_queries", "n_first_attempt_hits"})
"""Counts printed in the agentic table's sentences (:mod:`evalkit.analysis.loop_reading`), not as columns."""


def is_count(name: str) -> bool:
    """A count (printed as an integer, never "best"): a registered metric whose unit is ``count``."""
    m = named_metric(name)
    return m is not None and m.is_count


def _rank(name: str) -> int | None:
    """Position of ``name`` among its table's columns (the default ranking metrics first), None if unranked."""
    if name in DEFAULT_METRICS:
        return DEFAULT_METRICS.index(name)
    m = named_metric(name)
    if m is None or not m.column or m.pattern is not None:
        return None
    return len(DEFAULT_METRICS) + [c.name for c in columns(m.concern)].index(m.name)


def header(name: str) -> str:
    """The short column header of a metric (its own name when it has none; a route's label for route shares)."""
    m = named_metric(name)
    return name if m is None else m.header_of(name)


def ordered(names: list[str]) -> list[str]:
    """``names`` most important first: the table columns in registry order, then the rest as given."""
    first_seen = {n: i for i, n in enumerate(names)}
    ranks = {n: _rank(n) for n in names}
    return sorted(names, key=lambda n: (ranks[n] is None, ranks[n] or 0, first_seen[n]))


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
