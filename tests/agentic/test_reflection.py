"""Free-text reflection (an LLM grade's reasons feed the rewrite) and the self-check's conservative retry
(evalkit.nodes.reflection): each fires where it should, and is absent (records unchanged) where it should not."""
from __future__ import annotations

import json

from evalkit.graph import build_graph, config_from_dict, initial_state
from evalkit.nodes.grade import Grade, GradeParams, reflection_text
from evalkit.nodes.reflection import conservative_query, text_terms
from evalkit.nodes.rewrite import QueryRewrite, RewriteParams
from evalkit.records import Hit

DOCUMENT = {"method": "document", "prepend_title": True}
MULTI_HOP = "Who makes the chip used in the ZX-100?"


def hits(view, *doc_ids: str) -> list[Hit]:
    by_doc = {u.doc_id: u.id for u in view.passages().units}
    return [Hit(by_doc[d], d, 1.0 / (i + 1)) for i, d in enumerate(doc_ids)]


def grade_state(question: str, retrieved, attempt: int = 1) -> dict:
    return {**initial_state("q", question, "en"), "retrieved": retrieved, "attempt": attempt}


def retry_state(question: str, reflection: dict) -> dict:
    return {**initial_state("q", question, "en"), "attempt": 1, "rewrite_history": [[question]],
            "reflection": reflection}


# --- free-text reflection --------------------------------------------------------------------------

def test_reflection_text_holds_only_what_an_llm_said():
    graded = [{"doc_id": "d-spec", "relevant": True, "by": "llm", "reason": "says the  ZX-100 uses the KS-9"},
              {"doc_id": "d-noise", "relevant": False, "by": "llm", "reason": "about lunch"},
              {"doc_id": "d-price", "relevant": False, "by": "rule (llm failed)", "reason": "cosine 0.2"},
              {"doc_id": "d-chip", "relevant": True, "by": "atom", "reason": "states 'ZX-100'"}]
    assert reflection_text(graded) == ("[d-spec] relevant: says the ZX-100 uses the KS-9\n"
                                       "[d-noise] not relevant: about lunch")
    assert reflection_text([g for g in graded if g["by"] != "llm"]) == ""


def test_an_llm_grade_writes_its_reasons_as_text(view, fault_server, llm_spec):
    # both judged not relevant -> the gate fails -> a reflection, with the LLM's words in it
    fault_server.push("text:" + json.dumps({"relevant": "no", "reason": "names the KS-9 chip but not its maker"}),
                      "text:" + json.dumps({"relevant": "no", "reason": "about lunch"}))
    node = Grade("grade", GradeParams(embedder="toy", llm=llm_spec, judge_k=2, max_attempts=3), view)
    out = node.run(grade_state(MULTI_HOP, hits(view, "d-spec", "d-noise")))
    assert out["grade_decision"] == "rewrite"
    assert "[d-spec] not relevant: names the KS-9 chip but not its maker" in out["reflection"]["text"]
    assert "[d-noise] not relevant: about lunch" in out["reflection"]["text"]


def test_an_offline_grade_reflection_has_no_text(view):
    node = Grade("grade", GradeParams(embedder="toy", offline={"min_cosine": 0.999}, max_attempts=3), view)
    out = node.run(grade_state(MULTI_HOP, hits(view, "d-noise", "d-price")))
    assert out["grade_decision"] == "rewrite" and "text" not in out["reflection"]


def test_an_llm_grade_that_is_down_leaves_no_text(view, fault_server, llm_spec):
    fault_server.push("500", "500")
    node = Grade("grade", GradeParams(embedder="toy", llm=llm_spec, judge_k=2, offline={"min_cosine": 0.999}), view)
    out = node.run(grade_state(MULTI_HOP, hits(view, "d-noise", "d-price")))
    assert out["reflection"] is not None and "text" not in out["reflection"] and out["llm_fallback"]


def test_text_terms_come_from_the_relevant_lines_only():
    text = ("[d-spec] relevant: the ZX-100 uses the KS-9 chip\n"
            "[d-price] not relevant: lists the ZX-200 price")
    assert text_terms(text, "who makes the chip used in the zx-100?", 4) == ["KS-9"]
    assert text_terms(text, "ks-9 zx-100", 4) == []  # nothing new


def test_offline_rewrite_searches_the_names_the_text_gives(view):
    reflection = {"add_terms": [], "missing_terms": [], "reason": "0 of 2 judged relevant",
                  "text": "[d-spec] relevant: the ZX-100 uses the KS-9 chip"}
    out = QueryRewrite("rewrite", RewriteParams(), view).run(retry_state(MULTI_HOP, reflection))
    assert out["rewrite"] == f"{MULTI_HOP} KS-9" and "reflection text: terms ['KS-9']" in out["rewrite_reason"]
    without = {k: v for k, v in reflection.items() if k != "text"}
    before = QueryRewrite("rewrite", RewriteParams(), view).run(retry_state(MULTI_HOP, without))
    assert before["rewrite"] is None and "reflection text" not in before["rewrite_reason"]


def test_an_llm_rewrite_is_shown_the_text(view, fault_server, llm_spec):
    fault_server.push("text:" + json.dumps({"query": "KS-9 chip maker", "sub_queries": []}))
    reflection = {"add_terms": [], "missing_terms": [], "reason": "gate failed",
                  "text": "[d-spec] relevant: the ZX-100 uses the KS-9 chip"}
    out = QueryRewrite("rewrite", RewriteParams(llm=llm_spec), view).run(retry_state(MULTI_HOP, reflection))
    prompt = fault_server.requests[0].body["messages"][-1]["content"]
    assert "The relevance judge's notes:\n[d-spec] relevant: the ZX-100 uses the KS-9 chip" in prompt
    assert out["rewrite"] == "KS-9 chip maker" and "judge's notes" in out["rewrite_reason"]


def test_an_llm_rewrite_that_answers_garbage_still_uses_the_text_offline(view, fault_server, llm_spec):
    fault_server.push("text:not json", "text:still not json")
    reflection = {"add_terms": [], "missing_terms": [], "reason": "gate failed",
                  "text": "[d-spec] relevant: the ZX-100 uses the KS-9 chip"}
    out = QueryRewrite("rewrite", RewriteParams(llm=llm_spec), view).run(retry_state(MULTI_HOP, reflection))
    assert out["rewrite"] == f"{MULTI_HOP} KS-9" and out["llm_fallback"]["node"] == "rewrite"


# --- conservative self-check retry -----------------------------------------------------------------

def test_conservative_query_keeps_only_the_questions_own_terms():
    query, terms = conservative_query("Which company makes the chip used in the ZX-100?")
    assert terms[0] == "ZX-100" and "makes" in terms and "chip" in terms
    assert not {"which", "the", "in", "used"} & {t.casefold() for t in terms}
    assert query == " ".join(terms)
    assert conservative_query("what is it?") == ("what is it?", [])


def test_a_conservative_reflection_drops_expansions_and_sub_queries(view):
    rw = QueryRewrite("rewrite", RewriteParams(dictionary={"cheaper": ["price list"]}), view)
    q = "Which is cheaper, the ZX-100 or the ZX-200?"
    first = rw.run({**initial_state("q", q, "en")})
    assert first["sub_queries"] and "price list" in first["rewrite"]
    retry = rw.run({**initial_state("q", q, "en"), "attempt": 1, "rewrite_history": [first["queries"]],
                    "reflection": {"strategy": "conservative", "missing_terms": ["ZX-200"], "add_terms": [],
                                   "reason": "self-check failed"}})
    assert retry["rewrite_source"] == "conservative" and retry["sub_queries"] == []
    assert retry["queries"] == [q, conservative_query(q)[0]] and "price list" not in retry["rewrite"]
    assert not retry["rewrite_futile"]


CHECKED = {"name": "checked", "chunking": DOCUMENT, "max_steps": 20,
           "nodes": {"rewrite": {"type": "query_rewrite", "params": {"dictionary": {"kid": ["paternity"]}}},
                     "retrieve": {"type": "retrieve", "params": {"bm25": {"tokenizer": "en"}, "top_k": 3}},
                     "generate": {"type": "generate", "params": {"evidence_from": "retrieved", "evidence_k": 2}},
                     "self_check": {"type": "self_check", "params": {"max_attempts": 2}},
                     "fallback": {"type": "fallback"}},
           "edges": {"start": "rewrite", "rewrite": "retrieve", "retrieve": "generate", "generate": "self_check",
                     "self_check": "end", "fallback": "end"},
           "routes": {"self_check": {"field": "self_check_decision",
                                     "cases": {"retry": "rewrite", "exhausted": "fallback"}}}}


def _checked(llm_spec: dict, retry_rewrite: str | None) -> dict:
    config = json.loads(json.dumps(CHECKED))
    config["nodes"]["generate"]["params"]["llm"] = llm_spec
    if retry_rewrite is not None:
        config["nodes"]["self_check"]["params"]["retry_rewrite"] = retry_rewrite
    return config


def test_self_check_failure_retries_conservatively_through_the_loop(view, fault_server, llm_spec):
    # the generator (scripted) first invents a number, then answers from the evidence
    fault_server.push("text:Employees get 25 days of parental leave [d-leave].",
                      "text:Employees get 10 days of parental leave [d-leave].")
    q = "How many days of leave when my kid is born?"
    out = build_graph(config_from_dict(_checked(llm_spec, "conservative")), view).run(initial_state("q", q, "en"))
    checks = [e for e in out.trace if e.type == "self_check"]
    rewrites = [e for e in out.trace if e.type == "query_rewrite"]
    assert [e.wrote["self_check_decision"] for e in checks] == ["retry", "pass"]
    assert checks[0].wrote["reflection"]["strategy"] == "conservative"
    assert rewrites[0].wrote["rewrite_source"] == "dictionary"
    assert rewrites[1].wrote["rewrite_source"] == "conservative"
    assert "paternity" not in " ".join(rewrites[1].wrote["queries"])


def test_default_retry_rewrite_is_todays(view, fault_server, llm_spec):
    fault_server.push("text:Employees get 25 days of parental leave [d-leave].",
                      "text:Employees get 10 days of parental leave [d-leave].")
    q = "How many days of leave when my kid is born?"
    out = build_graph(config_from_dict(_checked(llm_spec, None)), view).run(initial_state("q", q, "en"))
    checks = [e for e in out.trace if e.type == "self_check"]
    rewrites = [e for e in out.trace if e.type == "query_rewrite"]
    assert "strategy" not in checks[0].wrote["reflection"]
    assert rewrites[1].wrote["rewrite_source"] == "feedback"
