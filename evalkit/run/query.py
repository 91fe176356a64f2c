"""Running one eval record through one graph, and turning the outcome into a ``QueryResult``.

The graph knows nothing of metrics; this is the one place where outputs meet the gold
labels. :func:`score_outputs` scores a record from given rankings and (optionally) an
:class:`Answer`, whoever produced them: :func:`run_query` calls it on a graph's final
state, and ``evalkit score`` (:mod:`evalkit.scoring`) on outputs read from the user's
files, so both paths compute every number with the same code. Rankings are reduced to
documents (first occurrence keeps its rank) and scored with the metric registry. A
query whose graph failed is still scored, on whatever ranking it produced (usually
none, so zeros): a failure is a miss, never a hole in the average. Queries without gold
documents get no retrieval metrics. The record's relevance grades, the run's relevance
level and its tie order (``Scoring``) are applied here and nowhere else. An answer is
judged against the passages it was shown and scored with ``evalkit.metrics.answer``;
LLM usage of the query (generation and judging) is collected in ``usage``. The record's conversation ``history``,
``tenant`` and ``attributes`` start the state; ``tenant_leak`` (``evalkit.metrics.tenancy``)
and ``route_correct`` (``evalkit.metrics.routing``) are scored here too.
"""
from __future__ import annotations

import operator
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from evalkit.graph.schema import (
    ABSTAINING_OUTCOMES,
    ABSTENTION,
    ANSWER,
    ANSWER_EVIDENCE,
    CITATIONS,
    GENERATOR,
    INVALID_CITATIONS,
    OUTCOME,
    QUESTION,
    RERANK_SCORES,
    RERANKED,
    RETRIEVED,
    USED_DOCUMENTS,
    Role,
)
from evalkit.graph.state import initial_state
from evalkit.llm.usage import Usage, usage_scope
from evalkit.llm.usage import record as record_usage
from evalkit.metrics import Scoring, order_ranking, score_query
from evalkit.metrics.answer import score_answer
from evalkit.metrics.routing import query_route_metrics
from evalkit.metrics.tenancy import query_tenant_leaks
from evalkit.models.abstention import OFF, resolve
from evalkit.models.abstention import detect as detect_abstention
from evalkit.nodes.system_outputs import EVIDENCE_TEXTS, evidence_text
from evalkit.records import EvalRecord, Hit, QueryResult
from evalkit.run.health import degradations

if TYPE_CHECKING:
    from evalkit.graph.graph import Graph


def doc_ranking(hits: Sequence[Hit]) -> list[dict[str, Any]]:
    """Passage hits -> document-level ranking: first occurrence of a document keeps its rank."""
    return Hit.by_document(hits)


@dataclass(frozen=True)
class Evidence:
    """One passage an answer was written from: passage id, its document, its text, its score."""

    id: str
    doc_id: str
    text: str
    score: float = 0.0


@dataclass
class Answer:
    """An answer to score, however it was produced (a generate node, or the user's own system).

    ``answered`` is derived: a non-empty answer that is not an abstention and did not fail.
    """

    text: str
    abstained: bool
    evidence: list[Evidence] = field(default_factory=list)
    used_documents: list[str] = field(default_factory=list)
    invalid_citations: list[str] = field(default_factory=list)
    citations: list[str] = field(default_factory=list)
    generator: str | None = None
    failed: bool = False
    abstention: dict[str, Any] = field(default_factory=dict)  # the detector's finding (evalkit.text.abstention)

    @property
    def answered(self) -> bool:
        return bool(self.text) and not self.abstained and not self.failed


@dataclass
class QueryContext:
    """What scoring one query needs besides the record: the graph, metric names, the judge."""

    graph: Graph
    metrics: Sequence[str]
    generates: bool = False
    judge: Any = None  # an ``evalkit.judges`` Judge, used when the variant generates answers
    passages: Any = None  # resolves evidence passage ids to the texts the answer is judged against
    scoring: Scoring = field(default_factory=Scoring)  # relevance level and tie order of the metrics
    abstention: Any = None  # the eval set's AbstentionRules (NAME.abstention.yaml), when it has some
    tenants: Mapping[str, str] = field(default_factory=dict)  # doc id -> tenant (evalkit.metrics.tenancy)

    @property
    def routes(self) -> bool:
        """Whether the variant has a router node (``route_accuracy`` applies)."""
        return any(node.role is Role.ROUTER for node in self.graph.nodes.values())


def score_outputs(record: EvalRecord, retrieved: Sequence[dict[str, Any]], final: Sequence[dict[str, Any]],
                  metrics: Sequence[str], answer: Answer | None = None, judge: Any = None, *,
                  gold_known: bool = True, scoring: Scoring | None = None,
                  degraded: bool = False) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """Every per-query metric of ``record`` from a pipeline's outputs: ``(metrics, generation record)``.

    ``retrieved`` / ``final`` are document-level rankings (``{doc_id, score}``, best first)
    of the retrieval stage and the final stage (the same list when there is no reranker);
    ``answer`` is ``None`` for a pipeline that does not generate. The generation record is
    what ``per_query.jsonl`` keeps under ``generation`` (answer, citations, evidence,
    verdicts). ``gold_known`` False (answers scored without gold labels) takes a question
    without gold documents as answerable unless its type is ``unanswerable``. A
    ``degraded`` query (:mod:`evalkit.run.health`) keeps its retrieval metrics but its
    answer is not judged.
    """
    scoring = scoring or Scoring()
    scores: dict[str, Any] = {}
    if record.answerable and metrics:
        ties = scoring.ties
        first = _ordered(retrieved, ties)
        # no reranker: the final stage holds the retrieval stage's very entries, so it is ordered once
        same = len(final) == len(retrieved) and all(map(operator.is_, final, retrieved))
        scores = score_query(first, first if same else _ordered(final, ties), record.grades, metrics,
                             scoring.relevance_level)
    generation = None
    if answer is not None:
        answerable = record.answerable or (not gold_known and record.type != "unanswerable")
        generation, answer_scores = _judge_answer(record, answer, judge, answerable, degraded)
        scores.update(answer_scores)
    scores["degraded"] = float(degraded)
    return scores, generation


def run_query(ctx: QueryContext, record: EvalRecord) -> QueryResult:
    """Execute the graph on ``record``, then score its rankings and (if any) its answer."""
    with usage_scope() as usage:
        outcome = ctx.graph.run(initial_state(record.id, record.question, record.lang, record.history, record.tenant,
                                              record.attributes))
        state = outcome.state
        trace = [e.to_dict() for e in outcome.trace]
        retrieved_hits = list(state.get(RETRIEVED, []))
        final_hits = list(state[RERANKED]) if RERANKED in state else retrieved_hits
        retrieved = doc_ranking(retrieved_hits)
        reranked = list(retrieved) if RERANKED not in state else doc_ranking(final_hits)  # same hits: same ranking
        answer = _state_answer(ctx, state, outcome.failed) if ctx.generates else None
        # the answer's final finding (the eval set's patterns applied) decides whether its reply was usable
        degraded = degradations(trace, answer.abstention if answer is not None else None)
        scores, generation = score_outputs(record, retrieved, reranked, ctx.metrics, answer, ctx.judge,
                                           scoring=ctx.scoring, degraded=bool(degraded))
    top1 = state[RERANK_SCORES][0] if state.get(RERANK_SCORES) else None
    result_outcome = state.get(OUTCOME) or ("failed" if outcome.failed else "completed")
    result = QueryResult(
        query_id=record.id, question=record.question, gold_doc_ids=list(record.relevant_doc_ids),
        retrieved=retrieved, reranked=reranked, metrics=scores, trace=trace,
        error=outcome.error, outcome=result_outcome, type=record.type, lang=record.lang,
        rerank_top1=None if top1 is None else round(float(top1), 6), generation=generation,
        usage={k: v.to_dict() for k, v in sorted(usage.items())}, degraded=degraded,
        gold_relevance=dict(record.relevance) if record.relevance is not None else None, tenant=record.tenant,
        gold_route=record.gold_route,
    )
    leaks = query_tenant_leaks(result, ctx.tenants)
    if leaks is not None:
        result.tenant_leaks = leaks
        result.metrics["tenant_leak"] = float(bool(leaks))
    result.metrics.update(query_route_metrics(result, ctx.routes))
    return result


def _ordered(ranking: Sequence[dict[str, Any]], ties: str) -> list[str]:
    """Document ids of a recorded ranking in the order to score: the pipeline's, or trec_eval's.

    Scores are the recorded ones (6 decimals), so a TREC run exported from the records
    (``evalkit export --format trec --scores native``) makes trec_eval see the same ties.
    """
    if ties == "pipeline":  # the recorded order as it is: no (id, score) pair built to be dropped again
        return [d["doc_id"] for d in ranking]
    return order_ranking([(d["doc_id"], d["score"]) for d in ranking], ties)


def _state_answer(ctx: QueryContext, state: dict[str, Any], failed: bool) -> Answer:
    """The answer a graph's final state holds (written by a generate, fallback or external node)."""
    text = state.get(ANSWER, "")
    texts = state.get(EVIDENCE_TEXTS) or {}  # passages an external system returned as text (nodes/external.py)
    evidence = [Evidence(h.id, h.doc_id, evidence_text(h.id, texts, ctx.passages) or "", float(h.score))
                for h in state.get(ANSWER_EVIDENCE, [])]
    asked = state.get(QUESTION)
    finding = abstention_finding(text, state.get(ABSTENTION), ctx.abstention, failed, [e.text for e in evidence],
                                 asked if isinstance(asked, str) else None)
    # a failed query is neither answered nor abstained (evalkit.metrics.answer), whatever its answer says,
    # as for answers scored from a file (evalkit.scoring.scorer)
    abstained = (bool(finding.get("abstained")) or state.get(OUTCOME) in ABSTAINING_OUTCOMES) and not failed
    return Answer(text=text, abstained=abstained, evidence=evidence,
                  used_documents=list(state.get(USED_DOCUMENTS, [])),
                  invalid_citations=list(state.get(INVALID_CITATIONS, [])),
                  citations=list(state.get(CITATIONS, [])), generator=state.get(GENERATOR), failed=failed,
                  abstention=finding)


def _judge_answer(record: EvalRecord, answer: Answer, judge: Any, answerable: bool,
                  degraded: bool = False) -> tuple[dict[str, Any], dict[str, Any]]:
    """The answer record (answer, citations, verdicts) and its per-query answer metrics.

    A degraded query (``evalkit.run.health``) is not judged: its answer is whatever the graph
    fell back to, so it gets only ``degraded = 1`` and stays out of every answer metric.
    """
    evidence = [[e.id, e.doc_id, round(float(e.score), 6)] for e in answer.evidence]
    texts_shown = [e.text for e in answer.evidence]  # what the judge read; MLflow traces carry it (track.traces)
    generation: dict[str, Any]
    if degraded:
        generation = {"answer": answer.text, "reference_answer": record.reference_answer,
                      "abstained": answer.abstained, "abstention": answer.abstention, "answered": False,
                      "degraded": True, "citations": list(answer.citations), "used_documents": [],
                      "invalid_citations": [], "evidence": evidence, "evidence_text": texts_shown,
                      "generator": answer.generator,
                      "judgement": None, "judge": None}
        return generation, {"degraded": 1.0}
    answered = answer.answered
    judgement = None
    if answered and judge is not None:
        texts = [(e.doc_id, e.text) for e in answer.evidence]
        t0 = time.perf_counter()
        try:
            judgement = judge.judge(record.question, answer.text, texts).to_dict()
        except Exception as exc:  # noqa: BLE001 - a judge failure is counted, never read as a verdict
            judgement = {"claims": [], "error": f"{type(exc).__name__}: {exc}"}
        record_usage("judge", Usage(latency_ms=(time.perf_counter() - t0) * 1000.0))
    correct = None
    grade = getattr(judge, "correctness", None)  # judges that can grade against the reference
    if answered and grade is not None and answerable and record.reference_answer:
        try:
            correct = grade(record.question, answer.text, record.reference_answer)
        except Exception as exc:  # noqa: BLE001 - counted like any judge failure, never a verdict
            correct = {"verdict": None, "reason": f"{type(exc).__name__}: {exc}"}
        judgement = {**(judgement or {"claims": [], "error": None}), "correctness": correct}
    findings = None
    if answered and judgement is not None and not judgement.get("error") and judgement.get("claims"):
        from evalkit.judges.base import JudgeResult
        from evalkit.judges.citation_support import judge_citations

        shown = [(e.id, e.doc_id, e.text) for e in answer.evidence]
        findings = [f.to_dict() for f in judge_citations(judge, record.question, answer.text, shown,
                                                         JudgeResult.from_dict(judgement))]
    generation = {"answer": answer.text, "reference_answer": record.reference_answer, "abstained": answer.abstained,
                  "abstention": answer.abstention, "answered": answered, "citation_findings": findings,
                  "citations": list(answer.citations), "used_documents": list(answer.used_documents),
                  "invalid_citations": list(answer.invalid_citations), "evidence": evidence,
                  "evidence_text": texts_shown, "generator": answer.generator, "judgement": judgement, "judge": getattr(judge, "identity", None)}
    scores = score_answer(answerable=answerable, answered=answered, abstained=answer.abstained,
                          judgement=judgement, answer=answer.text, reference=record.reference_answer,
                          cited_docs=generation["used_documents"],
                          invalid_citations=len(generation["invalid_citations"]), gold=record.relevant_doc_ids,
                          correctness=correct, citation_findings=findings)
    return generation, scores


def abstention_finding(answer: str, from_node: dict[str, Any] | None, rules: Any, failed: bool = False,
                       evidence: Sequence[str] = (), question: str | None = None) -> dict[str, Any]:
    """Whether an answer abstained, and why: the answer source's finding (the ``generate`` node
    applies the defaults and its own patterns), overridden by the eval set's patterns or its choice
    of learned stage (``model``, :mod:`evalkit.models.abstention`) when that decides; an answer
    source that records no finding gets the defaults (the rules, then the default stage) with the
    eval set's patterns. ``evidence``: the texts shown with the answer (a reply that only quotes
    them is left to the rules); ``question``: what was asked (a plain answer that does not give what it asks for
    is read at the stage's own threshold, :mod:`evalkit.text.asked_values`)."""
    found = dict(from_node or {})
    if failed and not answer:
        return found
    if not found or rules is not None:
        chosen = getattr(rules, "model", None)  # None: the eval set does not say
        mine = detect_abstention(answer, finish_reason=found.get("finish_reason"),
                                 extra_patterns=getattr(rules, "patterns", ()),
                                 not_patterns=getattr(rules, "not_patterns", ()), model=resolve(chosen),
                                 evidence=evidence, question=question)
        # the eval set decides with its own patterns, with a stage it names, or by turning off the stage that
        # decided at the node
        by_eval_set = (mine.by_user or (chosen is not None and mine.reason == "learned")
                       or (chosen == OFF and found.get("reason") == "learned"))
        if not found or by_eval_set:
            found = {**mine.to_dict(), "finish_reason": found.get("finish_reason"),
                     "source": "eval set" if by_eval_set else "defaults"}
    return found
