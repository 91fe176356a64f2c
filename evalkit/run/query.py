"""Running one eval record through one graph, and turning the outcome into a ``QueryResult``.

The graph knows nothing of metrics; this is the one place where a finished state meets
the gold labels. Rankings are reduced to documents here (first occurrence keeps its
rank) and scored with the metric registry. A query whose graph failed is still scored,
on whatever ranking it produced (usually none, so zeros): a failure is a miss, never a
hole in the average. Queries without gold documents get no retrieval metrics.
For variants that generate, the answer is judged against the passages it was shown
and scored with ``evalkit.metrics.answer``; LLM usage of the query (generation and
judging) is collected in ``usage``. The record's conversation ``history``, ``tenant`` and
``attributes`` start the state; ``tenant_leak`` (``evalkit.metrics.tenancy``) and
``route_correct`` (``evalkit.metrics.routing``) are scored here too.
"""
from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from evalkit.graph import Graph, initial_state
from evalkit.graph.schema import (
    ABSTAINED,
    ABSTAINING_OUTCOMES,
    ANSWER,
    ANSWER_EVIDENCE,
    CITATIONS,
    GENERATOR,
    INVALID_CITATIONS,
    OUTCOME,
    RERANK_SCORES,
    RERANKED,
    RETRIEVED,
    USED_DOCUMENTS,
    Role,
)
from evalkit.llm.usage import Usage, usage_scope
from evalkit.llm.usage import record as record_usage
from evalkit.metrics import score_query
from evalkit.metrics.answer import score_answer
from evalkit.metrics.routing import query_route_metrics
from evalkit.metrics.tenancy import query_tenant_leaks
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


@dataclass
class QueryContext:
    """What scoring one query needs besides the record: the graph, metric names, the judge."""

    graph: Graph
    metrics: Sequence[str]
    generates: bool = False
    judge: Any = None  # an ``evalkit.judges`` Judge, used when the variant generates answers
    passages: Any = None  # resolves evidence passage ids to the texts the answer is judged against
    tenants: Mapping[str, str] = field(default_factory=dict)  # doc id -> tenant (evalkit.metrics.tenancy)

    @property
    def routes(self) -> bool:
        """Whether the variant has a router node (``route_accuracy`` applies)."""
        return any(node.role is Role.ROUTER for node in self.graph.nodes.values())


def run_query(ctx: QueryContext, record: EvalRecord) -> QueryResult:
    """Execute the graph on ``record``, then score its rankings and (if any) its answer."""
    with usage_scope() as usage:
        outcome = ctx.graph.run(initial_state(record.id, record.question, record.lang, record.history, record.tenant,
                                              record.attributes))
        state = outcome.state
        retrieved_hits = list(state.get(RETRIEVED, []))
        final_hits = list(state[RERANKED]) if RERANKED in state else retrieved_hits
        retrieved, reranked = doc_ranking(retrieved_hits), doc_ranking(final_hits)
        scores: dict[str, Any] = {}
        if record.answerable:
            scores = score_query([d["doc_id"] for d in retrieved], [d["doc_id"] for d in reranked],
                                 record.relevant_doc_ids, ctx.metrics)
        generation = None
        if ctx.generates:
            generation, answer_scores = _judge_answer(ctx, record, state, outcome.failed)
            scores.update(answer_scores)
    top1 = state[RERANK_SCORES][0] if state.get(RERANK_SCORES) else None
    result_outcome = state.get(OUTCOME) or ("failed" if outcome.failed else "completed")
    result = QueryResult(
        query_id=record.id, question=record.question, gold_doc_ids=list(record.relevant_doc_ids),
        retrieved=retrieved, reranked=reranked, metrics=scores, trace=[e.to_dict() for e in outcome.trace],
        error=outcome.error, outcome=result_outcome, type=record.type, lang=record.lang,
        rerank_top1=None if top1 is None else round(float(top1), 6), generation=generation,
        usage={k: v.to_dict() for k, v in sorted(usage.items())}, tenant=record.tenant,
        gold_route=record.gold_route,
    )
    leaks = query_tenant_leaks(result, ctx.tenants)
    if leaks is not None:
        result.tenant_leaks = leaks
        result.metrics["tenant_leak"] = float(bool(leaks))
    result.metrics.update(query_route_metrics(result, ctx.routes))
    return result


def _judge_answer(ctx: QueryContext, record: EvalRecord, state: dict[str, Any],
                  failed: bool) -> tuple[dict[str, Any], dict[str, Any]]:
    """The answer record (answer, citations, verdicts) and its per-query answer metrics."""
    answer = state.get(ANSWER, "")
    abstained = bool(state.get(ABSTAINED)) or state.get(OUTCOME) in ABSTAINING_OUTCOMES
    answered = bool(answer) and not abstained and not failed
    evidence = list(state.get(ANSWER_EVIDENCE, []))
    judgement = None
    if answered and ctx.judge is not None:
        texts = [(h.doc_id, ctx.passages.text(h.id)) for h in evidence]
        t0 = time.perf_counter()
        try:
            judgement = ctx.judge.judge(record.question, answer, texts).to_dict()
        except Exception as exc:  # a judge failure is counted, never read as a verdict
            judgement = {"claims": [], "error": f"{type(exc).__name__}: {exc}"}
        record_usage("judge", Usage(latency_ms=(time.perf_counter() - t0) * 1000.0))
    correct = None
    grade = getattr(ctx.judge, "correctness", None)  # judges that can grade against the reference
    if answered and grade is not None and record.answerable and record.reference_answer:
        try:
            correct = grade(record.question, answer, record.reference_answer)
        except Exception as exc:  # noqa: BLE001 - counted like any judge failure, never a verdict
            correct = {"verdict": None, "reason": f"{type(exc).__name__}: {exc}"}
        judgement = {**(judgement or {"claims": [], "error": None}), "correctness": correct}
    generation = {"answer": answer, "abstained": abstained, "answered": answered,
                  "citations": list(state.get(CITATIONS, [])), "used_documents": list(state.get(USED_DOCUMENTS, [])),
                  "invalid_citations": list(state.get(INVALID_CITATIONS, [])),
                  "evidence": [[h.id, h.doc_id, round(float(h.score), 6)] for h in evidence],
                  "generator": state.get(GENERATOR), "judgement": judgement,
                  "judge": getattr(ctx.judge, "identity", None)}
    scores = score_answer(answerable=record.answerable, answered=answered, abstained=abstained,
                          judgement=judgement, answer=answer, reference=record.reference_answer,
                          cited_docs=generation["used_documents"],
                          invalid_citations=len(generation["invalid_citations"]), gold=record.relevant_doc_ids,
                          correctness=correct)
    return generation, scores
