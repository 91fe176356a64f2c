"""Rescue accounting from traces: per-attempt ground truth, rescued / harmed / futile, loop cost."""
from __future__ import annotations

import pytest

from evalkit.metrics.agentic import (
    add_loop_metrics,
    aggregate_loops,
    attempt_rankings,
    final_good,
    query_loop_metrics,
)
from evalkit.records import QueryResult


def ev(type_: str, attempt: int, wrote: dict | None = None, ms: float = 10.0, llm: dict | None = None) -> dict:
    return {"step": 0, "node": type_, "type": type_, "started_at": 0.0, "duration_ms": ms, "wrote": wrote or {},
            "edge": None, "edge_reason": "default", "error": None, "attempt": attempt, "llm": llm, "reused": False}


def ranking(*docs: str) -> list[list]:
    return [[f"{d}#0", d, 1.0 / (i + 1)] for i, d in enumerate(docs)]


def attempt(n: int, docs: tuple[str, ...], decision: str, ms: float = 10.0, llm: dict | None = None) -> list[dict]:
    return [ev("query_rewrite", n, {"attempt": n, "rewrite_futile": False}, ms),
            ev("retrieve", n, {"retrieved": ranking(*docs)}, ms),
            ev("grade", n, {"grade_decision": decision}, ms, llm)]


def result(trace: list[dict], gold: list[str], final: tuple[str, ...], generation: dict | None,
           metrics: dict | None = None, qid: str = "q", outcome: str | None = None) -> QueryResult:
    return QueryResult(query_id=qid, question="?", gold_doc_ids=gold, retrieved=[], metrics=dict(metrics or {}),
                       reranked=[{"doc_id": d, "score": 1.0} for d in final], trace=trace, generation=generation,
                       outcome=outcome)


ANSWERED = {"answered": True, "abstained": False}
SUPPORTED = {"answered": 1.0, "abstained": 0.0, "claims_unsupported": 0.0, "hallucinated": 0.0}
REFUSED = {"answered": False, "abstained": True}
NOISE = ("n1", "n2", "n3", "n4", "n5")


def rescued() -> QueryResult:
    # attempt 1 misses the gold document and fails the gate; attempt 2 finds it; the answer is supported
    trace = attempt(1, NOISE, "rewrite") + attempt(2, ("g", *NOISE), "generate", ms=20.0,
                                                   llm={"calls": 2, "tokens_in": 30, "tokens_out": 5})
    trace.append(ev("generate", 2, {"answer": "..."}, 5.0))
    return result(trace, ["g"], ("g", *NOISE), ANSWERED, SUPPORTED, "rescued")


def harmed() -> QueryResult:
    # unanswerable: the gate refused attempt 1 (stopping there, the fallback refuses: correct); the loop found
    # look-alike passages on attempt 2, passed the gate and answered: a hallucination the loop caused
    trace = attempt(1, NOISE, "rewrite") + attempt(2, NOISE, "generate") + [ev("generate", 2, {"answer": "..."})]
    return result(trace, [], NOISE, ANSWERED, {"answered": 1.0, "abstained": 0.0, "hallucinated": 1.0}, "harmed",
                  "answered")


def lost_gold() -> QueryResult:
    # attempt 1 had the gold document (the gate said no anyway); the loop ended in the fallback. Stopping after
    # attempt 1 would have ended in the fallback too: the loop changed nothing (futile), the gate refused
    trace = attempt(1, ("g", *NOISE), "rewrite") + attempt(2, NOISE, "fallback") + [ev("fallback", 2)]
    return result(trace, ["g"], NOISE, REFUSED, {"answered": 0.0, "abstained": 1.0}, "lost_gold", "fallback")


def futile() -> QueryResult:
    trace = attempt(1, NOISE, "rewrite") + attempt(2, NOISE, "rewrite") + attempt(3, NOISE, "fallback")
    return result(trace, ["g"], NOISE, REFUSED, {"answered": 0.0, "abstained": 1.0}, "futile", "fallback")


def straight() -> QueryResult:
    trace = attempt(1, ("g", *NOISE), "generate") + [ev("generate", 1)]
    return result(trace, ["g"], ("g",), ANSWERED, SUPPORTED, "straight")


def unanswerable_refused() -> QueryResult:
    trace = attempt(1, NOISE, "rewrite") + attempt(2, NOISE, "fallback") + [ev("fallback", 2)]
    return result(trace, [], NOISE, REFUSED, {"answered": 0.0, "abstained": 1.0}, "unans", "fallback")


def test_per_attempt_rankings_come_from_the_trace():
    r = rescued()
    assert attempt_rankings(r.trace) == {1: (list(NOISE), list(NOISE)), 2: (["g", *NOISE], ["g", *NOISE])}
    # a rerank event gives the final ranking of its attempt; events before the first rewrite are attempt 1
    trace = [ev("retrieve", 0, {"retrieved": ranking("a", "b")}), ev("rerank", 0, {"reranked": ranking("b", "a")})]
    assert attempt_rankings(trace) == {1: (["a", "b"], ["b", "a"])}
    # compacted long lists ({"n": ..., "first": [...]}) are read too
    assert attempt_rankings([ev("retrieve", 1, {"retrieved": {"n": 150, "first": ranking("a")}})]) == {1: (["a"], ["a"])}


def test_rescued_query():
    m = query_loop_metrics(rescued())
    assert m["attempts"] == 2.0 and m["looped"] == 1.0 and m["gate_failed_first"] == 1.0
    assert m["first_attempt_hit@5"] == 0.0 and m["attempt2_hit@5"] == 1.0 and m["attempt2_recall@20"] == 1.0
    assert (m["rescued"], m["rescued_new_docs"], m["harmed"], m["futile"]) == (1.0, 1.0, 0.0, 0.0)
    # the loop's extra cost: the three attempt-2 events (20 ms each) plus generate (5 ms)
    assert m["loop_ms"] == 65.0 and m["loop_llm_calls"] == 2.0 and m["loop_tokens"] == 35.0


def test_harmed_futile_and_straight_queries():
    h = query_loop_metrics(harmed())
    assert (h["rescued"], h["harmed"], h["futile"]) == (0.0, 1.0, 0.0)
    assert (h["final_good"], h["counterfactual_good"]) == (0.0, 1.0)
    lost = query_loop_metrics(lost_gold())
    assert (lost["rescued"], lost["harmed"], lost["futile"]) == (0.0, 0.0, 1.0) and lost["first_attempt_hit@5"] == 1.0
    assert lost["gate_refused"] == 1.0
    f = query_loop_metrics(futile())
    assert (f["rescued"], f["harmed"], f["futile"]) == (0.0, 0.0, 1.0) and f["attempts"] == 3.0
    assert f["attempt3_hit@5"] == 0.0
    s = query_loop_metrics(straight())
    assert s["looped"] == 0.0 and (s["rescued"], s["harmed"], s["futile"]) == (0.0, 0.0, 0.0) and s["loop_ms"] == 0


def test_good_outcome_needs_a_supported_answer_or_a_correct_abstention():
    assert final_good(rescued()) is True
    unsupported = rescued()
    unsupported.metrics.update(claims_unsupported=1.0, hallucinated=1.0)
    assert final_good(unsupported) is False
    failed_judge = rescued()
    failed_judge.metrics["judge_failed"] = 1.0
    assert final_good(failed_judge) is None and query_loop_metrics(failed_judge)["rescued"] is None
    assert final_good(unanswerable_refused()) is True
    retrieval_only = rescued()
    retrieval_only.generation = None
    assert final_good(retrieval_only) is True
    unanswerable_retrieval = unanswerable_refused()
    unanswerable_retrieval.generation = None
    assert final_good(unanswerable_retrieval) is None  # undefined: left out of the counts


def test_an_unanswerable_question_refused_on_attempt_1_is_a_gate_refusal_not_a_rescue():
    # the gate refused it on attempt 1 and it ended in the fallback: max_attempts 1 gives the same refusal
    m = query_loop_metrics(unanswerable_refused())
    assert (m["rescued"], m["harmed"], m["futile"]) == (0.0, 0.0, 1.0) and m["first_attempt_hit@5"] is None
    assert (m["final_good"], m["counterfactual_good"], m["gate_refused"]) == (1.0, 1.0, 1.0)


def test_a_gate_that_would_generate_when_exhausted_leaves_the_counterfactual_undetermined():
    r = unanswerable_refused()
    r.trace[2]["wrote"]["grade_if_last"] = "generate"  # on_exhausted: generate, with kept evidence
    m = query_loop_metrics(r)
    assert m["counterfactual_good"] is None and m["rescued"] is None and m["loop_undetermined"] == 1.0


def test_retrieval_only_counterfactual_is_the_first_attempt_ranking():
    r = rescued()
    r.generation = None
    m = query_loop_metrics(r)
    assert (m["final_good"], m["counterfactual_good"], m["rescued"]) == (1.0, 0.0, 1.0)


def test_variant_aggregates_counts_rates_and_cost_per_rescue():
    rows = [rescued(), harmed(), lost_gold(), futile(), straight(), unanswerable_refused()]
    agg = aggregate_loops(rows)
    assert agg["loop_rate"] == pytest.approx(5 / 6) and agg["attempts_mean"] == pytest.approx(12 / 6)
    assert (agg["rescued"], agg["rescued_new_docs"], agg["harmed"], agg["futile"]) == (1.0, 1.0, 1.0, 3.0)
    assert agg["rescue_rate"] == pytest.approx(1 / 5) and agg["harm_rate"] == pytest.approx(1 / 5)
    assert agg["futile_rate"] == pytest.approx(3 / 5) and agg["loop_undetermined"] == 0.0
    assert (agg["gate_refusals"], agg["gate_refusals_unanswerable"]) == (3.0, 1.0)  # lost_gold, futile, unans
    assert agg["gate_fail_rate_first"] == pytest.approx(5 / 6)
    assert agg["first_attempt_hit@5"] == pytest.approx(2 / 4)  # answerable queries only
    assert agg["attempt2_queries"] == 5.0 and agg["attempt3_queries"] == 1.0
    loop_ms = 65.0 + 40.0 + 40.0 + 60.0 + 40.0  # events of attempts >= 2 (generate / fallback included)
    assert agg["loop_ms"] == pytest.approx(loop_ms) and agg["loop_ms_per_rescue"] == pytest.approx(loop_ms / 1)
    assert agg["loop_llm_calls"] == 2.0 and agg["loop_llm_calls_per_rescue"] == 2.0
    assert all(isinstance(v, float) for v in agg.values())


def test_per_query_values_are_added_once_and_are_floats_or_none():
    rows = [rescued(), straight()]
    add_loop_metrics(rows)
    add_loop_metrics(rows)
    assert rows[0].metrics["rescued"] == 1.0 and rows[0].metrics["hallucinated"] == 0.0  # answer metrics kept
    assert all(v is None or isinstance(v, float) for r in rows for v in r.metrics.values())


def test_graphs_without_agentic_nodes_get_nothing_and_routers_get_shares():
    plain = result([ev("retrieve", 0, {"retrieved": ranking("g")})], ["g"], ("g",), None)
    assert query_loop_metrics(plain) == {} and aggregate_loops([plain]) == {}
    routed = [result([ev("intent_router", 0, {"route": label, **extra}), ev("retrieve", 0)], ["g"], ("g",), None)
              for label, extra in (("keyword", {}), ("vector", {"llm_fallback": {"kind": "server_error"}}))]
    assert query_loop_metrics(routed[1]) == {"llm_fallbacks": 1.0}
    assert aggregate_loops(routed) == {"llm_fallbacks": 1.0, "route_share.keyword": 0.5, "route_share.vector": 0.5}
