"""The ``answer_each`` node (evalkit.nodes.plan): each sub-question answered from its own evidence, then
composed; a question that was not decomposed is answered exactly as ``generate`` answers it; a model that
is down, slow or answers garbage degrades to the offline path and is counted."""
from __future__ import annotations

from evalkit.graph import build_graph, config_from_dict, initial_state
from evalkit.nodes.generate import Generate, GenerateParams
from evalkit.nodes.plan import AnswerEach, AnswerEachParams
from evalkit.records import Hit

COMPARISON = "Which is cheaper, the ZX-100 or the ZX-200?"
DOCUMENT = {"method": "document", "prepend_title": True}
GRAPH = {"name": "plan", "chunking": DOCUMENT,
         "nodes": {"rewrite": {"type": "query_rewrite"},
                   "retrieve": {"type": "retrieve", "params": {"bm25": {"tokenizer": "en"}, "top_k": 6}},
                   "answer": {"type": "answer_each", "params": {"embedder": "toy", "evidence_k": 1}}},
         "edges": {"start": "rewrite", "rewrite": "retrieve", "retrieve": "answer", "answer": "end"}}


def hits(view, *doc_ids: str) -> list[Hit]:
    by_doc = {u.doc_id: u.id for u in view.passages().units}
    return [Hit(by_doc[d], d, 1.0 / (i + 1)) for i, d in enumerate(doc_ids)]


def node(view, **params) -> AnswerEach:
    return AnswerEach("answer", AnswerEachParams(**{"embedder": "toy", **params}), view)


def state(question: str, retrieved, subs=None) -> dict:
    s = {**initial_state("q", question, "en"), "retrieved": retrieved}
    return s if subs is None else {**s, "sub_queries": subs}


def test_config_round_trips_and_declares_its_pool():
    cfg = config_from_dict(GRAPH)
    assert config_from_dict(cfg.to_dict()).to_dict() == cfg.to_dict()
    assert AnswerEach.contract(AnswerEachParams(pool_from="reranked")).reads == {"question", "reranked"}
    assert "plan" in AnswerEach.contract(AnswerEachParams()).writes


def test_each_sub_question_gets_its_own_evidence_and_answer(view):
    subs = ["Who makes the KS-9 chip?", "How many days of parental leave do employees get?"]
    pool = hits(view, "d-noise", "d-price", "d-chip", "d-leave", "d-spec")
    out = node(view, evidence_k=1).run(state("Who makes the KS-9 chip, and how long is parental leave?", pool, subs))
    steps = out["plan"]["steps"]
    assert [s["sub_question"] for s in steps] == subs
    assert [s["doc_ids"] for s in steps] == [["d-chip"], ["d-leave"]]
    assert all(s["by"] == "extractive" and not s["abstained"] for s in steps)
    assert "Borealis" in steps[0]["answer"] and "10 days" in steps[1]["answer"]
    assert out["answer"] == f"{steps[0]['answer']}\n{steps[1]['answer']}" and out["plan"]["compose"] == "join"
    assert out["used_documents"] == ["d-chip", "d-leave"] and not out["abstained"]
    assert [h.doc_id for h in out["answer_evidence"]] == ["d-chip", "d-leave"]


def test_without_sub_questions_it_is_generate(view):
    pool = hits(view, "d-leave", "d-noise", "d-price")
    question = "How many days of parental leave do employees get?"
    out = node(view, evidence_k=2).run(state(question, pool))
    plain = Generate("g", GenerateParams(llm={"backend": "extractive"}, evidence_from="retrieved", evidence_k=2),
                     view).run(state(question, pool))
    assert {k: v for k, v in out.items() if k != "plan"} == plain
    assert out["plan"]["compose"] == "single" and out["plan"]["steps"][0]["evidence"] == [h.id for h in pool[:2]]


def test_a_comparison_split_by_the_rewriter_is_answered_part_by_part(view):
    out = build_graph(config_from_dict(GRAPH), view).run(initial_state("q", COMPARISON, "en"))
    plan = out.state["plan"]
    assert [s["sub_question"] for s in plan["steps"]] == out.state["sub_queries"] and len(plan["steps"]) == 2
    passages = view.passages()
    for step, item in zip(plan["steps"], ("ZX-100", "ZX-200")):  # each part's evidence names its own item
        assert len(step["evidence"]) == 1 and item in passages.text(step["evidence"][0]) and item in step["answer"]
    assert plan["steps"][0]["evidence"] != plan["steps"][1]["evidence"]
    event = next(e for e in out.trace if e.type == "answer_each")
    assert event.wrote["plan"]["compose"] == "join"


def test_every_sub_answer_abstaining_gives_the_refusal(view):
    out = node(view).run(state("q", [], ["Who is the CEO?", "Where is the head office?"]))
    assert out["abstained"] and out["plan"]["compose"] == "none answered" and out["used_documents"] == []


# --- with a model behind the fault server ------------------------------------------------------------

SUBS = ["Who makes the KS-9 chip?", "How many days of parental leave do employees get?"]
POOL_DOCS = ("d-noise", "d-price", "d-chip", "d-leave")
QUESTION = "Who makes the KS-9 chip, and how long is parental leave?"


def test_a_model_answers_each_part_and_composes_with_citations(view, fault_server, llm_spec):
    fault_server.push("text:Borealis Semiconductor [d-chip].", "text:10 days [d-leave].",
                      "text:Borealis Semiconductor makes it [d-chip]; leave is 10 days [d-leave].")
    out = node(view, llm=llm_spec, evidence_k=1).run(state(QUESTION, hits(view, *POOL_DOCS), SUBS))
    assert out["plan"]["compose"] == "llm" and [s["by"] for s in out["plan"]["steps"]] == ["openai", "openai"]
    assert out["used_documents"] == ["d-chip", "d-leave"] and "llm_fallback" not in out
    compose_prompt = fault_server.requests[2].body["messages"][-1]["content"]
    assert "Part 1: Who makes the KS-9 chip?\nAnswer: Borealis Semiconductor [d-chip]." in compose_prompt


def test_a_model_that_is_down_degrades_to_extractive_and_join(view, fault_server, llm_spec):
    fault_server.push("500", "500", "500")
    out = node(view, llm=llm_spec, evidence_k=1).run(state(QUESTION, hits(view, *POOL_DOCS), SUBS))
    assert [s["by"] for s in out["plan"]["steps"]] == ["extractive (llm failed)"] * 2
    assert out["plan"]["compose"] == "join (llm failed)" and out["llm_fallback"]["failed_calls"] == 3
    assert "Borealis" in out["answer"] and "10 days" in out["answer"]


def test_a_garbage_composition_is_replaced_by_the_join(view, fault_server, llm_spec):
    fault_server.push("text:Borealis Semiconductor [d-chip].", "text:10 days [d-leave].", "text:@@@ lorem ipsum")
    out = node(view, llm=llm_spec, evidence_k=1).run(state(QUESTION, hits(view, *POOL_DOCS), SUBS))
    assert out["plan"]["compose"] == "join (llm failed)" and out["llm_fallback"]["kind"] == "uncited"
    assert out["answer"] == "Borealis Semiconductor [d-chip].\n10 days [d-leave]."


def test_a_slow_model_times_out_into_the_offline_path(view, fault_server, llm_spec):
    fault_server.push("slow:3", "slow:3", "slow:3")
    out = node(view, llm={**llm_spec, "timeout_s": 0.5}, evidence_k=1).run(
        state(QUESTION, hits(view, *POOL_DOCS), SUBS))
    assert [s["by"] for s in out["plan"]["steps"]] == ["extractive (llm failed)"] * 2
    assert out["llm_fallback"]["kind"] and out["plan"]["compose"] == "join (llm failed)"
