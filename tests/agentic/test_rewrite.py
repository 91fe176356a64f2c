"""The ``query_rewrite`` node: dictionary, splitting, feedback retries, futility, guard, LLM and its failures."""
from __future__ import annotations

import json

import pytest

from evalkit.graph import config_from_dict, initial_state
from evalkit.nodes.rewrite import (
    QueryRewrite,
    RewriteParams,
    dictionary_expansions,
    split_comparison,
)

GRAPH = {"name": "rw", "nodes": {"rewrite": {"type": "query_rewrite", "params": {"dictionary": {"kid": ["parental leave"]}}},
                                 "retrieve": {"type": "retrieve", "params": {"bm25": {}}}},
         "edges": {"start": "rewrite", "rewrite": "retrieve", "retrieve": "end"}}


def node(view=None, **params) -> QueryRewrite:
    return QueryRewrite("rewrite", RewriteParams(**params), view)


def state(question: str, **extra):
    return {**initial_state("q", question, "en"), **extra}


def test_config_round_trips():
    cfg = config_from_dict(GRAPH)
    assert config_from_dict(cfg.to_dict()).to_dict() == cfg.to_dict()
    assert cfg.nodes["rewrite"]["params"]["dictionary"] == {"kid": ["parental leave"]}


def test_question_is_never_written_and_attempt_counts_from_one():
    rw = node(dictionary={"kid": ["parental leave"]})
    assert "question" not in rw.writes
    first = rw.run(state("How many days off when my kid is born?"))
    assert first["attempt"] == 1
    assert first["rewrite"] == "How many days off when my kid is born? parental leave"
    # the original question stays first; retrieval fuses both
    assert first["queries"] == ["How many days off when my kid is born?", first["rewrite"]]
    assert first["rewrite_source"] == "dictionary" and "kid" in first["rewrite_reason"]
    second = rw.run(state("x", attempt=first["attempt"]))
    assert second["attempt"] == 2


def test_no_match_keeps_the_original_only():
    out = node(dictionary={"kid": ["parental leave"]}).run(state("What does the cafeteria serve?"))
    assert out["rewrite"] is None and out["queries"] == ["What does the cafeteria serve?"]
    assert out["rewrite_source"] == "none"


def test_dictionary_matching_is_case_and_width_insensitive():
    keys, extra = dictionary_expansions("My KID was born", {"kid": ["parental leave", "born"], "cat": ["pet"]})
    assert keys == ["kid"] and extra == ["parental leave"]  # "born" is already in the question


def test_comparisons_split_into_at_most_n_sub_queries():
    assert split_comparison("Which is cheaper, the ZX-100 or the ZX-200?", 3) == [
        "Which is cheaper, the ZX-100?", "Which is cheaper, the ZX-200?"]
    assert split_comparison("2025年第二季度华南区和华北区哪个销售额更高？", 3) == [
        "2025年第二季度华南区哪个销售额更高？", "2025年第二季度华北区哪个销售额更高？"]
    three = "Which region had the highest revenue in Q1 2025: East, South or North China?"
    assert len(split_comparison(three, 3)) == 3 and len(split_comparison(three, 2)) == 2
    assert split_comparison("What does error E-4012 mean?", 3) == []
    out = node(max_subqueries=2).run(state("Which is cheaper, the ZX-100 or the ZX-200?"))
    assert out["sub_queries"] == ["Which is cheaper, the ZX-100?", "Which is cheaper, the ZX-200?"]
    assert out["queries"][0] == "Which is cheaper, the ZX-100 or the ZX-200?" and len(out["queries"]) == 3
    assert out["rewrite_source"] == "split"


def test_retry_uses_the_feedback_and_must_differ():
    rw = node(feedback_terms=2)
    q = "Who makes the chip used in the ZX-100?"
    first = rw.run(state(q))
    feedback = {"reason": "0 of 8 judged relevant", "missing_terms": [], "add_terms": ["KS-9", "Borealis", "Oslo"],
                "exclude_terms": ["cafeteria"]}
    second = rw.run(state(q, **{k: first[k] for k in ("attempt", "rewrite_history")}, reflection=feedback))
    assert second["attempt"] == 2 and second["rewrite"] == f"{q} KS-9 Borealis"
    assert second["rewrite_source"] == "feedback" and not second["rewrite_futile"]
    # the next retry adds only terms not used before
    third = rw.run(state(q, **{k: second[k] for k in ("attempt", "rewrite_history")}, reflection=feedback))
    assert third["rewrite"] == f"{q} Oslo" and not third["rewrite_futile"]
    # nothing new left: the same queries as an earlier attempt -> futile
    stale = {**feedback, "add_terms": ["KS-9", "Borealis", "Oslo"]}
    fourth = rw.run(state(q, **{k: third[k] for k in ("attempt", "rewrite_history")}, reflection=stale))
    assert fourth["attempt"] == 4 and fourth["rewrite_futile"] is True
    assert "futile" in fourth["rewrite_reason"]
    assert len(fourth["rewrite_history"]) == 4


def test_missing_names_from_the_feedback_are_repeated():
    q = "How much does the ZX-900 cost?"
    out = node().run(state(q, attempt=1, rewrite_history=[[q]],
                           reflection={"missing_terms": ["ZX-900"], "add_terms": []}))
    assert out["rewrite"] == f"{q} ZX-900" and not out["rewrite_futile"]


def test_similarity_guard_keeps_the_original_when_the_rewrite_is_too_close(view):
    rw = node(view, dictionary={"kid": ["child"]}, similarity_guard={"embedder": "toy", "max_cosine": 0.5})
    out = rw.run(state("How many days off when my kid is born?"))
    assert out["rewrite"] is None and "guard" in out["rewrite_source"] and "cosine" in out["rewrite_reason"]
    assert out["queries"] == ["How many days off when my kid is born?"]
    loose = node(view, dictionary={"kid": ["child"]}, similarity_guard={"embedder": "toy", "max_cosine": 0.999})
    assert loose.run(state("How many days off when my kid is born?"))["rewrite"].endswith("child")


def test_llm_rewrite_is_used_when_the_dictionary_has_nothing(view, fault_server, llm_spec):
    reply = json.dumps({"query": "ZX-100 chip manufacturer", "sub_queries": ["ZX-100 chip", "KS-9 maker"]})
    fault_server.push(f"text:{reply}")
    out = node(view, llm=llm_spec).run(state("Who makes the chip used in the ZX-100?"))
    assert out["rewrite"] == "ZX-100 chip manufacturer" and out["sub_queries"] == ["ZX-100 chip", "KS-9 maker"]
    assert out["rewrite_source"] == "llm" and "llm_fallback" not in out
    body = fault_server.requests[0].body
    assert "Who makes the chip" in body["messages"][-1]["content"]


@pytest.mark.parametrize("script", [("500",), ("text:not json at all", "text:still not json"),
                                    ("text:" + json.dumps({"sub_queries": []}),)])
def test_llm_failure_or_garbage_degrades_to_the_original(view, fault_server, llm_spec, script):
    fault_server.push(*script)
    out = node(view, llm=llm_spec).run(state("Who makes the chip used in the ZX-100?"))
    assert out["rewrite"] is None and out["queries"] == ["Who makes the chip used in the ZX-100?"]
    assert out["llm_fallback"]["node"] == "rewrite" and out["llm_fallback"]["kind"]
    assert "llm failed" in out["rewrite_reason"]


def test_llm_retry_failure_falls_back_to_the_offline_feedback_query(view, fault_server, llm_spec):
    fault_server.push("500")
    q = "Who makes the chip used in the ZX-100?"
    out = node(view, llm=llm_spec).run(state(q, attempt=1, rewrite_history=[[q]],
                                             reflection={"add_terms": ["KS-9"], "missing_terms": []}))
    assert out["rewrite"] == f"{q} KS-9" and out["rewrite_source"] == "feedback"
    assert out["llm_fallback"]["attempt"] == 2


def test_a_retry_keeps_the_dictionary_expansion():
    rw = node(dictionary={"kid": ["parental leave"]})
    q = "How many days off when my kid is born?"
    first = rw.run(state(q))
    second = rw.run(state(q, **{k: first[k] for k in ("attempt", "rewrite_history")},
                          reflection={"add_terms": ["HR portal"], "missing_terms": []}))
    assert second["rewrite"] == f"{q} HR portal parental leave" and not second["rewrite_futile"]


# --- conversations: history ------------------------------------------------------------------------

ZH_HISTORY = [{"role": "user", "content": "按2026年的差旅制度，去一线城市出差每晚住宿最多能报多少钱？"},
              {"role": "assistant", "content": "每晚不超过 750 元。"}]
EN_HISTORY = [{"role": "user", "content": "What is the hotel cap in tier-1 cities?"},
              {"role": "assistant", "content": "750 yuan per night."},
              {"role": "user", "content": "Does the cap include breakfast?"},
              {"role": "assistant", "content": "No."}]


def test_a_follow_up_is_made_standalone_with_the_earlier_user_turn():
    out = node().run(state("那二线城市呢？", history=ZH_HISTORY))
    standalone = "按2026年的差旅制度，去一线城市出差每晚住宿最多能报多少钱？ 那二线城市呢？"
    assert out["queries"] == [standalone]  # the bare follow-up is not searched
    assert out["rewrite"] == standalone and out["rewrite_source"] == "history"
    assert "follow-up: the last 1 user turn(s)" in out["rewrite_reason"]
    en = node(history={"turns": 2}).run(state("What about tier-2 cities?", history=EN_HISTORY))
    assert en["queries"] == ["What is the hotel cap in tier-1 cities? Does the cap include breakfast? "
                             "What about tier-2 cities?"]


def test_questions_that_are_not_follow_ups_keep_their_own_words():
    out = node().run(state("How many days of parental leave do employees get?", history=EN_HISTORY))
    assert out["queries"] == ["How many days of parental leave do employees get?"] and out["rewrite"] is None
    # Latin-script markers are whole words: "itinerary" holds "it" but is not a follow-up
    assert node().run(state("Who approves the itinerary?", history=EN_HISTORY))["rewrite"] is None
    assert node().run(state("那二线城市呢？"))["rewrite"] is None  # no history: nothing to resolve
    off = node(history={"mode": "off"}).run(state("那二线城市呢？", history=ZH_HISTORY))
    assert off["queries"] == ["那二线城市呢？"]
    always = node(history={"mode": "always"}).run(state("How many days of leave?", history=EN_HISTORY))
    assert always["queries"] == ["Does the cap include breakfast? How many days of leave?"]


def test_history_is_read_only_when_used():
    assert "history" in QueryRewrite.contract(RewriteParams()).reads
    assert "history" not in QueryRewrite.contract(RewriteParams(history={"mode": "off"})).reads


def test_the_llm_makes_a_follow_up_standalone(view, fault_server, llm_spec):
    fault_server.push("text:" + json.dumps({"query": "按2026年差旅制度，二线城市每晚住宿最多能报多少钱？"}))
    out = node(view, llm=llm_spec).run(state("那二线城市呢？", history=ZH_HISTORY))
    assert out["queries"] == ["按2026年差旅制度，二线城市每晚住宿最多能报多少钱？"]
    assert out["rewrite_source"] == "history-llm" and "llm_fallback" not in out
    assert len(fault_server.requests) == 1  # the standalone question is not rewritten a second time
    prompt = fault_server.requests[0].body["messages"][-1]["content"]
    assert "user: 按2026年的差旅制度" in prompt and "assistant: 每晚不超过 750 元。" in prompt


@pytest.mark.parametrize("script", [("500",), ("text:" + json.dumps({"answer": "750"}),)])
def test_an_llm_failure_takes_the_offline_rule_and_is_counted(view, fault_server, llm_spec, script):
    fault_server.push(*script, "500")  # the standalone call fails; then the ordinary rewrite's call fails too
    out = node(view, llm=llm_spec).run(state("那二线城市呢？", history=ZH_HISTORY))
    assert out["queries"] == ["按2026年的差旅制度，去一线城市出差每晚住宿最多能报多少钱？ 那二线城市呢？"]
    assert out["rewrite_source"].startswith("history") and out["llm_fallback"]["node"] == "rewrite"
    assert "llm failed" in out["rewrite_reason"]
