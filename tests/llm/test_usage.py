"""``Usage``: finish-reason counts beside the counters, through scopes, deltas, replays and files."""
from __future__ import annotations

from evalkit.llm.usage import Usage, flat, record, replay, usage_delta, usage_scope, usage_snapshot
from evalkit.records import QueryResult
from evalkit.run.summarise import usage_totals


def test_finish_reasons_add_and_round_trip_through_the_flat_dict():
    u = Usage(calls=2, tokens_out=7, finish_reasons={"stop": 1, "length": 1})
    u.add(Usage(calls=1, finish_reasons={"length": 1, "content_filter": 1}))
    assert u.calls == 3 and u.finish_reasons == {"stop": 1, "length": 2, "content_filter": 1}
    d = u.to_dict()
    assert d["finish_reason.length"] == 2 and d["finish_reason.content_filter"] == 1 and d["calls"] == 3
    assert all(isinstance(v, (int, float)) for v in d.values())  # MLflow and the reports sum numbers only
    assert Usage.from_dict(d) == u


def test_delta_and_trace_view_count_only_what_happened_in_between():
    with usage_scope():
        record("generate", Usage(calls=1, finish_reasons={"stop": 1}))
        before = usage_snapshot()
        record("generate", Usage(calls=1, finish_reasons={"length": 1}))
        record("judge", Usage(calls=1, finish_reasons={"stop": 1}))
        delta = usage_delta(before)
    assert delta["generate"].finish_reasons == {"length": 1} and delta["generate"].calls == 1
    assert flat(delta)["finish_reason.length"] == 1 and flat(delta)["finish_reason.stop"] == 1


def test_a_replayed_node_result_keeps_its_finish_reasons():
    with usage_scope() as totals:
        replay({"generate": Usage(calls=2, tokens_out=9, latency_ms=50.0, finish_reasons={"length": 2})})
    u = totals["generate"]
    assert (u.calls, u.cache_hits, u.latency_ms, u.finish_reasons) == (2, 2, 0.0, {"length": 2})


def test_variant_totals_sum_finish_reasons_over_queries():
    def result(qid: str, usage: dict) -> QueryResult:
        return QueryResult(query_id=qid, question="q", gold_doc_ids=[], retrieved=[], reranked=[], metrics={},
                           trace=[], usage=usage)

    results = [result("a", {"generate": Usage(calls=1, finish_reasons={"stop": 1}).to_dict()}),
               result("b", {"generate": Usage(calls=2, finish_reasons={"length": 1, "stop": 1}).to_dict(),
                            "judge": Usage(calls=1, finish_reasons={"content_filter": 1}).to_dict()}),
               result("c", {"generate": {"calls": 1}})]  # a record written before finish reasons existed
    totals = usage_totals(results)
    assert totals["generate"]["calls"] == 4
    assert totals["generate"]["finish_reason.stop"] == 2 and totals["generate"]["finish_reason.length"] == 1
    assert totals["judge"]["finish_reason.content_filter"] == 1


def test_finish_reason_counts_reach_the_mlflow_metrics():
    from evalkit.records import VariantSummary
    from evalkit.track.mlflow_log import variant_metrics

    usage = {"generate": Usage(calls=3, finish_reasons={"length": 1, "content_filter": 2}).to_dict()}
    metrics = variant_metrics(VariantSummary(metrics={}, n_failed=0, n_queries=3, n_excluded=0, usage=usage))
    assert metrics["usage.generate.finish_reason.length"] == 1.0
    assert metrics["usage.generate.finish_reason.content_filter"] == 2.0
