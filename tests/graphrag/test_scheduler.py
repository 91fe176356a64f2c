"""agent_scheduler: rule classification, per-class tools and weights, document dedupe, refusals."""
from __future__ import annotations

import pytest
from pydantic import ValidationError

from evalkit.graph import build_graph, config_from_dict, initial_state
from evalkit.nodes.fusion import rrf
from evalkit.nodes.scheduler import DEFAULT_RULES, AgentScheduler, Rule, SchedulerParams, classify, dedupe_by_document
from evalkit.records import Hit


@pytest.mark.parametrize("question, label, matched", [
    ("LX-200 的主控芯片是哪家供应商生产的？", "entity_relation", "keyword '供应商'"),
    ("Which company makes the SoC used in the LX-200 Pro?", "entity_relation", "keyword 'which company'"),
    ("与朔峰 NP-Gate 5 竞争的产品", "entity_relation", "keyword '竞争'"),
    ("设备报 E-4012 是什么意思", "exact_term", "matched 'E-4012'"),     # a code inside Chinese text
    ("what does retry.max_attempts do", "exact_term", "matched 'retry.max_attempts'"),
    ("GET /v2/devices returns 429", "exact_term", "matched '/v2/'"),
    ("What is the default sync interval?", "exact_term", "matched 'default'"),
    ("电脑坏了找谁修", "open_semantic", "no rule matched"),
])
def test_default_rules_classify_zh_and_en(question, label, matched):
    got, reason = classify(question, list(DEFAULT_RULES), "open_semantic")
    assert got == label and matched in reason


def test_first_matching_rule_wins_and_keywords_ignore_case_and_width():
    rules = [Rule(label="a", keywords=["Supplier"]), Rule(label="b", patterns=[r"E-\d+"])]
    assert classify("ＳＵＰＰＬＩＥＲ of E-4012?", rules, "z")[0] == "a"
    assert classify("E-4012?", rules, "z") == ("b", "rules[1] b: pattern 'E-\\d+' matched 'E-4012'")


def test_dedupe_keeps_the_best_ranked_passage_of_each_document():
    hits = [Hit("a#1", "a", 0.9), Hit("b#0", "b", 0.8), Hit("a#0", "a", 0.7), Hit("c#0", "c", 0.6)]
    assert dedupe_by_document(hits) == [hits[0], hits[1], hits[3]]


class FakeTool:
    """Stands for a retriever: returns a fixed ranking, records that it was called."""

    def __init__(self, hits):
        self.hits, self.calls = hits, 0

    def run(self, state):
        self.calls += 1
        return {"retrieved": list(self.hits)}


def _scheduler(**params) -> AgentScheduler:
    node = AgentScheduler.__new__(AgentScheduler)
    node.name, node.params, node.resources = "s", SchedulerParams(**params), None
    node.work, node.context = None, {}  # what build_graph sets (no work sharing here)
    return node


def test_each_class_calls_its_tools_and_fuses_with_its_weights():
    dense = [Hit("d1#0", "d1", 0.9), Hit("d2#0", "d2", 0.8)]
    bm25 = [Hit("d2#1", "d2", 9.0), Hit("d3#0", "d3", 5.0), Hit("d2#0", "d2", 4.0)]
    node = _scheduler(graph=None, weights={"entity_relation": {"dense": 1.0, "bm25": 0.0},
                                           "exact_term": {"bm25": 1.0, "dense": 0.25},
                                           "open_semantic": {"dense": 1.0, "bm25": 1.0}})
    node.tools = {"dense": FakeTool(dense), "bm25": FakeTool(bm25)}
    out = node.run(initial_state("q", "error E-4012", "en"))
    assert out["scheduler_class"] == "exact_term" and "E-4012" in out["scheduler_reason"]
    assert out["tool_hits"] == {"bm25": bm25, "dense": dense}
    expected = dedupe_by_document(rrf([bm25, dense], [1.0, 0.25], 60))
    assert out["retrieved"] == expected
    assert [h.id for h in out["retrieved"]] == ["d2#0", "d3#0", "d1#0"]  # d2#1 ranked below d2#0: dropped
    out = node.run(initial_state("q", "tell me about d", "en"))  # open_semantic: equal weights, another order
    assert out["scheduler_class"] == "open_semantic"
    assert [h.id for h in out["retrieved"]] == ["d2#0", "d1#0", "d3#0"]
    out = node.run(initial_state("q", "who is the supplier?", "en"))
    assert out["scheduler_class"] == "entity_relation" and set(out["tool_hits"]) == {"dense"}  # weight 0: not called
    assert out["retrieved"] == dense


def test_llm_classifier_is_refused_for_now():
    with pytest.raises(ValidationError, match="LLM fallback classifier is not available yet"):
        SchedulerParams(llm={"model": "gpt"})


@pytest.mark.parametrize("params, message", [
    ({"weights": {"entity_relation": {"graph": 1}, "exact_term": {"bm25": 1}}}, "'open_semantic' has no entry"),
    ({"weights": {"entity_relation": {"grpah": 1}, "exact_term": {"bm25": 1}, "open_semantic": {"dense": 1}}},
     "did you mean 'graph'"),
    ({"graph": None}, "weights.entity_relation.graph > 0 but the 'graph' tool is not configured"),
    ({"weights": {"entity_relation": {"dense": 0}, "exact_term": {"bm25": 1}, "open_semantic": {"dense": 1}}},
     "at least one tool"),
    ({"rules": [{"label": "x", "patterns": ["(unclosed"]}]}, "not a valid regular expression"),
])
def test_inconsistent_params_are_refused(params, message):
    with pytest.raises(ValidationError, match=message):
        SchedulerParams(**params)


def test_scheduler_runs_the_real_tools_in_a_graph(view):
    cfg = config_from_dict({"name": "s", "chunking": {"method": "document"}, "nodes": {"s": {
        "type": "agent_scheduler", "params": {"dense": None, "bm25": {"tokenizer": "en"},
                                              "graph": {"link": {"embedding": False}},
                                              "weights": {"entity_relation": {"graph": 1.0, "bm25": 1.0},
                                                          "exact_term": {"bm25": 1.0},
                                                          "open_semantic": {"bm25": 1.0}}}}},
        "edges": {"start": "s", "s": "end"}})
    outcome = build_graph(cfg, view).run(initial_state("q", "Which company makes the chip used in the ZX-100?", "en"))
    state = outcome.state
    assert outcome.error is None and state["scheduler_class"] == "entity_relation"
    assert set(state["tool_hits"]) == {"graph", "bm25"}
    docs = [h.doc_id for h in state["retrieved"]]
    assert len(docs) == len(set(docs)) and "d-chip" in docs
