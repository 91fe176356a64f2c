"""The ``grade`` node: prefilter, offline rule, atom gate, decisions, reflection, LLM and its failures."""
from __future__ import annotations

import json

from evalkit.graph import config_from_dict, initial_state
from evalkit.nodes.grade import (
    Grade,
    GradeParams,
    coverage,
    missing_atoms,
    question_atoms,
)
from evalkit.records import Hit

GRAPH = {"name": "g",
         "nodes": {"rewrite": {"type": "query_rewrite"},
                   "retrieve": {"type": "retrieve", "params": {"bm25": {}}},
                   "grade": {"type": "grade", "params": {"embedder": "toy", "offline": {"min_cosine": 0.3}}},
                   "generate": {"type": "generate", "params": {"llm": {"backend": "extractive"}}},
                   "fallback": {"type": "fallback"}},
         "edges": {"start": "rewrite", "rewrite": "retrieve", "retrieve": "grade", "grade": "generate",
                   "generate": "end", "fallback": "end"},
         "routes": {"grade": {"field": "grade_decision",
                              "cases": {"generate": "generate", "rewrite": "rewrite", "fallback": "fallback"}}}}


def hits(view, *doc_ids: str) -> list[Hit]:
    by_doc = {u.doc_id: u.id for u in view.passages().units}
    return [Hit(by_doc[d], d, 1.0 / (i + 1)) for i, d in enumerate(doc_ids)]


def grade(view, **params) -> Grade:
    return Grade("grade", GradeParams(**{"embedder": "toy", **params}), view)


def state(question: str, retrieved, attempt: int = 1):
    return {**initial_state("q", question, "en"), "retrieved": retrieved, "attempt": attempt}


def test_config_round_trips_and_reads_the_chosen_candidates():
    cfg = config_from_dict(GRAPH)
    assert config_from_dict(cfg.to_dict()).to_dict() == cfg.to_dict()
    assert Grade.contract(GradeParams(candidates_from="reranked")).reads == {"question", "reranked", "attempt"}


def test_relevant_candidates_become_evidence_and_the_gate_passes(view):
    out = grade(view, offline={"min_cosine": 0.3, "min_coverage": 0.3}).run(
        state("How many days of parental leave do employees get?", hits(view, "d-noise", "d-leave", "d-price")))
    assert out["grade_decision"] == "generate" and out["reflection"] is None
    assert [h.doc_id for h in out["evidence"]] == ["d-leave"]
    assert out["relevant_ratio"] == round(1 / 3, 4) and out["grade_method"] == "offline-rule"
    judged = {g["doc_id"]: g for g in out["graded"]}
    assert judged["d-leave"]["relevant"] and judged["d-leave"]["by"] == "rule"
    assert not judged["d-noise"]["relevant"] and "cosine" in judged["d-noise"]["reason"]


def test_prefilter_bounds_how_many_candidates_are_judged(view):
    out = grade(view, judge_k=2).run(state("parental leave days", hits(view, "d-noise", "d-price", "d-leave",
                                                                       "d-spec")))
    assert len(out["graded"]) == 2 and out["graded"][0]["doc_id"] == "d-leave"  # best cosine first


def test_nothing_relevant_loops_then_falls_back_at_max_attempts(view):
    g = grade(view, offline={"min_cosine": 0.99}, max_attempts=2)
    q = "How many days of parental leave do employees get?"
    first = g.run(state(q, hits(view, "d-noise", "d-leave"), attempt=1))
    assert first["grade_decision"] == "rewrite" and first["evidence"] == []
    assert "0 of 2 judged relevant" in first["grade_reason"] and "attempt 1/2" in first["grade_reason"]
    fb = first["reflection"]
    assert fb["source"] == "grade" and fb["attempt"] == 1 and fb["relevant_ratio"] == 0.0
    assert set(fb) >= {"missing_terms", "add_terms", "exclude_terms", "reason"}
    last = g.run(state(q, hits(view, "d-noise", "d-leave"), attempt=2))
    assert last["grade_decision"] == "fallback" and "attempts exhausted (2/2)" in last["grade_reason"]


def test_on_exhausted_generate_answers_from_what_was_kept(view):
    g = grade(view, offline={"min_cosine": 0.0, "min_coverage": 0.0}, max_attempts=2, on_exhausted="generate")
    q = "How much does the ZX-900 cost?"  # the gate keeps failing: ZX-900 is in no document
    assert g.run(state(q, hits(view, "d-price"), attempt=1))["grade_decision"] == "rewrite"
    last = g.run(state(q, hits(view, "d-price"), attempt=2))
    assert last["grade_decision"] == "generate" and last["evidence"]
    assert "attempts exhausted (2/2): generate" in last["grade_reason"]
    empty = grade(view, offline={"min_cosine": 0.999}, max_attempts=1, on_exhausted="generate").run(
        state(q, hits(view, "d-noise")))
    assert empty["grade_decision"] == "fallback"  # nothing kept: nothing to answer from


def test_a_name_the_evidence_lacks_fails_the_gate_and_is_fed_back(view):
    # ZX-900 is in no document: relevant-looking evidence, but the gate notices the missing name
    out = grade(view, offline={"min_cosine": 0.0, "min_coverage": 0.0}).run(
        state("How much does the ZX-900 cost?", hits(view, "d-price", "d-spec")))
    assert out["grade_decision"] == "rewrite" and "not in the evidence: ZX-900" in out["grade_reason"]
    assert out["reflection"]["missing_terms"] == ["ZX-900"]
    assert "ZX-100" in out["reflection"]["add_terms"]  # names of the best candidates, for the next query
    off = grade(view, offline={"min_cosine": 0.0, "min_coverage": 0.0}, require_atoms=False).run(
        state("How much does the ZX-900 cost?", hits(view, "d-price", "d-spec")))
    assert off["grade_decision"] == "generate"


def test_atom_rescue_pulls_in_the_candidate_that_states_the_missing_name(view):
    # the rule keeps d-spec only; KS-9's maker is in d-chip, which the rule rejects
    g = grade(view, offline={"min_cosine": 0.0, "min_coverage": 0.6})
    q = "Which chip does the ZX-100 use, and where is Borealis based?"
    out = g.run(state(q, hits(view, "d-spec", "d-chip", "d-noise")))
    assert out["grade_decision"] == "generate"
    assert [h.doc_id for h in out["evidence"]][-1] == "d-chip"
    assert out["graded"][-1]["by"] == "atom" and "Borealis" in out["graded"][-1]["reason"]
    no_rescue = grade(view, offline={"min_cosine": 0.0, "min_coverage": 0.6}, atom_rescue=False).run(
        state(q, hits(view, "d-spec", "d-chip", "d-noise")))
    assert no_rescue["grade_decision"] == "rewrite" and no_rescue["reflection"]["missing_terms"] == ["Borealis"]


def test_question_atoms_skip_a_capitalised_first_word():
    assert [a.text for a in question_atoms("Someone asked for my password. What about the ZX-100?")] == ["ZX-100"]
    assert [a.text for a in question_atoms("Are Medici and Senet both board games?")] == ["Medici", "Senet"]
    assert missing_atoms("Is the ZX-100 made in Oslo?", ["The ZX-100 gateway", "Borealis is in Oslo."]) == []
    assert missing_atoms("Is the ZX-900 made in Oslo?", ["The ZX-100 gateway"]) == ["ZX-900", "Oslo"]
    from evalkit.text.lexicon import content_terms

    terms = content_terms("How much parental leave?")  # stemmed content words, as the node passes them
    assert coverage(terms, "10 days of parental leave") == 1.0
    assert coverage(terms, "The cafeteria serves lunch") == 0.0


def test_llm_judges_relevance_with_reasons(view, fault_server, llm_spec):
    yes = json.dumps({"relevant": "yes", "reason": "states the leave"})
    no = json.dumps({"relevant": "no", "reason": "about lunch"})
    fault_server.push(f"text:{yes}", f"text:{no}")
    out = grade(view, llm=llm_spec, judge_k=2).run(
        state("How many days of parental leave do employees get?", hits(view, "d-leave", "d-noise")))
    assert [(g["doc_id"], g["relevant"], g["by"]) for g in out["graded"]] == [
        ("d-leave", True, "llm"), ("d-noise", False, "llm")]
    assert out["graded"][0]["reason"] == "states the leave" and out["grade_method"] == "llm"
    assert "llm_fallback" not in out and len(fault_server.requests) == 2
    assert "Passage [d-leave]" in fault_server.requests[0].body["messages"][-1]["content"]


def test_llm_errors_and_garbage_fall_back_to_the_rule_and_are_counted(view, fault_server, llm_spec):
    # 500, then garbage twice (the client asks once more for JSON), then a label that is not yes/no
    fault_server.push("500", "text:no json here", "text:nor here", "text:" + json.dumps({"relevant": "maybe"}))
    out = grade(view, llm=llm_spec, judge_k=3, max_llm_failures=5, offline={"min_cosine": 0.3}).run(
        state("How many days of parental leave do employees get?", hits(view, "d-leave", "d-noise", "d-price")))
    assert [g["by"] for g in out["graded"]] == ["rule (llm failed)"] * 3
    assert out["grade_method"] == "llm+offline-rule" and out["grade_decision"] == "generate"
    assert out["llm_fallback"]["failed_calls"] == 3 and out["llm_fallback"]["node"] == "grade"


def test_after_max_llm_failures_the_rest_skip_the_llm(view, fault_server, llm_spec):
    fault_server.push("500", "500", "500")
    out = grade(view, llm=llm_spec, judge_k=3, max_llm_failures=1).run(
        state("parental leave", hits(view, "d-leave", "d-noise", "d-price")))
    assert [g["by"] for g in out["graded"]] == ["rule (llm failed)", "rule (llm skipped)", "rule (llm skipped)"]
    assert len(fault_server.requests) == 1
    assert out["llm_fallback"]["failed_calls"] == 1 and out["llm_fallback"]["judged_by_rule"] == 3


# --- gate as a condition (evalkit.graph.conditions) -----------------------------------------------

OR_GATE = {"any": [{"field": "n_relevant", "ge": 3}, {"field": "atoms_covered", "eq": True}]}


def test_an_or_gate_passes_on_either_branch(view):
    # nothing relevant (min_cosine 0.99), but the question's code ZX-100 is stated by the kept (rescued) evidence
    g = grade(view, offline={"min_cosine": 0.99}, gate=OR_GATE)
    covered = g.run(state("How much does the ZX-100 cost?", hits(view, "d-noise", "d-price")))
    assert covered["grade_decision"] == "generate", covered["grade_reason"]
    # the same question about a code no document states: neither branch holds
    missing = g.run(state("How much does the ZX-900 cost?", hits(view, "d-noise", "d-price")))
    assert missing["grade_decision"] == "rewrite"
    assert "gate failed: any(n_relevant=0 >= 3, atoms_covered=False == True)" in missing["grade_reason"]
    # three relevant candidates pass although a code is missing
    loose = grade(view, offline={"min_cosine": 0.0, "min_coverage": 0.0}, gate=OR_GATE)
    three = loose.run(state("How much does the ZX-900 cost?", hits(view, "d-noise", "d-price", "d-spec")))
    assert three["grade_decision"] == "generate" and len(three["evidence"]) == 3
    # the built-in AND gate (require_atoms) refuses that same case
    strict = grade(view, offline={"min_cosine": 0.0, "min_coverage": 0.0})
    assert strict.run(state("How much does the ZX-900 cost?",
                            hits(view, "d-noise", "d-price", "d-spec")))["grade_decision"] == "rewrite"


def test_gate_conditions_are_checked_at_load_with_file_line():
    import textwrap

    import pytest

    from evalkit.errors import ConfigError
    from evalkit.graph.config import read_config_yaml

    text = textwrap.dedent("""\
        name: g
        nodes:
          retrieve: {type: retrieve, params: {bm25: {}}}
          grade:
            type: grade
            params:
              embedder: toy
              gate:
                any:
                  - {field: n_relevant, ge: 3}
                  - {field: atoms_coverd, eq: true}
        edges: {start: retrieve, retrieve: grade, grade: end}
        """)
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "g.yaml"
        path.write_text(text)
        data, lines = read_config_yaml(path)
        with pytest.raises(ConfigError) as info:
            config_from_dict(data, source=str(path), lines=lines)
        assert f"{path}:11: nodes.grade.params.gate.any[1].field: unknown gate variable 'atoms_coverd'; " \
               "did you mean 'atoms_covered'?" in str(info.value)
        for bad, message in [({"field": "n_relevant", "ge": "three"}, "cannot compare it with 'three'"),
                             ({"field": "atoms_covered", "lt": 1}, "needs a number or a string")]:
            data["nodes"]["grade"]["params"]["gate"] = bad
            with pytest.raises(ConfigError, match=message):
                config_from_dict(data, source=str(path), lines=lines)
        data["nodes"]["grade"]["params"].update(gate=OR_GATE, min_relevant=2)
        with pytest.raises(ConfigError, match="'gate' replaces min_relevant"):
            config_from_dict(data, source=str(path), lines=lines)
