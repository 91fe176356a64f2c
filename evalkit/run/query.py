"""Running one eval record through one graph, and turning the outcome into a ``QueryResult``.

The graph knows nothing of metrics; this is the one place where a finished state meets
the gold labels. Rankings are reduced to documents here (first occurrence keeps its
rank) and scored with the metric registry. A query whose graph failed is still scored,
on whatever ranking it produced (usually none, so zeros): a failure is a miss, never a
hole in the average. Queries without gold documents are not scored (``metrics`` empty).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from evalkit.graph import Graph, initial_state
from evalkit.metrics import score_query
from evalkit.records import EvalRecord, Hit, QueryResult


def doc_ranking(hits: Sequence[Hit]) -> list[dict[str, Any]]:
    """Passage hits -> document-level ranking: first occurrence of a document keeps its rank."""
    seen: set[str] = set()
    out = []
    for h in hits:
        if h.doc_id not in seen:
            seen.add(h.doc_id)
            out.append({"doc_id": h.doc_id, "score": round(float(h.score), 6)})
    return out


def run_query(graph: Graph, record: EvalRecord, metrics: Sequence[str]) -> QueryResult:
    """Execute ``graph`` on ``record`` and score the rankings it produced."""
    outcome = graph.run(initial_state(record.id, record.question, record.lang))
    state = outcome.state
    retrieved_hits = list(state.get("retrieved", []))
    final_hits = list(state["reranked"]) if "reranked" in state else retrieved_hits
    retrieved, reranked = doc_ranking(retrieved_hits), doc_ranking(final_hits)
    scores: dict[str, float] = {}
    if record.answerable:
        scores = score_query([d["doc_id"] for d in retrieved], [d["doc_id"] for d in reranked],
                             record.relevant_doc_ids, metrics)
    top1 = state.get("rerank_scores", [None])[0] if state.get("rerank_scores") else None
    result_outcome = state.get("outcome") or ("failed" if outcome.failed else "completed")
    return QueryResult(
        query_id=record.id, question=record.question, gold_doc_ids=list(record.relevant_doc_ids),
        retrieved=retrieved, reranked=reranked, metrics=scores, trace=[e.to_dict() for e in outcome.trace],
        error=outcome.error, outcome=result_outcome, type=record.type, lang=record.lang,
        rerank_top1=None if top1 is None else round(float(top1), 6),
    )
