"""agent_scheduler: rule classification, LLM fallback, per-class tools and weights, document dedupe,
per-tool stats, refusals."""
from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from evalkit.graph import build_graph, config_from_dict, initial_state
from evalkit.nodes.dedupe import Dedupe, dedupe_by_document
from evalkit.nodes.fusion import rrf
from evalkit.nodes.scheduler import DEFAULT_RULES, AgentScheduler, Rule, SchedulerParams, classify
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
    """Stands for a retriever: returns a fixed ranking and a fixed search time, records that it was called."""

    def __init__(self, hits, ms: float = 5.0):
        self.hits, self.ms, self.calls = hits, ms, 0

    def search(self, queries):
        self.calls += 1
        return list(self.hits), {}, self.ms


def _scheduler(**params) -> AgentScheduler:
    node = AgentScheduler.__new__(AgentScheduler)
    node.name, node.params, node.resources = "s", SchedulerParams(**params), None
    node.work, node.context, node.client = None, {}, None  # what build_graph and __init__ set (no llm, no sharing)
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
    assert out["scheduler_source"] == "rule" and "llm_fallback" not in out
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


def test_tool_stats_count_what_each_tool_supplied_to_the_fused_top_k_by_hand():
    # dense top-2 docs {d1, d2}; bm25 top-2 docs {d2, d3}; fused (RRF, deduped) d2, d1, d3 (see the test above)
    dense = [Hit("d1#0", "d1", 0.9), Hit("d2#0", "d2", 0.8)]
    bm25 = [Hit("d2#1", "d2", 9.0), Hit("d3#0", "d3", 5.0), Hit("d2#0", "d2", 4.0)]
    node = _scheduler(graph=None, stats_k=2, weights={"entity_relation": {"dense": 1.0},
                                                      "exact_term": {"bm25": 1.0, "dense": 0.25},
                                                      "open_semantic": {"dense": 1.0, "bm25": 1.0}})
    node.tools = {"dense": FakeTool(dense, ms=12.5), "bm25": FakeTool(bm25, ms=3.0)}
    out = node.run(initial_state("q", "error E-4012", "en"))
    # fused top 2 documents: d2 (both tools' top 2), d3 (bm25's top 2 only)
    assert [h.doc_id for h in out["retrieved"][:2]] == ["d2", "d3"]
    assert out["tool_stats"] == {"bm25": {"hits": 3, "supplied": 2, "unique": 1, "latency_ms": 3.0},
                                 "dense": {"hits": 2, "supplied": 1, "unique": 0, "latency_ms": 12.5}}


def test_dedupe_documents_still_works_and_dedupe_replaces_it():
    assert SchedulerParams().dedupe == Dedupe(by="document", keep="best_rank")
    assert SchedulerParams(dedupe_documents=True).dedupe == Dedupe(keep="best_rank")
    assert SchedulerParams(dedupe_documents=False).dedupe is None
    assert SchedulerParams(dedupe={"keep": "most_hits"}).dedupe == Dedupe(keep="most_hits")
    with pytest.raises(ValidationError, match="either 'dedupe' or the deprecated 'dedupe_documents'"):
        SchedulerParams(dedupe_documents=True, dedupe=None)
    hits = [Hit("a#1", "a", 0.9), Hit("b#0", "b", 0.8), Hit("a#0", "a", 0.7)]
    node = _scheduler(graph=None, dedupe_documents=False,
                      weights={"entity_relation": {"dense": 1.0}, "exact_term": {"dense": 1.0},
                               "open_semantic": {"dense": 1.0}})
    node.tools = {"dense": FakeTool(hits)}
    assert node.run(initial_state("q", "anything", "en"))["retrieved"] == hits  # no dedupe: both a passages


# --- the LLM fallback ----------------------------------------------------------------------------
WEIGHTS = {"entity_relation": {"bm25": 1.0}, "exact_term": {"bm25": 1.0}, "open_semantic": {"bm25": 1.0}}


@pytest.fixture
def llm_spec(fault_server) -> dict:
    """An ``openai`` LLM spec for the fault server: no retries, no cache (every call reaches it)."""
    return {"backend": "openai", "model": "scripted", "base_url": fault_server.base_url, "max_retries": 0,
            "timeout_s": 30.0, "cache": "off"}


def _llm_scheduler(llm_spec, view, **params) -> AgentScheduler:
    node = AgentScheduler("s", SchedulerParams(graph=None, dense=None, weights=WEIGHTS, llm=llm_spec, **params), view)
    node.tools = {"bm25": FakeTool([Hit("d1#0", "d1", 1.0)])}
    return node


def test_rules_first_then_the_llm_with_the_configured_examples(fault_server, llm_spec, view):
    fault_server.push("text:" + json.dumps({"class": "Entity_Relation", "reason": "asks whose part it is"}))
    examples = [{"question": "Who builds the K3 battery?", "label": "entity_relation"},
                {"question": "What is code W-311?", "label": "exact_term"}]
    node = _llm_scheduler(llm_spec, view, examples=examples)
    out = node.run(initial_state("q", "What does E-4012 mean?", "en"))
    assert out["scheduler_source"] == "rule" and not fault_server.requests  # a rule matched: no call
    out = node.run(initial_state("q", "Whose module sits inside the gateway?", "en"))
    assert out["scheduler_class"] == "entity_relation" and out["scheduler_source"] == "llm"  # case folded
    assert "asks whose part it is" in out["scheduler_reason"] and "llm_fallback" not in out
    prompt = fault_server.requests[0].body["messages"][-1]["content"]
    assert "Question: Who builds the K3 battery?\nReply: {\"class\": \"entity_relation\"}" in prompt
    assert "- exact_term: exact codes" in prompt and prompt.endswith("Question: Whose module sits inside the "
                                                                     "gateway?\nReply:")
    assert fault_server.requests[0].body["max_tokens"] == 80  # a label needs few tokens (spec default: 512)


def test_the_spec_can_cap_the_classifier_reply_lower(fault_server, llm_spec, view):
    fault_server.push("text:" + json.dumps({"class": "exact_term"}))
    out = _llm_scheduler({**llm_spec, "max_tokens": 30}, view).run(initial_state("q", "Whose module?", "en"))
    assert out["scheduler_class"] == "exact_term" and fault_server.requests[0].body["max_tokens"] == 30


@pytest.mark.parametrize("script, kind", [
    (("text:" + json.dumps({"class": "web_search"}),), "unknown_label"),      # the llm lies: no such class
    (("text:" + json.dumps({"label": "exact_term"}),), "bad_json"),           # no 'class' key
    (("500",), "server_error"),                                                # the llm is down
    (("text:<html>nope</html>", "text:{oops"), "bad_json"),                   # garbage twice
])
def test_llm_failures_fall_back_to_the_default_class_and_are_recorded(fault_server, llm_spec, view, script, kind):
    fault_server.push(*script)
    out = _llm_scheduler(llm_spec, view).run(initial_state("q", "Whose module sits inside the gateway?", "en"))
    assert out["scheduler_class"] == "open_semantic" and out["scheduler_source"] == "default"
    assert out["llm_fallback"]["kind"] == kind and out["llm_fallback"]["node"] == "s"
    assert out["retrieved"] == [Hit("d1#0", "d1", 1.0)]  # the query still retrieves (degraded, not stopped)


def test_an_unreachable_llm_degrades_the_query_in_a_graph_run(view):
    from evalkit.llm.usage import usage_scope

    cfg = config_from_dict({"name": "s", "chunking": {"method": "document"}, "nodes": {"s": {
        "type": "agent_scheduler", "params": {"dense": None, "graph": None, "bm25": {"tokenizer": "en"},
                                              "weights": WEIGHTS, "llm": {"backend": "openai", "model": "m",
                                              "base_url": "http://127.0.0.1:9/v1", "max_retries": 0,
                                              "timeout_s": 2.0, "cache": "off"}}}},
        "edges": {"start": "s", "s": "end"}})
    with usage_scope() as usage:
        outcome = build_graph(cfg, view).run(initial_state("q", "Tell me about the cafeteria", "en"))
    assert outcome.error is None and outcome.state["scheduler_source"] == "default"
    assert [r["kind"] for r in outcome.state["llm_fallback"]] == ["connection"]
    assert usage["schedule"].failures == 1 and outcome.state["retrieved"]


def test_llm_examples_must_name_a_class():
    with pytest.raises(ValidationError, match="examples\\[0\\].label: 'exact_trem' is not a class.*did you mean"):
        SchedulerParams(llm={"backend": "local"}, examples=[{"question": "q?", "label": "exact_trem"}])


@pytest.mark.integration
def test_the_real_local_llm_gives_a_class_or_a_recorded_fallback(view):
    """SmolLM2-135M through the real local backend: whatever it says, the class is a configured one."""
    node = AgentScheduler("s", SchedulerParams(graph=None, dense=None, weights=WEIGHTS,
                                               llm={"backend": "local", "max_tokens": 40}), view)
    out = node.run(initial_state("q", "Whose module sits inside the gateway?", "en"))
    assert out["scheduler_class"] in WEIGHTS
    assert (out["scheduler_source"] == "llm") != ("llm_fallback" in out)


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


# --- what the graph tools found reaches the state (and a generator) -----------------------------
GRAPH_WEIGHTS = {"entity_relation": {"graph": 1.0, "bm25": 1.0}, "exact_term": {"bm25": 1.0},
                 "open_semantic": {"bm25": 1.0}}


def _graph_run(view, nodes: dict, edges: dict, question: str) -> dict:
    cfg = config_from_dict({"name": "s", "chunking": {"method": "document"}, "nodes": nodes, "edges": edges})
    outcome = build_graph(cfg, view).run(initial_state("q", question, "en"))
    assert outcome.error is None, outcome.error
    return outcome.state


def test_the_graph_tool_writes_its_triples_and_entities_like_graph_local(view):
    """The root cause of graph_evidence on 0 of 120 demo queries: the tool's triples were never asked for."""
    params = {"dense": None, "bm25": {"tokenizer": "en"}, "graph": {"link": {"embedding": False}},
              "weights": GRAPH_WEIGHTS, "max_evidence": 3}
    nodes = {"s": {"type": "agent_scheduler", "params": params}}
    state = _graph_run(view, nodes, {"start": "s", "s": "end"}, "Which company makes the chip used in the ZX-100?")
    local = _graph_run(view, {"g": {"type": "graph_local", "params": {"link": {"embedding": False},
                                                                       "max_evidence": 3}}},
                       {"start": "g", "g": "end"}, "Which company makes the chip used in the ZX-100?")
    assert state["scheduler_class"] == "entity_relation"
    assert state["graph_evidence"] == local["graph_evidence"] and len(state["graph_evidence"]) == 3
    assert state["graph_evidence"][0] == "ZX-100 [co_occurs] KS-9 (d-spec)"
    assert state["graph_entities"] == local["graph_entities"]
    other = _graph_run(view, nodes, {"start": "s", "s": "end"}, "What does error E-4012 mean?")
    assert other["scheduler_class"] == "exact_term"  # the graph tool was not called: nothing stale, nothing new
    assert other["graph_evidence"] == [] and other["graph_entities"] == [] and "graph" not in other["tool_hits"]


def test_without_a_graph_tool_nothing_graph_is_declared():
    from evalkit.nodes.scheduler import AgentScheduler as S

    bare = S.contract(SchedulerParams(graph=None, weights=WEIGHTS)).writes
    assert not bare & {"graph_evidence", "graph_entities", "graph_communities"}
    full = S.contract(SchedulerParams()).writes
    assert {"graph_evidence", "graph_entities"} <= full and "graph_communities" not in full


def test_scheduler_graph_facts_reach_the_generator(view):
    """scheduler -> generate (graph_evidence: true): the triples' source documents are citable and checked."""
    llm = {"backend": "openai", "model": "m", "base_url": "http://127.0.0.1:9/v1", "max_retries": 0, "cache": "off"}
    nodes = {"s": {"type": "agent_scheduler", "params": {"dense": None, "bm25": {"tokenizer": "en"},
                                                         "graph": {"link": {"embedding": False}},
                                                         "weights": GRAPH_WEIGHTS, "max_evidence": 5}},
             "generate": {"type": "generate", "params": {"llm": llm, "evidence_from": "retrieved", "evidence_k": 1,
                                                         "graph_evidence": True}}}
    cfg = config_from_dict({"name": "s", "chunking": {"method": "document"}, "nodes": nodes,
                            "edges": {"start": "s", "s": "generate", "generate": "end"}})
    graph = build_graph(cfg, view)
    seen = {}

    class Recorder:  # the generator's LLM: records the prompt, answers citing the chip's maker's document
        identity = "recorder"

        def chat(self, user, **kw):
            from evalkit.llm.base import ChatResponse

            seen["user"], seen["evidence"] = user, kw.get("evidence")
            return ChatResponse(text="Borealis Semiconductor makes it [d-chip].", finish_reason="stop")

    graph.nodes["generate"].client = Recorder()
    outcome = graph.run(initial_state("q", "Which company makes the chip used in the ZX-100?", "en"))
    assert outcome.error is None, outcome.error
    state = outcome.state
    assert "Graph facts" in seen["user"] and "[d-chip] KS-9 --co_occurs--> Borealis Semiconductor Ltd" in seen["user"]
    assert state["used_documents"] == ["d-chip"] and state["invalid_citations"] == []
    assert "d-chip" in {h.doc_id for h in state["answer_evidence"]}
    assert [d for d, _ in seen["evidence"]][1:] and all("-->" not in t for _, t in seen["evidence"])


def test_graph_global_is_a_scheduler_tool(view):
    comm = {"algorithm": "louvain", "min_size": 2}
    params = {"dense": None, "bm25": {"tokenizer": "en"}, "graph": None,
              "graph_global": {"communities": comm, "top_communities": 2},
              "weights": {"entity_relation": {"graph_global": 1.0, "bm25": 1.0}, "exact_term": {"bm25": 1.0},
                          "open_semantic": {"graph_global": 1.0}}}
    q = "Which company makes the chip used in the ZX-100?"
    state = _graph_run(view, {"s": {"type": "agent_scheduler", "params": params}}, {"start": "s", "s": "end"}, q)
    alone = _graph_run(view, {"g": {"type": "graph_global", "params": {"communities": comm, "top_communities": 2}}},
                       {"start": "g", "g": "end"}, q)
    assert set(state["tool_hits"]) == {"graph_global", "bm25"}
    assert state["tool_hits"]["graph_global"] == alone["retrieved"]  # the same search as the node's
    assert state["graph_communities"] == alone["graph_communities"] and state["graph_communities"]
    assert state["tool_stats"]["graph_global"]["hits"] == len(alone["retrieved"])
    with pytest.raises(ValidationError, match="'graph_global' tool is not configured"):
        SchedulerParams(graph_global=None, weights={**params["weights"]})
