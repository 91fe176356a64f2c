"""The ``intent_router`` node: rules first, LLM second, default route for unknown labels and failures."""
from __future__ import annotations

import json

import pytest

from evalkit.errors import ConfigError
from evalkit.graph import config_from_dict, initial_state
from evalkit.nodes.router import IntentRouter, IntentRouterParams

ROUTES = {"keyword": "codes", "vector": "everyday words", "graph": "relations"}
RULES = [{"label": "keyword", "patterns": [r"(?<![A-Za-z0-9])[A-Z]{1,4}-\d{2,5}"]},
         {"label": "graph", "keywords": ["who makes", "供应商"]}]
GRAPH = {"name": "router",
         "nodes": {"router": {"type": "intent_router",
                              "params": {"routes": ROUTES, "rules": RULES, "default_route": "vector"}},
                   "bm25": {"type": "retrieve", "params": {"bm25": {}}},
                   "dense": {"type": "retrieve", "params": {"bm25": {"k1": 1.2}}}},
         "edges": {"start": "router", "router": "dense", "bm25": "end", "dense": "end"},
         "routes": {"router": {"field": "route", "cases": {"keyword": "bm25", "vector": "dense", "graph": "bm25"}}}}


def router(**params) -> IntentRouter:
    return IntentRouter("router", IntentRouterParams(**{"routes": ROUTES, "rules": RULES,
                                                        "default_route": "vector", **params}))


def route(r: IntentRouter, question: str) -> dict:
    return r.run(initial_state("q", question, "en"))


def test_config_round_trips_and_routes_on_the_written_field():
    cfg = config_from_dict(GRAPH)
    assert config_from_dict(cfg.to_dict()).to_dict() == cfg.to_dict()
    assert cfg.routes["router"]["field"] == "route"


def test_rules_choose_the_route_and_say_why():
    out = route(router(), "What does E-4012 mean?")
    assert out == {"route": "keyword", "route_source": "rule",
                   "route_reason": "rules[0] keyword: pattern '(?<![A-Za-z0-9])[A-Z]{1,4}-\\d{2,5}' matched 'E-4012'"}
    out = route(router(), "LX-200 主控芯片的供应商是谁？")
    assert out["route"] == "keyword"  # rules are tried in order: the code matches first
    assert route(router(), "Who makes the chip?")["route_reason"] == "rules[1] graph: keyword 'who makes'"


def test_no_rule_and_no_llm_takes_the_default_route():
    out = route(router(), "How do I reset my laptop?")
    assert out["route"] == "vector" and out["route_source"] == "default" and "default route" in out["route_reason"]


def test_labels_are_checked_at_load_time():
    with pytest.raises(ConfigError, match="'keywrd' is not one of the routes; did you mean 'keyword'"):
        config_from_dict({**GRAPH, "nodes": {**GRAPH["nodes"], "router": {"type": "intent_router", "params": {
            "routes": ROUTES, "rules": [{"label": "keywrd", "keywords": ["x"]}], "default_route": "vector"}}}})


def test_llm_classifies_what_no_rule_matches(fault_server, llm_spec):
    fault_server.push("text:" + json.dumps({"route": "graph", "reason": "asks for a relation"}))
    r = router(llm=llm_spec)
    assert route(r, "E-4012?")["route_source"] == "rule" and not fault_server.requests  # rules first, no call
    out = route(r, "Whose module is inside the gateway?")
    assert out["route"] == "graph" and out["route_source"] == "llm" and "asks for a relation" in out["route_reason"]
    prompt = fault_server.requests[0].body["messages"][-1]["content"]
    assert "- keyword: codes" in prompt and "Whose module" in prompt


@pytest.mark.parametrize("script,kind", [(("text:" + json.dumps({"route": "web_search"}),), "unknown_label"),
                                         (("500",), "server_error"),
                                         (("text:<html>nope</html>", "text:{oops"), "bad_json")])
def test_unknown_labels_and_llm_failures_take_the_default_route(fault_server, llm_spec, script, kind):
    fault_server.push(*script)
    out = route(router(llm=llm_spec), "Whose module is inside the gateway?")
    assert out["route"] == "vector" and out["route_source"] == "default"
    assert out["llm_fallback"]["kind"] == kind and out["llm_fallback"]["node"] == "router"
