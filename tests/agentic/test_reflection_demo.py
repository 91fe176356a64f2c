"""Free-text reflection and the conservative self-check retry on the demo corpus (BM25 over the bundled demo
documents, a scripted model behind the fault server: every reply is scripted): each fires and is traced, and
with it off the loop does what it did before."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalkit.graph import build_graph, config_from_dict, initial_state
from evalkit.index.corpus import load_corpus
from evalkit.index.resources import Resources
from evalkit.judges import make_judge

REPO = Path(__file__).resolve().parents[2]
CHUNKING = {"method": "fixed", "size": 400, "overlap": 80}
CARD = "What is the monthly corporate card limit for managers?"  # demo q003, gold fin-009


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    corpus = load_corpus(REPO / "eval_sets" / "corpora" / "demo_kb.jsonl")
    return Resources(corpus, cache_root=tmp_path_factory.mktemp("demo_cache"), make_judge=make_judge).for_variant(CHUNKING)


def _run(view, config: dict, question: str):
    out = build_graph(config_from_dict(config), view).run(initial_state("q", question, "en"))
    assert out.error is None, out.error
    return out


def _of(trace, node_type: str) -> list[dict]:
    return [e.wrote for e in trace if e.type == node_type]


def graded_loop(llm_spec: dict) -> dict:
    return {"name": "graded", "chunking": CHUNKING, "max_steps": 20,
            "nodes": {"rewrite": {"type": "query_rewrite", "params": {"split": False}},
                      "retrieve": {"type": "retrieve", "params": {"bm25": {"top_k": 20}, "top_k": 20}},
                      "grade": {"type": "grade", "params": {"embedder": "toy", "llm": llm_spec, "judge_k": 2,
                                                            "min_relevant": 2, "require_atoms": False,
                                                            "max_attempts": 2}},
                      "fallback": {"type": "fallback"}},
            "edges": {"start": "rewrite", "rewrite": "retrieve", "retrieve": "grade", "grade": "end",
                      "fallback": "end"},
            "routes": {"grade": {"field": "grade_decision",
                                 "cases": {"generate": "end", "rewrite": "rewrite", "fallback": "fallback"}}}}


def _verdict(relevant: bool, reason: str) -> str:
    return "text:" + json.dumps({"relevant": "yes" if relevant else "no", "reason": reason})


@pytest.mark.integration
def test_an_llm_grades_reasons_reach_the_next_query_on_the_demo(demo, scripted_server, llm_spec):
    scripted_server.push(_verdict(True, "gives the FlowPay card limits for Managers"), _verdict(False, "about hotels"),
                         _verdict(True, "states the limit"), _verdict(True, "states the limit"))
    out = _run(demo, graded_loop(llm_spec), CARD)
    grades, rewrites = _of(out.trace, "grade"), _of(out.trace, "query_rewrite")
    assert [g["grade_decision"] for g in grades] == ["rewrite", "generate"]
    text = grades[0]["reflection"]["text"]
    assert "relevant: gives the FlowPay card limits for Managers" in text and "not relevant: about hotels" in text
    assert rewrites[1]["queries"][-1].endswith("FlowPay") and "reflection text: terms ['FlowPay']" in \
        rewrites[1]["rewrite_reason"]


@pytest.mark.integration
def test_an_offline_grade_on_the_demo_writes_no_text(demo):
    config = graded_loop({"backend": "extractive"})
    del config["nodes"]["grade"]["params"]["llm"]
    config["nodes"]["grade"]["params"]["offline"] = {"min_cosine": 0.999}
    out = _run(demo, config, CARD)
    grades, rewrites = _of(out.trace, "grade"), _of(out.trace, "query_rewrite")
    assert grades[0]["reflection"] is not None and "text" not in grades[0]["reflection"]
    assert "reflection text" not in rewrites[1]["rewrite_reason"]


def checked_loop(llm_spec: dict, retry_rewrite: str | None) -> dict:
    check = {"max_attempts": 2, **({"retry_rewrite": retry_rewrite} if retry_rewrite else {})}
    return {"name": "checked", "chunking": CHUNKING, "max_steps": 20,
            "nodes": {"rewrite": {"type": "query_rewrite", "params": {"dictionary": {"card": ["expense policy"]}}},
                      "retrieve": {"type": "retrieve", "params": {"bm25": {"top_k": 20}, "top_k": 20}},
                      "generate": {"type": "generate", "params": {"llm": llm_spec, "evidence_from": "retrieved",
                                                                  "evidence_k": 2}},
                      "self_check": {"type": "self_check", "params": check},
                      "fallback": {"type": "fallback"}},
            "edges": {"start": "rewrite", "rewrite": "retrieve", "retrieve": "generate", "generate": "self_check",
                      "self_check": "end", "fallback": "end"},
            "routes": {"self_check": {"field": "self_check_decision",
                                      "cases": {"retry": "rewrite", "exhausted": "fallback"}}}}


def _cited_once(view, question: str) -> str:
    """The document a first retrieval puts on top: the scripted answer cites it."""
    return _run(view, {"name": "r", "chunking": CHUNKING,
                       "nodes": {"rewrite": {"type": "query_rewrite", "params": {"dictionary": {"card": [
                           "expense policy"]}}}, "retrieve": {"type": "retrieve", "params": {"bm25": {"top_k": 20}}}},
                       "edges": {"start": "rewrite", "rewrite": "retrieve", "retrieve": "end"}},
                question).state["retrieved"][0].doc_id


@pytest.mark.integration
@pytest.mark.parametrize("retry_rewrite, source", [("conservative", "conservative"), (None, "feedback")])
def test_a_failed_self_check_on_the_demo_retries_as_configured(demo, scripted_server, llm_spec, retry_rewrite,
                                                                source):
    top = _cited_once(demo, CARD)
    # an invented limit fails the offline self-check; the retry's answer is a refusal (not checked)
    scripted_server.push(f"text:Managers may spend CNY 987,654 per month on the card [{top}].",
                         "text:The evidence does not say.")
    out = _run(demo, checked_loop(llm_spec, retry_rewrite), CARD)
    checks, rewrites = _of(out.trace, "self_check"), _of(out.trace, "query_rewrite")
    assert [c["self_check_decision"] for c in checks] == ["retry", "skipped"]
    assert rewrites[0]["rewrite_source"] == "dictionary" and rewrites[1]["rewrite_source"] == source
    second = " ".join(rewrites[1]["queries"])
    assert ("expense policy" not in second) == (retry_rewrite == "conservative")
    assert ("strategy" in checks[0]["reflection"]) == (retry_rewrite == "conservative")
