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
