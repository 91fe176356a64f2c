"""Failures the gate could not see: a query whose LLM call failed after retries is degraded, whatever edge
the graph took next; it is counted per variant, left out of the answer metrics, and the gate refuses a
candidate degraded more than its baseline. Real HTTP: the fault server on 127.0.0.1 and a refused port."""
from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from evalkit.cli import cli
from evalkit.errors import EvalSetError
from evalkit.evalsets import freeze, load_eval_set
from evalkit.graph import Node, NodeParams, config_from_dict, register_node
from evalkit.graph.schema import RETRIEVED
from evalkit.run.health import is_degraded
from evalkit.run.runner import RunOptions, run_eval
from evalkit.runstore import read_results

DOCS = [("hr-1", "育儿假", "子女出生后，员工可享受10天育儿假。"),
        ("it-1", "Laptop repair", "If your laptop is broken, open a ticket in the IT portal. Repairs take 3 days."),
        ("fin-1", "电子发票", "单张电子发票金额上限为5000元。")]
QUESTIONS = [("q1", "孩子出生能休几天假", ["hr-1"], "single", "zh"),
             ("q2", "how long do laptop repairs take", ["it-1"], "single", "en"),
             ("q3", "电子发票上限是多少", ["fin-1"], "single", "zh"),
             ("q4", "海外出差每天补贴多少", [], "unanswerable", "zh")]


@pytest.fixture
def evalset(tmp_path: Path):
    (tmp_path / "corpora").mkdir()
    corpus = tmp_path / "corpora" / "c.jsonl"
    corpus.write_text("".join(json.dumps({"id": i, "title": t, "text": x}, ensure_ascii=False) + "\n"
                              for i, t, x in DOCS), encoding="utf-8")
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps({"id": i, "question": q, "relevant_doc_ids": g, "type": t, "lang": lang},
                                       ensure_ascii=False) + "\n" for i, q, g, t, lang in QUESTIONS), encoding="utf-8")
    freeze(path, corpus=str(corpus))
    return load_eval_set(f"{path}@v1")


def answering(name: str, llm: dict) -> dict:
    return {"name": name, "nodes": {
        "retrieve": {"type": "retrieve", "params": {"bm25": {"tokenizer": "auto"}}},
        "generate": {"type": "generate", "params": {"llm": llm, "evidence_from": "retrieved", "evidence_k": 2}},
        "fallback": {"type": "fallback"}},
        "edges": {"start": "retrieve", "retrieve": "generate", "generate": "end", "fallback": "end"},
        "on_error": {"generate": "fallback"}}


def run(evalset, configs: list[dict], out: Path):
    loaded = [config_from_dict(c, source=str(out.parent / f"{c['name']}.yaml")) for c in configs]
    return run_eval(evalset, loaded, RunOptions(output=out, mlflow=False, progress=False), echo=lambda _: None)


def openai(base_url: str) -> dict:
    return {"backend": "openai", "model": "m", "base_url": base_url, "max_retries": 1, "timeout_s": 5,
            "cache": "off"}


def test_an_llm_that_is_down_degrades_every_query_and_the_gate_refuses(evalset, tmp_path: Path, closed_port):
    base = answering("base", {"backend": "extractive"})
    down = answering("down", openai(f"http://127.0.0.1:{closed_port}/v1"))
    summary = run(evalset, [base, down], tmp_path / "r.json")
    cand = summary.variants["down"]
    assert cand.n_failed == 0  # the on_error edge hid the outage from the failure count...
    rows = read_results(tmp_path / "r" / "down" / "per_query.jsonl")
    asked = [r for r in rows if r.retrieved]  # generate calls its LLM only when there is evidence to show
    assert len(asked) >= 3
    assert cand.metrics["degraded"] == len(asked) and cand.metrics["degraded.connection"] == len(asked)  # ...not here
    assert cand.metrics["degraded_share"] == len(asked) / 4
    for r in asked:
        assert r.degraded == [{"node": "generate", "step": 1, "cause": "connection", "failed_calls": 1, "tries": 2}]
        assert r.metrics["degraded"] == 1.0 and r.generation["degraded"] is True
        assert r.generation["judgement"] is None and "hallucinated" not in r.metrics
    assert summary.variants["base"].metrics["degraded"] == 0.0
    # the gate: its own exit code, the causes named
    res = CliRunner().invoke(cli, ["gate", "--baseline", str(tmp_path / "r.json"), "--candidate",
                                   str(tmp_path / "r.json"), "--baseline-variant", "base", "--candidate-variant",
                                   "down", "--metric", "hit@5", "--max-drop", "0.5"])
    assert res.exit_code == 6, res.output
    assert f"degraded on {len(asked)} of 4 queries" in res.output and "causes: connection" in res.output


def test_a_partial_outage_degrades_only_its_queries_and_the_gate_pairs_the_healthy_ones(
        evalset, tmp_path: Path, scripted_server):
    # q1 and q3 get a real answer; q2 gets HTTP 500 twice (its retry too); q4 a real answer
    scripted_server.push("text:子女出生后可休10天育儿假 [hr-1]", "500", "500", "text:上限为5000元 [fin-1]",
                         "text:I do not know.")
    flaky = answering("flaky", openai(scripted_server.base_url))
    out = tmp_path / "p.json"
    summary = run(evalset, [flaky], out)
    m = summary.variants["flaky"].metrics
    assert m["degraded"] == 1.0 and m["degraded_share"] == 0.25 and m["degraded.server_error"] == 1.0
    rows = {r.query_id: r for r in read_results(out.with_suffix("") / "flaky" / "per_query.jsonl")}
    assert [q for q, r in rows.items() if r.degraded] == ["q2"]
    # the answer metrics are means over the 3 healthy queries only (hand count from their records)
    healthy = [r for q, r in rows.items() if q != "q2"]
    assert m["n_answered"] == sum(r.metrics["answered"] for r in healthy)
    # gate the flaky run against itself allowing the outage: q2 is dropped from the answer metrics, and said so
    res = CliRunner().invoke(cli, ["gate", "--baseline", str(out), "--candidate", str(out), "--metric",
                                   "citations_invalid", "--max-drop", "0.01", "--metric", "hit@5", "--max-drop", "0.01"])
    assert res.exit_code == 0, res.output
    assert "1 degraded query left out" in res.output


def test_an_llm_that_answers_nothing_usable_degrades_and_the_gate_refuses(evalset, tmp_path: Path, scripted_server):
    """HTTP 200 with an empty answer, or a provider refusal (content_filter): the call "succeeded", the
    answer is absent. Both are degraded (the retrieval metrics alone would pass the gate)."""
    scripted_server.push("text:", "finish:content_filter", "text:", "finish:content_filter")
    mute = answering("mute", openai(scripted_server.base_url))
    base = answering("base", {"backend": "extractive"})
    out = tmp_path / "m.json"
    summary = run(evalset, [base, mute], out)
    rows = [r for r in read_results(out.with_suffix("") / "mute" / "per_query.jsonl") if r.retrieved]
    causes = sorted(d["cause"] for r in rows for d in r.degraded)
    assert causes == sorted(["empty_answer", "content_filter", "empty_answer", "content_filter"][:len(rows)])
    assert summary.variants["mute"].metrics["degraded"] == len(rows)
    assert summary.variants["base"].metrics["degraded"] == 0.0  # extractive: no LLM call, nothing degraded
    res = CliRunner().invoke(cli, ["gate", "--baseline", str(out), "--candidate", str(out), "--baseline-variant",
                                   "base", "--candidate-variant", "mute", "--metric", "hit@5", "--max-drop", "0.5"])
    assert res.exit_code == 6, res.output
    assert "empty_answer" in res.output and "content_filter" in res.output


ERROR_REPLIES = {  # HTTP 200, and the reply is the endpoint's error message: a gateway, an outage apology, a proxy page
    "q1": "当前分组上游负载已饱和，请稍后再试 (request id: 20240612153045123456789)",
    "q2": "Sorry, I am unable to answer at this time due to high demand. Please try again later.",
    "q3": "<html><head><title>502 Bad Gateway</title></head><body><center><h1>502 Bad Gateway</h1></center></body>"
          "</html>",
}


def test_an_llm_that_answers_with_an_error_message_degrades_and_the_gate_refuses(evalset, tmp_path: Path,
                                                                                 scripted_server):
    """The call "succeeded", but the reply is an error text. Judged, q1 and q3 would count as hallucinations;
    q2's apology reads as a refusal (an abstention, not a failure). All three describe the endpoint: degraded
    (error_reply), not judged, not abstained, and the gate refuses the candidate. q4 retrieves nothing: its
    generator writes the fixed refusal without asking the LLM and stays healthy."""
    scripted_server.push(*(f"text:{ERROR_REPLIES[q]}" for q in ("q1", "q2", "q3")))
    base = answering("base", {"backend": "extractive"})
    sick = answering("sick", openai(scripted_server.base_url))
    out = tmp_path / "e.json"
    summary = run(evalset, [base, sick], out)
    rows = {r.query_id: r for r in read_results(out.with_suffix("") / "sick" / "per_query.jsonl")}
    assert [q for q, r in rows.items() if r.retrieved] == ["q1", "q2", "q3"]
    for q in ERROR_REPLIES:
        r = rows[q]
        assert r.degraded == [{"node": "generate", "step": 1, "cause": "error_reply", "failed_calls": 0, "tries": 1}]
        g = r.generation
        assert g["abstention"]["reason"] == "error_reply" and g["abstained"] is False and g["answered"] is False
        assert g["judgement"] is None
        assert {k for k in r.metrics if "@" not in k} == {"degraded"}, r.metrics  # no answer metric at all
    assert not rows["q4"].degraded and rows["q4"].metrics["abstained"] == 1.0
    m = summary.variants["sick"].metrics
    assert m["degraded"] == 3.0 and m["degraded.error_reply"] == 3.0 and m["n_answered"] == 0.0
    assert m["n_abstained"] == 1.0 and "abstention_rate" not in m  # q2 is no abstention (only q4, unanswerable)
    assert summary.variants["base"].metrics["degraded"] == 0.0
    res = CliRunner().invoke(cli, ["gate", "--baseline", str(out), "--candidate", str(out), "--baseline-variant",
                                   "base", "--candidate-variant", "sick", "--metric", "hit@5", "--max-drop", "0.5"])
    assert res.exit_code == 6, res.output
    assert "degraded on 3 of 4 queries" in res.output and "causes: error_reply" in res.output


def test_an_eval_sets_not_patterns_keep_a_reply_that_looks_like_an_error_an_answer(evalset, tmp_path: Path,
                                                                                   scripted_server):
    """A domain whose real answers trip the detector: NAME.abstention.yaml ``not_patterns`` keep them answers,
    judged and healthy, although the generate node recorded error_reply in the trace."""
    Path(evalset.path).with_name("s.abstention.yaml").write_text('not_patterns: ["上游负载"]\n', encoding="utf-8")
    es = load_eval_set(f"{evalset.path}@v1")
    assert es.abstention is not None and es.abstention.not_patterns == ("上游负载",)
    scripted_server.push(f"text:{ERROR_REPLIES['q1']}", "text:Laptop repairs take 3 days [it-1].",
                         f"text:{ERROR_REPLIES['q3']}")
    out = tmp_path / "o.json"
    summary = run(es, [answering("sick", openai(scripted_server.base_url))], out)
    rows = {r.query_id: r for r in read_results(out.with_suffix("") / "sick" / "per_query.jsonl")}
    q1 = rows["q1"]
    assert q1.trace[1]["wrote"]["abstention"]["reason"] == "error_reply"  # what the node saw...
    a = q1.generation["abstention"]
    assert (a["reason"], a["source"], a["abstained"]) == ("user_not_pattern", "eval set", False)  # ...overridden
    assert q1.degraded == [] and not is_degraded(q1) and q1.metrics["answered"] == 1.0
    assert q1.generation["judgement"] is not None
    assert [d["cause"] for d in rows["q3"].degraded] == ["error_reply"]  # the pattern does not match the 502 page
    assert summary.variants["sick"].metrics["degraded"] == 1.0


def test_a_reused_execution_keeps_its_failure(evalset, tmp_path: Path, closed_port):
    # two variants share a rewrite whose LLM is down (it falls back to its offline path): both are degraded
    def variant(name: str, k: int) -> dict:
        return {"name": name, "nodes": {
            "rewrite": {"type": "query_rewrite", "params": {"llm": openai(f"http://127.0.0.1:{closed_port}/v1")}},
            "retrieve": {"type": "retrieve", "params": {"bm25": {"tokenizer": "auto", "top_k": k}}}},
            "edges": {"start": "rewrite", "rewrite": "retrieve", "retrieve": "end"}}
    summary = run(evalset, [variant("a", 10), variant("b", 20)], tmp_path / "m.json")
    assert summary.sharing["node_hits"] == 4  # b reused a's rewrites
    for name in ("a", "b"):
        assert summary.variants[name].metrics["degraded"] == 4.0
        rows = read_results(tmp_path / "m" / name / "per_query.jsonl")
        assert all(r.degraded[0]["node"] == "rewrite" and r.degraded[0]["cause"] == "connection" for r in rows)




class SleepParams(NodeParams):
    seconds: float = 1.0


@register_node
class Sleeper(Node[SleepParams]):
    """Test node: passes the ranking through after sleeping (a hung service)."""

    type = "test_sleeper"
    reads = (RETRIEVED,)
    writes = (RETRIEVED,)
    Params = SleepParams

    def run(self, state):
        time.sleep(self.params.seconds)
        return {RETRIEVED: list(state[RETRIEVED])}


def test_a_node_over_its_budget_degrades_the_query_and_the_run_goes_on(evalset, tmp_path: Path):
    cfg = {"name": "slow", "nodes": {
        "retrieve": {"type": "retrieve", "params": {"bm25": {"tokenizer": "auto"}}},
        "hang": {"type": "test_sleeper", "params": {"seconds": 5}, "budget_s": 0.2},
        "fallback": {"type": "fallback"}},
        "edges": {"start": "retrieve", "retrieve": "hang", "hang": "end", "fallback": "end"},
        "on_error": {"hang": "fallback"}}
    t0 = time.monotonic()
    summary = run(evalset, [cfg], tmp_path / "b.json")
    assert time.monotonic() - t0 < 4 * 5  # nobody waited the 5 s sleeps out
    assert summary.variants["slow"].metrics["degraded.budget_exceeded"] == 4.0
    rows = read_results(tmp_path / "b" / "slow" / "per_query.jsonl")
    event = rows[0].trace[1]
    assert event["error"]["type"] == "BudgetExceeded" and "budget_s=0.2" in event["error"]["message"]
    assert config_from_dict(cfg).to_dict()["nodes"]["hang"]["budget_s"] == 0.2


def test_a_bad_budget_is_refused_at_load():
    cfg = {"name": "x", "nodes": {"r": {"type": "retrieve", "params": {"bm25": {}}, "budget_s": 0}},
           "edges": {"start": "r", "r": "end"}}
    from evalkit.errors import ConfigError

    with pytest.raises(ConfigError, match="nodes.r.budget_s: budget_s must be a positive number"):
        config_from_dict(cfg)


def test_a_huge_question_is_refused_naming_the_record(tmp_path: Path):
    (tmp_path / "corpora").mkdir()
    corpus = tmp_path / "corpora" / "c.jsonl"
    corpus.write_text(json.dumps({"id": "d", "title": "t", "text": "x"}) + "\n", encoding="utf-8")
    path = tmp_path / "big.jsonl"
    path.write_text(json.dumps({"id": "ok", "question": "short?", "relevant_doc_ids": ["d"], "type": "single",
                                "lang": "en"}) + "\n" +
                    json.dumps({"id": "huge", "question": "word " * 1_000_000, "relevant_doc_ids": ["d"],
                                "type": "single", "lang": "en"}) + "\n", encoding="utf-8")
    with pytest.raises(EvalSetError) as err:
        freeze(path, corpus=str(corpus))
    assert f"{path}:2: question: 5,000,000 characters" in str(err.value) and "'huge'" in str(err.value)


def test_a_recorded_verdict_is_read_and_an_older_record_is_judged_by_its_trace():
    """A record that says ``degraded: []`` is healthy without its trace being read again (report and gate asked
    every healthy query's trace: ~1.5 s of a 10,000-query report); a record written before the field has none,
    and its trace decides, as it always did."""
    from evalkit.records import QueryResult
    from evalkit.run.health import query_degradations

    failed_call = {"node": "generate", "step": 1, "role": "generator", "llm": {"failures": 1, "calls": 1}, "wrote": {}}
    row = {"query_id": "q1", "question": "?", "gold_doc_ids": [], "retrieved": [], "reranked": [], "metrics": {},
           "trace": [failed_call]}
    older = QueryResult.from_dict(row)
    assert older.degraded is None and is_degraded(older)
    assert query_degradations(older)[0]["cause"] == "llm_failure"

    class Unread(list):
        def __iter__(self):
            raise AssertionError("the trace of a record with a verdict was read")

    recorded = QueryResult.from_dict({**row, "degraded": [], "trace": Unread([failed_call])})
    assert recorded.degraded == [] and not is_degraded(recorded)
    sick = QueryResult.from_dict({**row, "degraded": [{"node": "generate", "step": 1, "cause": "timeout",
                                                       "failed_calls": 1, "tries": 3}]})
    assert [d["cause"] for d in query_degradations(sick)] == ["timeout"]
    assert QueryResult.from_dict(QueryResult(query_id="q", question="?", gold_doc_ids=[], retrieved=[], reranked=[],
                                             metrics={}, trace=[]).to_dict()).degraded == []  # written: read back
