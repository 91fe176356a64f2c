"""evalkit.track.traces: each query's node trace read back from the sqlite store as an MLflow trace.

Fixture variant "guarded" (four queries, node traces as the engine records them):

    q1  retrieve -> rerank -> guard -> end        guard routes on guard_triggered=True
    q2  retrieve raises (message and wrote carry a secret)      outcome failed, trace ERROR
    q3  retrieve -> retrieve -> end               a node that runs twice: two spans
    q4  no trace events (nothing ran)             not traced, counted as skipped
    q5  retrieve (reused from another variant: pipeline latency 80 ms, 0.05 ms here) -> rerank (12 ms)
"""
from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from evalkit.records import EvalSetRef, QueryResult, RunSummary, VariantSummary
from evalkit.track import VariantLog, default_tracking_uri, log_invocation
from evalkit.track.traces import (
    PASSAGE_CHARS,
    bounded,
    build_spans,
    log_traces,
    mlflow_trace_id,
    scrub,
    secret_env_values,
    shorten,
)

T0 = 1_780_000_000.0  # started_at of the first node (epoch seconds)
SECRET = "sk-live-abcdef123456"
ENV_SECRET = "env-secret-value-42"


def _event(step: int, node: str, ntype: str, start: float, ms: float, wrote: dict, edge: str | None,
           reason: str = "default", error: dict | None = None, elapsed: float | None = None,
           reused: bool = False) -> dict:
    e = {"step": step, "node": node, "type": ntype, "started_at": T0 + start, "duration_ms": ms, "wrote": wrote,
         "edge": edge, "edge_reason": reason, "error": error, "reused": reused}
    return e if elapsed is None else {**e, "elapsed_ms": elapsed}


HITS = [[f"d{i}#0", f"d{i}", round(1 - i / 100, 3)] for i in range(30)]
TRACES = {
    "q1": [_event(0, "retrieve", "retrieve", 0.0, 12.5, {"retrieved": {"n": 100, "first": HITS}}, "rerank"),
           _event(1, "rerank", "rerank", 0.02, 40.0, {"reranked": HITS[:5], "rerank_model": "e5"}, "guard"),
           _event(2, "guard", "guard", 0.07, 0.5, {"guard_triggered": True, "outcome": "no_reliable_evidence"},
                  "end", "condition guard_triggered=True")],
    "q2": [_event(0, "retrieve", "retrieve", 1.0, 3.0, {"api_key": SECRET}, None, "error",
                  {"type": "AuthError", "message": f"401 with Authorization: Bearer {SECRET} and {ENV_SECRET}"})],
    "q3": [_event(0, "retrieve", "retrieve", 2.0, 1.0, {"retrieved": HITS[:2]}, "retrieve", "next()"),
           _event(1, "retrieve", "retrieve", 2.0, 1.0, {"retrieved": HITS[:3]}, "end")],
    "q4": [],
    "q5": [_event(0, "retrieve", "retrieve", 3.0, 80.0, {"retrieved": HITS[:2]}, "rerank", elapsed=0.05, reused=True),
           _event(1, "rerank", "rerank", 3.0001, 12.0, {"reranked": HITS[:2]}, "end", elapsed=12.0)],
}


def _results() -> list[QueryResult]:
    out = []
    for qid, trace in TRACES.items():
        failed = qid == "q2"
        out.append(QueryResult(
            query_id=qid, question=f"what about {qid}?", gold_doc_ids=["d1"],
            retrieved=[{"doc_id": f"d{i}", "score": 1.0 - i / 10} for i in range(3)], reranked=[],
            metrics={"hit@5": 0.0 if failed else 1.0, "recall@20": 0.5, "mrr": 0.3}, trace=trace,
            error={"node": "retrieve", "step": 0, "type": "AuthError", "message": f"key {SECRET}"} if failed else None,
            outcome="failed" if failed else "completed", generation=GENERATED.get(qid)))
    return out


PASSAGE = "Leave is ten days. " * 105 + SECRET + " tail" * 10   # over PASSAGE_CHARS, a secret across the cut (1995)
GENERATED = {"q3": {"answer": "Ten days. " * 50, "evidence": [["d1#0", "d1", 0.9], ["d1#1", "d1", 0.8]],
                    "evidence_text": [PASSAGE, "Short one."]}}


def _log(tmp: Path, **kw) -> tuple[dict, VariantLog]:
    results = _results()
    per_query = tmp / "run" / "guarded" / "per_query.jsonl"
    per_query.parent.mkdir(parents=True, exist_ok=True)
    per_query.write_text("".join(json.dumps(r.to_dict()) + "\n" for r in results))
    summary = VariantSummary(metrics={"hit@5": 0.75}, n_failed=1, n_queries=4, n_excluded=0)
    v = VariantLog(name="guarded", params={"nodes.guard.params.threshold": "0.8"}, config_yaml="name: guarded\n",
                   summary=summary, results=results, per_query_path=per_query)
    run = RunSummary(eval_set=EvalSetRef(name="tiny", version=1, sha256="e" * 64, n_queries=4),
                     variants={"guarded": summary})
    return log_invocation(run, [v], tmp, experiment="traces", **kw), v


@pytest.fixture(scope="module")
def logged(tmp_path_factory):
    """One invocation with traces on, read back through MlflowClient.search_traces."""
    from mlflow import MlflowClient

    mp = pytest.MonkeyPatch()
    mp.setenv("OPENAI_API_KEY", ENV_SECRET)
    try:
        tmp = tmp_path_factory.mktemp("traces")
        out, v = _log(tmp)
    finally:
        mp.undo()
    client = MlflowClient(tracking_uri=out["tracking_uri"])
    traces = client.search_traces(locations=[out["experiment_id"]], run_id=v.summary.mlflow_run_id,
                                  max_results=100, order_by=["timestamp ASC"])
    return client, out, v, {t.info.tags["mlflow.traceName"]: t for t in traces}


# ---------------------------------------------------------------------------- read back


def test_one_trace_per_traced_query_linked_to_the_variant_run(logged):
    client, out, v, traces = logged
    assert set(traces) == {"q1", "q2", "q3", "q5"}              # q4 has no trace events
    run = client.get_run(v.summary.mlflow_run_id)
    assert run.info.status == "FINISHED"
    assert run.data.tags["evalkit.traces"] == "logged 4 trace(s), 1 query(s) not traced"
    assert traces["q1"].info.trace_id == mlflow_trace_id(v.summary.mlflow_run_id, "q1")
    parent_traces = client.search_traces(locations=[out["experiment_id"]], run_id=out["parent_run_id"])
    assert len(parent_traces) == 0                               # linked to the child run only


def test_span_names_and_order_follow_the_node_path(logged):
    _, _, _, traces = logged
    for qid, expected in (("q1", ["retrieve", "rerank", "guard"]), ("q2", ["retrieve"]), ("q3", ["retrieve"] * 2)):
        spans = traces[qid].data.spans
        root = [s for s in spans if s.parent_id is None]
        assert len(root) == 1 and root[0].name == "guarded"
        children = sorted((s for s in spans if s.parent_id is not None and s.name != "documents"),
                          key=lambda s: s.start_time_ns)
        assert [s.name for s in children] == expected
        assert [s.attributes["evalkit.step"] for s in children] == list(range(len(expected)))
        assert all(s.parent_id == root[0].span_id for s in children)
    assert traces["q1"].info.tags["evalkit.path"] == "retrieve>rerank>guard"


def test_span_times_come_from_the_engine_trace(logged):
    _, _, _, traces = logged
    spans = {s.name: s for s in traces["q1"].data.spans}
    assert spans["retrieve"].start_time_ns == int(T0 * 1e9)
    assert spans["rerank"].end_time_ns - spans["rerank"].start_time_ns == 40_000_000
    root = spans["guarded"]
    assert root.start_time_ns == spans["retrieve"].start_time_ns and root.end_time_ns == spans["guard"].end_time_ns


def test_span_attributes_edges_and_outputs(logged):
    _, _, _, traces = logged
    spans = {s.name: s for s in traces["q1"].data.spans}
    guard = spans["guard"]
    assert guard.span_type == "GUARDRAIL" and spans["retrieve"].span_type == "CHAIN"   # the RETRIEVER is "documents"
    assert guard.attributes["evalkit.node_type"] == "guard"
    assert guard.attributes["evalkit.edge"] == "end"
    assert guard.attributes["evalkit.edge_reason"] == "condition guard_triggered=True"
    assert guard.attributes["evalkit.duration_ms"] == 0.5
    assert guard.outputs == {"wrote": {"guard_triggered": True, "outcome": "no_reliable_evidence"}}
    assert guard.inputs == {"query_id": "q1", "step": 2, "from": "rerank"}
    retrieved = spans["retrieve"].outputs["wrote"]["retrieved"]
    assert retrieved["n"] == 100 and len(retrieved["first"]) == 10   # shortened, total kept
    root = spans["guarded"]
    assert root.inputs == {"query_id": "q1", "question": "what about q1?"}
    assert root.outputs["outcome"] == "completed" and root.outputs["retrieved"] == ["d0", "d1", "d2"]
    assert root.attributes["evalkit.metrics"] == {"hit@5": 1.0, "recall@20": 0.5, "mrr": 0.3}
    assert traces["q1"].info.state.value == "OK"


def test_reused_span_lasts_its_real_time_and_keeps_the_pipeline_latency(logged):
    _, _, _, traces = logged
    spans = {s.name: s for s in traces["q5"].data.spans}
    root, retrieve, rerank = spans["guarded"], spans["retrieve"], spans["rerank"]
    assert retrieve.end_time_ns - retrieve.start_time_ns == 50_000            # 0.05 ms: it ran elsewhere
    assert retrieve.attributes["evalkit.reused"] is True and retrieve.attributes["evalkit.duration_ms"] == 80.0
    assert retrieve.attributes["evalkit.elapsed_ms"] == 0.05
    assert rerank.attributes["evalkit.reused"] is False and rerank.end_time_ns - rerank.start_time_ns == 12_000_000
    for child in (retrieve, rerank):                                      # children inside their root
        assert root.start_time_ns <= child.start_time_ns and child.end_time_ns <= root.end_time_ns
    # with the pipeline latency (80 ms) the reused span would have overflowed the root (which ends at
    # rerank's end, 0.1 ms + 12 ms after the start)
    assert root.end_time_ns - root.start_time_ns < 80_000_000


def test_every_trace_carries_its_metrics_as_filterable_assessments(logged):
    client, out, v, traces = logged
    for qid, t in traces.items():
        got = {a.name: a.value for a in t.info.assessments if a.name != "expected_document_ids"}
        assert [a.value for a in t.info.assessments if a.name == "expected_document_ids"] == [["d1"]]
        # hit@5 and recall@20 are retrieval metrics of the registry; "mrr" (no cutoff) is not a metric name
        assert got == {"hit_at_5": 0.0 if qid == "q2" else 1.0, "recall_at_20": 0.5}
        for a in t.info.assessments:
            assert a.source.source_type == "CODE" and a.source.source_id == "evalkit"
            assert a.run_id == v.summary.mlflow_run_id
            assert a.span_id == next(s.span_id for s in t.data.spans if s.parent_id is None)
    misses = client.search_traces(locations=[out["experiment_id"]], filter_string="feedback.hit_at_5 < 1")
    assert [t.info.tags["mlflow.traceName"] for t in misses] == ["q2"]
    ordered = client.search_traces(locations=[out["experiment_id"]], filter_string="feedback.hit_at_5 >= 1",
                                   order_by=["timestamp ASC"])
    assert [t.info.tags["mlflow.traceName"] for t in ordered] == ["q1", "q3", "q5"]
    assert traces["q1"].info.tags["evalkit.outcome"] == "completed" and traces["q1"].info.tags["evalkit.variant"] == "guarded"


def test_errors_mark_span_and_trace(logged):
    _, _, _, traces = logged
    t = traces["q2"]
    node = next(s for s in t.data.spans if s.name == "retrieve")
    assert node.status.status_code.value == "ERROR" and node.attributes["evalkit.edge_reason"] == "error"
    assert node.attributes["evalkit.error"].startswith("AuthError: 401")
    assert t.info.state.value == "ERROR" and t.info.tags["evalkit.outcome"] == "failed"


def test_no_secrets_in_spans(logged):
    _, _, _, traces = logged
    dumped = json.dumps([t.to_dict() for t in traces.values()])
    assert SECRET not in dumped and ENV_SECRET not in dumped
    node = next(s for s in traces["q2"].data.spans if s.name == "retrieve")
    assert node.outputs == {"wrote": {"api_key": "***"}}


def test_limit_caps_traces_per_variant(tmp_path: Path):
    from mlflow import MlflowClient

    out, v = _log(tmp_path, trace_limit=1)
    client = MlflowClient(tracking_uri=out["tracking_uri"])
    traces = client.search_traces(locations=[out["experiment_id"]], run_id=v.summary.mlflow_run_id)
    assert [t.info.tags["mlflow.traceName"] for t in traces] == ["q1"]
    assert client.get_run(v.summary.mlflow_run_id).data.tags["evalkit.traces"] == (
        "logged 1 trace(s), 4 query(s) not traced (every query, at most 1)")


def test_traces_off(tmp_path: Path):
    from mlflow import MlflowClient

    out, v = _log(tmp_path, traces=False)
    client = MlflowClient(tracking_uri=out["tracking_uri"])
    assert len(client.search_traces(locations=[out["experiment_id"]])) == 0
    assert "evalkit.traces" not in client.get_run(v.summary.mlflow_run_id).data.tags


def test_trace_failure_only_warns(tmp_path: Path, monkeypatch, caplog):
    from mlflow import MlflowClient

    import evalkit.track.traces as traces_mod

    def broken(*a, **k):
        raise RuntimeError("store refused spans")

    monkeypatch.setattr(traces_mod, "log_traces", broken)
    out, v = _log(tmp_path)
    run = MlflowClient(tracking_uri=out["tracking_uri"]).get_run(v.summary.mlflow_run_id)
    assert run.info.status == "FINISHED"
    assert run.data.tags["evalkit.traces"] == "failed: RuntimeError: store refused spans"
    assert "traces not logged" in caplog.text


def test_log_traces_writes_to_the_given_store_only(tmp_path: Path, monkeypatch):
    """The explicit URI is used; nothing lands in the global tracking URI (the fluent exporter's trap)."""
    import mlflow
    from mlflow import MlflowClient

    monkeypatch.chdir(tmp_path)
    uri = default_tracking_uri(tmp_path / "store")
    (tmp_path / "store").mkdir()
    client = MlflowClient(tracking_uri=uri)
    exp = client.create_experiment("direct", artifact_location=(tmp_path / "art").as_uri())
    run_id = client.create_run(exp).info.run_id
    cpu = time.process_time()
    done = log_traces(uri, exp, run_id, "v", _results(), batch=2)   # two log_spans requests
    cpu = time.process_time() - cpu
    assert done.logged == 4 and done.skipped == 1 and len(done.trace_ids) == 4
    assert 0 < done.store_cpu <= cpu        # MLflow's calls: a part of the call's CPU, not all of it
    assert len(client.search_traces(locations=[exp], run_id=run_id)) == 4
    assert not (tmp_path / "mlflow.db").exists() and mlflow.get_tracking_uri() != uri


# ---------------------------------------------------------------------------- pure helpers


def test_shorten_cuts_lists_and_strings():
    assert shorten(list(range(12)), max_items=3) == {"n": 12, "first": [0, 1, 2]}
    assert shorten({"n": 100, "first": list(range(20))}, max_items=2) == {"n": 100, "first": [0, 1]}
    assert shorten("x" * 20, max_string=5) == "xxxxx...(20 chars)"
    assert shorten({"a": [1, 2]}) == {"a": [1, 2]}


def test_scrub_masks_keys_tokens_and_env_values():
    got = scrub({"llm": {"api_key": "abc", "max_tokens": 5}, "msg": f"token={SECRET} Bearer abcdefghijk",
                 "notes": ["my value env-secret-value-42"], "url": "http://user:pw123@host/v1?api_key=zz&x=1",
                 "err": "login failed: password=hunter2, retry"}, secrets=[ENV_SECRET])
    assert got == {"llm": {"api_key": "***", "max_tokens": 5}, "msg": "token=*** Bearer ***", "notes": ["my value ***"],
                   "url": "http://***@host/v1?api_key=***&x=1", "err": "login failed: password=***, retry"}
    assert secret_env_values({"OPENAI_API_KEY": "sk-123456", "PATH": "/usr/bin", "HF_TOKEN": "x"}) == ["sk-123456"]


def test_bounded_keeps_small_values_and_previews_large_ones():
    assert bounded({"a": 1}) == {"a": 1}
    big = bounded({"a": "x" * 5000}, max_json=100)
    assert big["truncated"] is True and big["json_chars"] > 5000 and len(big["preview"]) == 100


def test_build_spans_is_deterministic_and_skips_empty_traces():
    r = _results()
    a, b = build_spans(r[0], "v", "run1"), build_spans(r[0], "v", "run1")
    assert [s.span_id for s in a] == [s.span_id for s in b] and a[0].trace_id == mlflow_trace_id("run1", "q1")
    assert build_spans(r[0], "v", "run2")[0].trace_id != a[0].trace_id
    assert build_spans(r[3], "v", "run1") == []


# ---------------------------------------------------------------------------- real server


@pytest.fixture(scope="module")
def server_url(tmp_path_factory):
    """``mlflow server`` (sqlite store) on a free port; SIGTERM to its process group on teardown."""
    import os
    import signal
    import socket
    import subprocess
    import sys
    import time
    import urllib.request

    tmp = tmp_path_factory.mktemp("trace-server")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false", "MLFLOW_DISABLE_TELEMETRY": "true"}
    log = (tmp / "server.log").open("wb")
    proc = subprocess.Popen([str(Path(sys.executable).parent / "mlflow"), "server", "--backend-store-uri",
                             f"sqlite:///{(tmp / 'srv.db').as_posix()}", "--artifacts-destination", str(tmp / "art"),
                             "--host", "127.0.0.1", "--port", str(port), "--workers", "1"],
                            stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"mlflow server did not start:\n{(tmp / 'server.log').read_text(errors='replace')[-3000:]}")
            try:
                with urllib.request.urlopen(f"{url}/health", timeout=2):
                    break
            except OSError:
                time.sleep(0.25)
        yield url
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
        log.close()


@pytest.mark.integration
def test_traces_through_a_real_server(server_url, tmp_path: Path, monkeypatch):
    """The REST path (OTLP span ingestion + trace/run links) works like the embedded store."""
    from mlflow import MlflowClient

    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "2")
    out, v = _log(tmp_path, tracking_uri=server_url)
    client = MlflowClient(tracking_uri=server_url)
    traces = client.search_traces(locations=[out["experiment_id"]], run_id=v.summary.mlflow_run_id)
    by_name = {t.info.tags["mlflow.traceName"]: t for t in traces}
    assert set(by_name) == {"q1", "q2", "q3", "q5"}
    spans = sorted((s for s in by_name["q1"].data.spans if s.parent_id and s.name != "documents"),
                   key=lambda s: s.start_time_ns)
    assert [s.name for s in spans] == ["retrieve", "rerank", "guard"]
    assert not (tmp_path / "mlflow.db").exists()


def test_mask_jsonl_equals_masking_every_record():
    """The fast path (distinct strings masked once) gives exactly what masking each record does."""
    from evalkit.track.secrets import mask_jsonl, mask_records

    records = [{"q": "see http://u:pw1234@host/v1?api_key=abc&x=1", "ids": ["d1", "d1", "sk-live-0123456789abcdefghij"],
                "n": 3, "s": 'quote " and \\\\ and 中文 password=hunter2'},
               {"q": "clean", "ids": ["d1"], "nested": {"x": [1.5, None, True]}}]
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    assert mask_jsonl(text) == mask_records(records)
    assert "hunter2" not in mask_jsonl(text) and "pw1234" not in mask_jsonl(text) and "sk-live" not in mask_jsonl(text)
    clean = json.dumps({"q": "nothing secret", "ids": ["d1"]}) + "\n"
    assert mask_jsonl(clean) == clean                                    # untouched, byte for byte
    keyed = [{"llm": {"api_key": "plain-value", "max_tokens": 5}}]         # a secret-named key: structural path
    keyed_text = json.dumps(keyed[0]) + "\n"
    assert mask_jsonl(keyed_text) == mask_records(keyed) and "plain-value" not in mask_jsonl(keyed_text)


def test_masking_reads_the_secret_environment_once_and_still_masks_it(monkeypatch):
    """The fast paths read the secret variables' values once per call and mask them everywhere."""
    from evalkit.track import secrets as sec

    monkeypatch.setenv("MY_SERVICE_API_KEY", "plainvalue-0042")        # no recognisable key shape
    calls = []
    real = sec.secret_env_values
    monkeypatch.setattr(sec, "secret_env_values", lambda *a: calls.append(1) or real(*a))
    records = [{"q": f"used plainvalue-0042 here #{i}", "ids": [f"d{i}"]} for i in range(50)]
    text = "".join(json.dumps(r) + "\n" for r in records)
    for masked in (sec.mask_jsonl(text), sec.mask_records(records), sec.scrub_json(records), json.dumps(sec.scrub(records))):
        assert "plainvalue-0042" not in masked and masked.count("***") == 50
    assert len(calls) == 4                                               # once per call, not once per string
    assert sec.mask_text("key plainvalue-0042") == "key ***"              # alone, it reads them itself
    r = _results()[0]
    r.question = "why plainvalue-0042?"
    assert "plainvalue-0042" not in json.dumps([s.to_dict() for s in build_spans(r, "v", "run1")])


def test_the_misses_policy_traces_every_miss_and_a_few_examples():
    from evalkit.track.traces import select_traced

    def r(qid: str, hit: float | None, error: bool = False, hallucinated: float | None = None) -> QueryResult:
        metrics = {} if hit is None else {"hit@5": hit, "recall@20": hit}
        if hallucinated is not None:
            metrics["hallucinated"] = hallucinated
        return QueryResult(query_id=qid, question="?", gold_doc_ids=["d"], retrieved=[], reranked=[], metrics=metrics,
                           trace=[], error={"node": "x"} if error else None)

    results = [r(f"ok{i}", 1.0) for i in range(5)] + [r("miss", 0.0), r("boom", None, error=True),
                                                      r("made_up", 1.0, hallucinated=1.0), r("ok9", 1.0)]
    chosen, phrase = select_traced(results, "misses", examples=2)
    assert [x.query_id for x in chosen] == ["ok0", "ok1", "miss", "boom", "made_up"]      # eval-set order
    assert phrase == "the 3 misses/failures and the first 2 others"
    assert [x.query_id for x in select_traced(results, "all")[0]] == [x.query_id for x in results]
    assert len(select_traced(results, "misses", limit=3, examples=2)[0]) == 3
    with pytest.raises(ValueError, match="misses, all"):
        select_traced(results, "some")


def test_documents_span_holds_the_evidence_texts_cut_and_masked_or_the_ranking_ids(logged):
    _, _, _, traces = logged
    docs = {qid: [s for s in t.data.spans if s.span_type == "RETRIEVER"] for qid, t in traces.items()}
    assert all([s.name for s in spans] == ["documents"] for spans in docs.values())   # one RETRIEVER span each
    q3 = docs["q3"][0].outputs
    assert [d["id"] for d in q3] == ["d1", "d1"] and [d["metadata"]["chunk_id"] for d in q3] == ["d1#0", "d1#1"]
    assert len(q3[0]["page_content"]) == PASSAGE_CHARS and q3[0]["metadata"]["chars"] > PASSAGE_CHARS
    assert q3[1]["page_content"] == "Short one."
    assert SECRET[:5] not in json.dumps(q3)                          # masked before the cut, never half kept
    root = next(s for s in traces["q3"].data.spans if s.parent_id is None)
    assert json.loads(traces["q3"].data.response)["answer"] == "Ten days. " * 50   # whole up to TEXT_CHARS
    assert json.loads(traces["q3"].data.request)["question"] == "what about q3?" and root.outputs["answer"]
    q1 = docs["q1"][0].outputs                                        # retrieval only: the ranking's ids, no text
    assert [d["id"] for d in q1] == ["d0", "d1", "d2"] and all("page_content" not in d for d in q1)
