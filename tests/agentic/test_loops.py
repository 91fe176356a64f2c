"""Loops end: by max_attempts, by max_steps when misconfigured, at load time when they have no exit;
LLM failures inside every agentic node degrade and are counted; loop metrics reach the files."""
from __future__ import annotations

import copy
import json
import time
from pathlib import Path

import pytest

from evalkit.errors import ConfigError
from evalkit.evalsets import load_eval_set
from evalkit.graph import build_graph, config_from_dict, initial_state
from evalkit.judges import JUDGES, register_judge
from evalkit.run.runner import RunOptions, run_eval
from evalkit.runstore import read_results

REFLECT = {
    "name": "reflect", "max_steps": 30,
    "nodes": {"rewrite": {"type": "query_rewrite", "params": {"feedback_terms": 2}},
              "retrieve": {"type": "retrieve", "params": {"bm25": {"tokenizer": "en"}, "top_k": 5}},
              "grade": {"type": "grade", "params": {"embedder": "toy", "pool_k": 5, "judge_k": 3, "max_attempts": 3,
                                                    "offline": {"min_cosine": 0.3, "min_coverage": 0.3}}},
              "fallback": {"type": "fallback"}},
    "edges": {"start": "rewrite", "rewrite": "retrieve", "retrieve": "grade", "grade": "end", "fallback": "end"},
    "routes": {"rewrite": {"field": "rewrite_futile", "cases": {True: "fallback"}},
               "grade": {"field": "grade_decision", "cases": {"generate": "end", "rewrite": "rewrite",
                                                               "fallback": "fallback"}}}}
DOCUMENT = {"method": "document", "prepend_title": True}


def reflect(**changes) -> dict:
    d = copy.deepcopy(REFLECT)
    d["chunking"] = DOCUMENT
    for path, value in changes.items():
        node, key = path.split(".")
        d["nodes"][node]["params"][key] = value
    return d


def run_graph(view, config: dict, question: str):
    graph = build_graph(config_from_dict(config), view)
    return graph.run(initial_state("q", question, "en"))


def test_the_loop_is_bounded_by_max_attempts(view):
    # one feedback term per retry, so that every retry has something new to add ("Price:", a document's
    # first word, is no longer taken for a name: two terms ran out after the second attempt)
    out = run_graph(view, reflect(**{"grade.offline": {"min_cosine": 0.999}, "grade.max_attempts": 3,
                                     "rewrite.feedback_terms": 1}),
                    "Who makes the chip used in the ZX-100?")
    assert not out.failed and out.state["outcome"] == "fallback"
    grades = [e for e in out.trace if e.type == "grade"]
    assert [e.attempt for e in grades] == [1, 2, 3]
    assert [e.wrote["grade_decision"] for e in grades] == ["rewrite", "rewrite", "fallback"]
    # every loop iteration is visible: the rewrite used, the documents retrieved and kept, the feedback, the route
    rewrites = [e for e in out.trace if e.type == "query_rewrite"]
    assert [e.attempt for e in rewrites] == [1, 2, 3] and rewrites[1].wrote["queries"]
    assert all("retrieved" in e.wrote for e in out.trace if e.type == "retrieve")
    assert grades[0].wrote["reflection"]["reason"] and grades[0].edge == "rewrite"
    assert grades[0].edge_reason == "condition grade_decision='rewrite'"


def test_a_futile_rewrite_goes_to_the_fallback(view):
    # nothing new to add on a retry: the second attempt repeats the first one's queries
    out = run_graph(view, reflect(**{"grade.offline": {"min_cosine": 0.999}, "grade.feedback_terms": 0,
                                     "grade.require_atoms": False}),
                    "How many days of parental leave do employees get?")
    rewrites = [e for e in out.trace if e.type == "query_rewrite"]
    assert rewrites[-1].wrote["rewrite_futile"] is True and rewrites[-1].edge == "fallback"
    assert out.state["outcome"] == "fallback" and len(rewrites) == 2


def test_a_misconfigured_cycle_stops_at_max_steps_with_a_clear_error(view):
    bad = reflect()
    bad["max_steps"] = 12
    # a passing grade is routed back to rewrite, futile rewrites are not routed out: an endless loop
    bad["routes"]["grade"]["cases"]["generate"] = "rewrite"
    del bad["routes"]["rewrite"]
    t0 = time.perf_counter()
    out = run_graph(view, bad, "How many days of parental leave do employees get?")
    assert time.perf_counter() - t0 < 30
    assert out.failed and out.error["type"] == "MaxStepsExceeded"
    assert "stopped after max_steps=12 without reaching 'end'" in out.error["message"]
    assert len(out.trace) == 12 and out.trace[-1].attempt == 4  # the attempts kept counting


def test_a_cycle_without_exit_is_refused_at_load_time():
    trap = reflect()
    trap["nodes"]["again"] = {"type": "retrieve", "params": {"bm25": {}}}
    trap["edges"]["again"] = "again"
    trap["routes"]["grade"]["cases"]["generate"] = "again"
    with pytest.raises(ConfigError, match="'end' cannot be reached from node 'again' \\(a loop with no exit\\)"):
        config_from_dict(trap)
    trap["routes"] = {}
    trap["edges"]["grade"] = "rewrite"
    with pytest.raises(ConfigError, match="'end' cannot be reached from 'start'"):
        config_from_dict(trap)


def _options(out: Path, **kw) -> RunOptions:
    return RunOptions(output=out, progress=False, mlflow=kw.pop("mlflow", False), **kw)


def test_loop_metrics_reach_summary_and_per_query_files(evalset: Path, tmp_path: Path):
    config = reflect(**{"grade.offline": {"min_cosine": 0.5, "min_coverage": 0.5}})
    out = tmp_path / "res.json"
    summary = run_eval(load_eval_set(str(evalset)), [config_from_dict(config)], _options(out), echo=lambda m: None)
    m = summary.variants["reflect"].metrics
    assert {"loop_rate", "attempts_mean", "rescued", "harmed", "futile", "loop_ms", "first_attempt_hit@5",
            "llm_fallbacks"} <= set(m)
    assert m["hit@5"] >= m["first_attempt_hit@5"] - 1e-9 or m["harmed"] > 0
    rows = read_results(tmp_path / "res" / "reflect" / "per_query.jsonl")
    for r in rows:
        assert {"attempts", "first_attempt_hit@5", "rescued", "harmed", "futile", "loop_ms",
                "loop_llm_calls"} <= set(r.metrics)
        assert all(v is None or isinstance(v, float) for v in r.metrics.values())
    unanswerable = next(r for r in rows if r.query_id == "q3")
    assert unanswerable.metrics["first_attempt_hit@5"] is None and unanswerable.metrics["attempts"] >= 2
    assert "loop_rate" in summary.variants["reflect"].by_type["unanswerable"]
    data = json.loads(out.read_text())
    assert data["variants"]["reflect"]["metrics"]["loop_rate"] == m["loop_rate"]


@pytest.mark.integration
def test_loop_metrics_are_logged_to_mlflow(evalset: Path, tmp_path: Path):
    out = tmp_path / "m.json"
    summary = run_eval(load_eval_set(str(evalset)), [config_from_dict(reflect())], _options(out, mlflow=True),
                       echo=lambda m: None)
    from mlflow.tracking import MlflowClient

    from evalkit.track import mlflow_metric_name

    run = MlflowClient(tracking_uri=summary.mlflow["tracking_uri"]).get_run(summary.variants["reflect"].mlflow_run_id)
    metrics = summary.variants["reflect"].metrics
    for name in ("loop_rate", "rescued", "first_attempt_hit@5"):
        assert run.data.metrics[mlflow_metric_name(name)] == pytest.approx(metrics[name])


class _Broken:
    identity = "broken"

    def judge(self, question, answer, evidence):
        raise ConnectionError("judge server unreachable")


if "test_loops_broken" not in JUDGES:
    register_judge("test_loops_broken", lambda **options: _Broken())


def test_llm_failures_in_every_agentic_node_degrade_and_are_counted(evalset: Path, tmp_path: Path, fault_server,
                                                                    llm_spec):
    # every call fails: HTTP 500 or garbage (the client asks once more for JSON, gets garbage again)
    fault_server.push(*(["500", "text:<html>oops</html>", "text:{not json"] * 120))
    config = {
        "name": "all_llm", "chunking": DOCUMENT, "max_steps": 40,
        "nodes": {"router": {"type": "intent_router", "params": {"rules": [], "llm": llm_spec,
                                                                 "routes": {"bm25": "words", "other": "rest"},
                                                                 "default_route": "bm25"}},
                  "rewrite": {"type": "query_rewrite", "params": {"llm": llm_spec}},
                  "retrieve": {"type": "retrieve", "params": {"bm25": {"tokenizer": "en"}, "top_k": 5}},
                  "grade": {"type": "grade", "params": {"embedder": "toy", "llm": llm_spec, "pool_k": 5, "judge_k": 2,
                                                        "max_attempts": 2, "offline": {"min_cosine": 0.3}}},
                  "generate": {"type": "generate", "params": {"llm": {"backend": "extractive"},
                                                              "evidence_from": "evidence"}},
                  "self_check": {"type": "self_check", "params": {"judge": "test_loops_broken", "max_attempts": 2}},
                  "fallback": {"type": "fallback"}},
        "edges": {"start": "router", "router": "rewrite", "rewrite": "retrieve", "retrieve": "grade",
                  "grade": "generate", "generate": "self_check", "self_check": "end", "fallback": "end"},
        "routes": {"grade": {"field": "grade_decision",
                             "cases": {"generate": "generate", "rewrite": "rewrite", "fallback": "fallback"}},
                   "self_check": {"field": "self_check_decision", "cases": {"retry": "rewrite", "exhausted": "fallback"}}}}
    summary = run_eval(load_eval_set(str(evalset)), [config_from_dict(config)], _options(tmp_path / "f.json"),
                       echo=lambda m: None)
    v = summary.variants["all_llm"]
    assert v.n_failed == 0
    rows = read_results(tmp_path / "f" / "all_llm" / "per_query.jsonl")
    kinds = {(e["type"], e["wrote"]["llm_fallback"]["kind"]) for r in rows for e in r.trace
             if (e["wrote"] or {}).get("llm_fallback")}
    assert {t for t, _ in kinds} >= {"intent_router", "query_rewrite", "grade"}
    assert {k for _, k in kinds} >= {"server_error", "bad_json"}
    assert v.metrics["llm_fallbacks"] == sum(r.metrics["llm_fallbacks"] for r in rows) >= 3 * len(rows)
    answered = [r for r in rows if any(e["type"] == "self_check" for e in r.trace)]
    assert answered and all(e["wrote"]["llm_fallback"]["kind"] == "judge_error" for r in answered for e in r.trace
               if e["type"] == "self_check")
    assert v.usage["grade"]["failures"] > 0 and v.usage["route"]["failures"] > 0


def test_self_check_sends_an_unsupported_answer_back_through_the_loop(view, fault_server, llm_spec):
    # the generator (scripted over HTTP) first invents a number, then answers from the evidence
    fault_server.push("text:Employees get 25 days of parental leave [d-leave].",
                      "text:Employees get 10 days of parental leave [d-leave].")
    config = {"name": "checked", "chunking": DOCUMENT, "max_steps": 20,
              "nodes": {"rewrite": {"type": "query_rewrite"},
                        "retrieve": {"type": "retrieve", "params": {"bm25": {"tokenizer": "en"}, "top_k": 3}},
                        "generate": {"type": "generate", "params": {"llm": llm_spec, "evidence_from": "retrieved",
                                                                    "evidence_k": 2}},
                        "self_check": {"type": "self_check", "params": {"max_attempts": 2}},
                        "fallback": {"type": "fallback"}},
              "edges": {"start": "rewrite", "rewrite": "retrieve", "retrieve": "generate", "generate": "self_check",
                        "self_check": "end", "fallback": "end"},
              "routes": {"self_check": {"field": "self_check_decision",
                                        "cases": {"retry": "rewrite", "exhausted": "fallback"}}}}
    out = run_graph(view, config, "How many days of parental leave do employees get?")
    checks = [e for e in out.trace if e.type == "self_check"]
    assert [(e.attempt, e.wrote["self_check_decision"]) for e in checks] == [(1, "retry"), (2, "pass")]
    assert checks[0].edge == "rewrite" and "25" in checks[0].wrote["reflection"]["unsupported_claims"][0]
    assert out.state["answer"].startswith("Employees get 10 days") and out.state["attempt"] == 2
    assert [e.type for e in out.trace] == ["query_rewrite", "retrieve", "generate", "self_check"] * 2
