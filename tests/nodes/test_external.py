"""The ``http`` and ``python`` nodes against a real local service (``examples/byo_service.py``).

The service runs BM25 (rank-bm25, whole documents) over the demo corpus on 127.0.0.1 and
optionally answers extractively. Its numbers are recomputed independently: pytrec_eval on
the rankings the service returns when asked directly, and ``evalkit score --answers`` on
its answers. Faults: the service down, slow past the deadline, dripping bytes, 429 with
Retry-After, 500, not JSON; concurrency cap, cache, secrets, config errors.
"""
from __future__ import annotations

import importlib.util
import json
import sys
import time
from pathlib import Path

import pytest
import pytrec_eval

from evalkit.errors import ConfigError
from evalkit.evalsets import load_eval_set
from evalkit.graph import config_from_dict
from evalkit.graph.config import load_graph_config
from evalkit.nodes.external import ExternalCallError, HttpGenerateParams, HttpNode, HttpParams
from evalkit.run.runner import RunOptions, run_eval

REPO = Path(__file__).resolve().parents[2]
DEMO = f"{REPO / 'eval_sets' / 'demo_kb.jsonl'}@v1"
CORPUS = REPO / "eval_sets" / "corpora" / "demo_kb.jsonl"


def _service_module():
    name = "evalkit_examples_byo_service"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, REPO / "examples" / "byo_service.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


@pytest.fixture(scope="module")
def service():
    with _service_module().Bm25Service(CORPUS) as srv:
        yield srv


@pytest.fixture(autouse=True)
def _fresh(request):
    if "service" in request.fixturenames:
        srv = request.getfixturevalue("service")
        deadline = time.monotonic() + 15  # requests an earlier test gave up on may still be running server-side
        while srv.in_flight and time.monotonic() < deadline:
            time.sleep(0.05)
        srv.script.clear()
        srv.requests.clear()
        srv.max_in_flight = 0


def http_config(name: str, url: str, type_: str = "http", **params) -> dict:
    return {"name": name, "nodes": {"svc": {"type": type_, "params": {"url": url, **params}}},
            "edges": {"start": "svc", "svc": "end"}}


def _run(tmp_path: Path, configs: list[dict], **options):
    out = tmp_path / "r.json"
    summary = run_eval(load_eval_set(DEMO), [config_from_dict(c) for c in configs],
                       RunOptions(output=out, mlflow=False, progress=False, **options), echo=lambda m: None)
    rows = {c["name"]: [json.loads(x) for x in (tmp_path / "r" / c["name"] / "per_query.jsonl").read_text().splitlines()]
            for c in configs}
    return summary, rows


def test_service_rankings_scored_exactly_as_pytrec_eval_scores_them(tmp_path: Path, service):
    cfg = http_config("svc", f"{service.url}/search", body={"top_k": 20}, cache="off")
    summary, rows = _run(tmp_path, [cfg], workers=3)
    es = load_eval_set(DEMO)
    qrels = {r.id: {d: 1 for d in r.relevant_doc_ids} for r in es.records if r.relevant_doc_ids}
    direct = {r.id: {h["doc_id"]: 1000.0 - i for i, h in enumerate(service.search(r.question, 20))}
              for r in es.records}  # asked directly; scores by rank so trec_eval keeps the order
    theirs = pytrec_eval.RelevanceEvaluator(qrels, {"recall_20", "success_5", "ndcg_cut_10"}).evaluate(
        {q: d for q, d in direct.items() if q in qrels and d})
    mapping = {"recall@20": "recall_20", "hit@5": "success_5", "ndcg@10": "ndcg_cut_10"}
    for r in rows["svc"]:
        if r["gold_doc_ids"]:
            for ours, measure in mapping.items():
                assert r["metrics"][ours] == pytest.approx(theirs.get(r["query_id"], {}).get(measure, 0.0), abs=1e-12)
    assert summary.variants["svc"].n_failed == 0 and 0.5 < summary.variants["svc"].metrics["hit@5"] < 1.0
    call = rows["svc"][0]["trace"][0]["wrote"]["http_call"]
    assert call["status"] == 200 and call["attempts"] == 1 and call["latency_ms"] > 0 and call["url"] == \
        f"{service.url}/search"
    sent = next(r["body"] for r in service.requests if r["body"]["query_id"] == es.records[0].id)
    assert sent == {"top_k": 20, "question": es.records[0].question, "query_id": es.records[0].id, "history": []}
    assert len(service.requests) == 120


def test_service_answers_are_judged_like_scored_answers(tmp_path: Path, service):
    from evalkit.scoring import score_answers

    cfg = http_config("rag", f"{service.url}/rag", cache="off", type_="http_generate",
                      response={"retrieved": "retrieved", "answer": "answer", "contexts": "contexts"})
    summary, rows = _run(tmp_path, [cfg])
    es = load_eval_set(DEMO)
    direct = [{"id": r.id, **service.rag(r.question)} for r in es.records]
    path = tmp_path / "answers.jsonl"
    path.write_text("".join(json.dumps(a, ensure_ascii=False) + "\n" for a in direct), encoding="utf-8")
    scored = score_answers(path, "rag", eval_set=DEMO)
    for ours, theirs in zip(rows["rag"], scored.results, strict=True):
        assert ours["metrics"] == theirs.metrics, ours["query_id"]
        assert ours["generation"]["used_documents"] == theirs.generation["used_documents"]
    assert summary.variants["rag"].metrics["n_answered"] > 100
    assert rows["rag"][0]["generation"]["generator"] == f"http:{service.url}/rag"


def test_service_down_fails_the_query_visibly(tmp_path: Path):
    from evalkit.cachestore import default_cache_root  # noqa: F401  (the node's cache lives there)

    port = _closed_port()
    cfg = http_config("down", f"http://127.0.0.1:{port}/search", cache="off", max_retries=1, backoff_s=0.01)
    summary, rows = _run(tmp_path, [cfg])
    assert summary.variants["down"].n_failed == 120
    err = rows["down"][0]["error"]
    assert err["type"] == "ExternalCallError" and "connection after 2 attempt(s)" in err["message"]
    # on_failure: record -> the query goes on with empty outputs, and says why in what the node wrote
    cfg = http_config("down_rec", f"http://127.0.0.1:{port}/search", cache="off", max_retries=0, on_failure="record")
    summary, rows = _run(tmp_path / "rec", [cfg])
    assert summary.variants["down_rec"].n_failed == 0 and summary.variants["down_rec"].metrics["hit@5"] == 0.0
    wrote = rows["down_rec"][0]["trace"][0]["wrote"]
    assert wrote["external_failure"]["kind"] == "connection" and wrote["external_failure"]["node"] == "svc"
    assert wrote["http_call"]["error"] == "connection" and wrote["retrieved"] == []
    # ... and it is a degraded query, counted as a failed LLM call is (evalkit.run.health): not a silent 0
    assert summary.variants["down_rec"].metrics["degraded"] == 120
    assert summary.variants["down_rec"].metrics["degraded.connection"] == 120
    assert rows["down_rec"][0]["degraded"] == [{"node": "svc", "step": 0, "cause": "connection", "failed_calls": 0,
                                                "tries": 1}]  # max_retries 0: one attempt


def _closed_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _node(url: str, tmp_path: Path, sleeps: list[float] | None = None, **params) -> HttpNode:
    class Res:  # no corpus: ids stay as given
        cache_root = tmp_path

    return HttpNode("svc", HttpParams(url=url, cache="off", **params), Res(),
                    sleep=(sleeps.append if sleeps is not None else time.sleep))


STATE = {"question": "备用金单笔最多可以借多少钱？", "query_id": "q002", "history": []}


def test_deadline_bounds_the_whole_request(tmp_path: Path, service):
    node = _node(f"{service.url}/search", tmp_path, timeout_s=1.0, max_retries=0)
    service.push("slow:4")
    t0 = time.monotonic()
    with pytest.raises(ExternalCallError) as err:
        node.run(STATE)
    assert err.value.kind == "timeout" and time.monotonic() - t0 < 3.0
    service.push("drip:0.2")  # headers at once, then a byte every 0.2 s: every read is quick, the whole is not
    t0 = time.monotonic()
    with pytest.raises(ExternalCallError) as err:
        node.run(STATE)
    assert err.value.kind == "timeout" and time.monotonic() - t0 < 3.0
    assert node.run(STATE)["retrieved"][0].doc_id == "fin-007"  # the next request, on time, works


def test_429_waits_retry_after_then_succeeds(tmp_path: Path, service):
    sleeps: list[float] = []
    node = _node(f"{service.url}/search", tmp_path, sleeps, max_retries=2, backoff_s=0.01)
    service.push("429:2", "500")
    out = node.run(STATE)
    assert out["http_call"]["attempts"] == 3 and out["http_call"]["status"] == 200
    assert sleeps[0] == 2.0 and 0 <= sleeps[1] <= 0.02  # Retry-After, then jittered backoff
    service.push("429:1", "429:1")
    with pytest.raises(ExternalCallError, match=r"rate_limited after 2 attempt\(s\)"):
        _node(f"{service.url}/search", tmp_path, [], max_retries=1).run(STATE)
    service.push("429:1", "ok")  # a real wait: the server sees the retry at least 1 s later
    _node(f"{service.url}/search", tmp_path, max_retries=1).run(STATE)
    assert service.requests[-1]["t"] - service.requests[-2]["t"] >= 0.95


@pytest.mark.parametrize("action, kind, attempts", [("badjson", "bad_response", 1), ("400", "client_error", 1),
                                                    ("500", "server_error", 2)])
def test_other_faults(tmp_path: Path, service, action: str, kind: str, attempts: int):
    service.push(action, action)
    with pytest.raises(ExternalCallError) as err:
        _node(f"{service.url}/search", tmp_path, [], max_retries=1).run(STATE)
    assert (err.value.kind, err.value.attempts) == (kind, attempts)


def test_missing_response_field_is_a_bad_response(tmp_path: Path, service):
    node = _node(f"{service.url}/search", tmp_path, response={"retrieved": "data.docs"})
    with pytest.raises(ExternalCallError, match="has no 'data.docs'"):
        node.run(STATE)


def test_concurrency_cap_holds_with_more_workers(tmp_path: Path, service):
    cfg = http_config("capped", f"{service.url}/search", cache="off", concurrency=2)
    service.push(*["slow:0.2"] * 12)
    summary, _ = _run(tmp_path, [cfg], workers=6)
    assert service.max_in_flight == 2 and summary.variants["capped"].n_failed == 0


def test_cache_replays_and_off_asks_again(tmp_path: Path, service):
    cfg = http_config("cached", f"{service.url}/search")  # cache: read-write (default)
    first, rows1 = _run(tmp_path / "a", [cfg], cache_root=tmp_path / "cache")
    n = len(service.requests)
    second, rows2 = _run(tmp_path / "b", [cfg], cache_root=tmp_path / "cache")
    assert n == 120 and len(service.requests) == 120  # nothing asked the second time
    assert [r["metrics"] for r in rows1["cached"]] == [r["metrics"] for r in rows2["cached"]]
    assert rows2["cached"][0]["trace"][0]["wrote"]["http_call"]["cache_hit"] is True
    replay = http_config("replay", f"{service.url}/search", cache="replay-only")
    summary, _ = _run(tmp_path / "c", [replay], cache_root=tmp_path / "other_cache")
    assert summary.variants["replay"].n_failed == 120 and len(service.requests) == 120


def test_api_key_is_sent_but_never_written(tmp_path: Path, service, monkeypatch):
    monkeypatch.setenv("SVC_TOKEN", "sk-test-0123456789abcdefghij")
    cfg = http_config("keyed", f"{service.url}/search?api_key=sk-url-0123456789abcdefghij", api_key_env="SVC_TOKEN",
                      cache="off")
    _, rows = _run(tmp_path, [cfg])
    assert service.requests[0]["headers"]["Authorization"] == "Bearer sk-test-0123456789abcdefghij"
    written = (tmp_path / "r" / "keyed" / "per_query.jsonl").read_text() + (tmp_path / "r.json").read_text()
    assert "sk-test" not in written and "sk-url" not in written and "api_key=***" in written


def test_api_key_in_a_named_header_is_sent_but_never_written(tmp_path: Path, service, monkeypatch):
    # a service that wants its key in X-Api-Key: the key comes from the environment, never from `headers`
    monkeypatch.setenv("SVC_CRED", "plainvalue-0123456789")  # neither a secret-looking name nor a key shape
    cfg = http_config("named", f"{service.url}/search", api_key_env="SVC_CRED", api_key_header="X-Api-Key",
                      cache="off")
    _run(tmp_path, [cfg])
    sent = service.requests[0]["headers"]
    assert sent["X-Api-Key"] == "plainvalue-0123456789" and "Authorization" not in sent
    written = (tmp_path / "r" / "named" / "per_query.jsonl").read_text() + (tmp_path / "r.json").read_text()
    assert "plainvalue" not in written


@pytest.mark.parametrize("params, where", [
    ({"url": "ftp://x"}, "url must start with http"),
    ({"url": "http://x", "headers": {"Authorization": "Bearer sk-abc"}}, "api_key_env"),
    # other credential headers were accepted and then travelled, unmasked, into config.yaml and MLflow params
    ({"url": "http://x", "headers": {"Ocp-Apim-Subscription-Key": "0123456789abcdef"}}, "api_key_env"),
    ({"url": "http://x", "headers": {"X-Auth-Token": "0123456789abcdef"}}, "api_key_env"),
    ({"url": "http://x", "headers": {"Proxy-Authorization": "Basic dXNlcjpwYXNz"}}, "api_key_env"),
    ({"url": "http://x", "headers": {"Cookie": "session=0123456789abcdef"}}, "api_key_env"),
    ({"url": "http://x", "response": {"answr": "a"}}, "unknown output"),
    ({"url": "http://x", "response": {"reranked": "r"}}, "must map 'retrieved'"),
    ({"url": "http://x", "response": {"retrieved": "r", "answer": "a"}}, r"unknown output\(s\) \['answer'\]"),
    ({"url": "http://x", "api_key_env": "sk-proj-abcdefghijklmnopqrstuvwxyz"}, "NAME of an environment variable"),
    ({"url": "http://x", "send": ["question", "history_of_chat"]}, "history_of_chat"),
    ({"url": "http://x", "send": ["question", "reranked"]}, "reranked"),  # nothing upstream writes it
])
def test_http_config_errors_name_file_and_field(tmp_path: Path, params: dict, where: str):
    path = tmp_path / "bad.yaml"
    path.write_text(json.dumps({"name": "bad", "nodes": {"svc": {"type": "http", "params": params}},
                                "edges": {"start": "svc", "svc": "end"}}))
    with pytest.raises(ConfigError, match=where) as err:
        load_graph_config(path)
    assert str(err.value).startswith(str(path)) and "nodes.svc" in str(err.value)


# ---------------------------------------------------------------------------- python node

USER_CODE = '''
from evalkit_examples_byo_service import tokens

DOCS = {}

def retrieve(state):
    """A user's retriever: documents sharing the most words with the question."""
    asked = set(tokens(state["question"]))
    scored = sorted(((len(asked & set(tokens(t))), d) for d, t in DOCS.items()), key=lambda x: (-x[0], x[1]))
    return {"retrieved": [{"doc_id": d, "score": float(s)} for s, d in scored[:10] if s]}

def answer(state):
    top = state["retrieved"][0]
    return {"answer": f"See {top.doc_id} [{top.doc_id}].", "citations": [top.doc_id, "nope-1"]}

def peek(state):
    return {"retrieved": [], "x": state["lang"]}

def sneaky(state):
    return {"retrieved": [], "answer": "x"}

def rerank_in_place(state):
    hits = state["channel_hits"]["bm25"]
    hits.sort(key=lambda h: h.doc_id)
    return {"reranked": hits[:5]}

def rerank_a_copy(state):
    import copy
    hits = copy.copy(state["channel_hits"]["bm25"])
    hits.sort(key=lambda h: h.doc_id)
    return {"reranked": hits[:5]}
'''


@pytest.fixture
def user_module(tmp_path: Path, monkeypatch):
    _service_module()
    (tmp_path / "my_rag.py").write_text(USER_CODE)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("EVALKIT_PYTHON_NODES", "my_rag")
    import my_rag

    my_rag.DOCS.update({json.loads(x)["id"]: json.loads(x)["text"] for x in CORPUS.read_text().splitlines()})
    yield my_rag
    sys.modules.pop("my_rag", None)


def python_config(name: str, *nodes: tuple) -> dict:
    names = [n[0] for n in nodes]
    edges = {"start": names[0], **{a: b for a, b in zip(names, names[1:])}, names[-1]: "end"}
    return {"name": name, "nodes": {n[0]: {"type": n[2] if len(n) > 2 else "python", "params": n[1]} for n in nodes},
            "edges": edges}


def test_python_nodes_retrieve_and_answer(tmp_path: Path, user_module):
    cfg = python_config("py", ("ret", {"function": "my_rag:retrieve", "reads": ["question"], "writes": ["retrieved"]}),
                        ("gen", {"function": "my_rag:answer", "reads": ["retrieved"]}, "python_generate"))
    summary, rows = _run(tmp_path, [cfg])
    v = summary.variants["py"]
    assert v.n_failed == 0 and "hit@5" in v.metrics and "faithfulness" in v.metrics  # judged: it answers
    first = rows["py"][0]
    expected = user_module.retrieve({"question": first["question"]})["retrieved"]
    assert [d["doc_id"] for d in first["retrieved"]] == [d["doc_id"] for d in expected]
    top = expected[0]["doc_id"]
    assert first["generation"]["used_documents"] == [top] and first["generation"]["invalid_citations"] == ["nope-1"]


def test_python_node_contract(tmp_path: Path, user_module, monkeypatch):
    peek = python_config("peek", ("p", {"function": "my_rag:peek", "reads": ["question"], "writes": ["retrieved"]}))
    sneaky = python_config("sneaky", ("p", {"function": "my_rag:sneaky", "reads": ["question"],
                                            "writes": ["retrieved"]}))
    summary, rows = _run(tmp_path, [peek, sneaky])
    assert "read state field 'lang', which it does not declare" in rows["peek"][0]["error"]["message"]
    assert "returned undeclared key(s) ['answer']" in rows["sneaky"][0]["error"]["message"]
    monkeypatch.setenv("EVALKIT_PYTHON_NODES", "other_module")
    with pytest.raises(ConfigError, match="module 'my_rag' is not allowed.*EVALKIT_PYTHON_NODES=my_rag"):
        config_from_dict(python_config("x", ("p", {"function": "my_rag:retrieve", "writes": ["retrieved"]})))
    monkeypatch.setenv("EVALKIT_PYTHON_NODES", "my_rag")
    with pytest.raises(ConfigError, match="'my_field', which the state schema does not declare"):
        config_from_dict(python_config("x", ("p", {"function": "my_rag:retrieve", "writes": ["my_field"]})))
    with pytest.raises(ConfigError, match="an answer is written by type python_generate"):
        config_from_dict(python_config("x", ("p", {"function": "my_rag:answer", "writes": ["answer"]})))


def test_a_users_node_cannot_change_a_shared_channel_ranking_but_can_change_its_copy(tmp_path: Path, user_module):
    """Every variant reads the same channel rankings (SharedRanking): sorting one in place fails the query and
    says to copy it; a copy is the user's own list."""
    retrieve = {"type": "retrieve", "params": {"bm25": {"top_k": 20}, "top_k": 20}}

    def variant(name: str, function: str) -> dict:
        return {"name": name, "nodes": {"retrieve": retrieve, "mine": {"type": "python", "params": {
            "function": function, "reads": ["channel_hits"], "writes": ["reranked"]}}},
            "edges": {"start": "retrieve", "retrieve": "mine", "mine": "end"}}

    summary, rows = _run(tmp_path, [variant("in_place", "my_rag:rerank_in_place"),
                                    variant("a_copy", "my_rag:rerank_a_copy")])
    assert rows["in_place"] and all("copy it first (list(value))" in r["error"]["message"] for r in rows["in_place"])
    assert summary.variants["a_copy"].n_failed == 0
    for r in rows["a_copy"]:
        ids = [d["doc_id"] for d in r["reranked"]]
        assert ids and ids == sorted(ids)  # the user sorted their copy by document id


def test_python_read_with_no_writer_upstream_is_a_load_error(user_module):
    with pytest.raises(ConfigError, match="retrieved") as err:  # nothing upstream writes it
        config_from_dict(python_config("x", ("p", {"function": "my_rag:answer", "reads": ["retrieved"]},
                                             "python_generate")))
    assert "nodes.p" in str(err.value)


def test_evalkit_retrieval_sent_to_a_generator_service(tmp_path: Path, service):
    """retrieve (evalkit BM25) -> http (the user's generator): the ranking travels with its texts, and the
    answer is judged against that ranking's top passages."""
    cfg = {"name": "ret_gen", "nodes": {
        "retrieve": {"type": "retrieve", "params": {"bm25": {"tokenizer": "auto", "top_k": 5}}},
        "gen": {"type": "http_generate", "params": {"url": f"{service.url}/rag", "send": ["question", "retrieved"],
                                            "response": {"answer": "answer"}, "cache": "off", "evidence_k": 3}}},
        "edges": {"start": "retrieve", "retrieve": "gen", "gen": "end"}}
    summary, rows = _run(tmp_path, [cfg])
    sent = service.requests[0]["body"]["retrieved"]
    assert sent and set(sent[0]) == {"id", "doc_id", "score", "text"} and sent[0]["text"]
    first = rows["ret_gen"][0]
    assert [e[1] for e in first["generation"]["evidence"]] == [d["doc_id"] for d in first["retrieved"][:3]]
    assert summary.variants["ret_gen"].metrics["n_answered"] > 100


def test_example_config_loads_with_a_bare_yaml_off():
    cfg = load_graph_config(REPO / "examples" / "byo_http.yaml")  # `cache: off` is YAML false
    assert cfg.nodes["service"]["params"]["cache"] is False
    assert HttpGenerateParams(**cfg.nodes["service"]["params"]).cache == "off"


def test_a_live_service_is_asked_by_every_variant(tmp_path: Path, service):
    """cache: off -> no work sharing either: two identical variants each call the service (120 requests each)."""
    a = http_config("live_a", f"{service.url}/search", cache="off")
    b = http_config("live_b", f"{service.url}/search", cache="off")
    summary, rows = _run(tmp_path, [a, b])
    assert len(service.requests) == 240
    assert not any(e.get("reused") for r in rows["live_b"] for e in r["trace"])
    assert [r["metrics"] for r in rows["live_a"]] == [r["metrics"] for r in rows["live_b"]]


def test_an_empty_answer_from_the_users_own_generator_degrades_the_query(tmp_path: Path, user_module):
    """Its system most likely failed: counted as a correct abstention, an empty answer would flatter the
    unanswerable questions. evalkit's own fixed refusal (no model call) stays healthy."""
    user_module.empty = lambda state: {"answer": "  \n"}
    user_module.silent = lambda state: {"answer": "I cannot find this in the documents."}
    ret = ("ret", {"function": "my_rag:retrieve", "reads": ["question"], "writes": ["retrieved"]})
    empty = python_config("empty", ret, ("gen", {"function": "my_rag:empty", "reads": ["retrieved"]},
                                         "python_generate"))
    refuses = python_config("refuses", ret, ("gen", {"function": "my_rag:silent", "reads": ["retrieved"]},
                                             "python_generate"))
    summary, rows = _run(tmp_path, [empty, refuses])
    causes = {c["cause"] for r in rows["empty"] for c in r["degraded"]}
    assert causes == {"empty_answer"} and all(r["degraded"] for r in rows["empty"])
    assert summary.variants["empty"].metrics["degraded_share"] == 1.0
    assert not any(r["degraded"] for r in rows["refuses"])  # a refusal in words is an answer's business
    assert all(r["generation"]["abstention"]["abstained"] for r in rows["refuses"])
