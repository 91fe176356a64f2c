"""The ``self_check`` node: the offline judge decides pass / retry / exhausted; conditions; judge failures."""
from __future__ import annotations

import json

import pytest

from evalkit.graph import config_from_dict, initial_state
from evalkit.judges import JUDGES, JudgeResult, register_judge
from evalkit.nodes.self_check import SelfCheck, SelfCheckParams
from evalkit.records import Hit

GRAPH = {"name": "sc",
         "nodes": {"rewrite": {"type": "query_rewrite"},
                   "retrieve": {"type": "retrieve", "params": {"bm25": {}}},
                   "generate": {"type": "generate", "params": {"llm": {"backend": "extractive"},
                                                               "evidence_from": "retrieved"}},
                   "self_check": {"type": "self_check", "params": {"max_attempts": 2, "only_below_evidence": 3}},
                   "fallback": {"type": "fallback"}},
         "edges": {"start": "rewrite", "rewrite": "retrieve", "retrieve": "generate", "generate": "self_check",
                   "self_check": "end", "fallback": "end"},
         "routes": {"self_check": {"field": "self_check_decision",
                                   "cases": {"retry": "rewrite", "exhausted": "fallback"}}}}


class Broken:
    identity = "broken"

    def judge(self, question, answer, evidence):
        raise TimeoutError("judge model did not answer")


if "test_broken" not in JUDGES:
    register_judge("test_broken", lambda **options: Broken())
    register_judge("test_erroring", lambda **options: type("E", (), {
        "identity": "erroring", "judge": lambda self, q, a, e: JudgeResult(error="bad_json after 1 retry")})())


def evidence(view, *doc_ids: str) -> list[Hit]:
    by_doc = {u.doc_id: u.id for u in view.passages().units}
    return [Hit(by_doc[d], d, 1.0) for d in doc_ids]


def check(view, **params) -> SelfCheck:
    return SelfCheck("self_check", SelfCheckParams(**params), view)


def state(view, answer: str, docs=("d-leave",), attempt: int = 1, abstained: bool = False):
    return {**initial_state("q", "How many days of parental leave do employees get?", "en"), "attempt": attempt,
            "answer": answer, "answer_evidence": evidence(view, *docs), "abstained": abstained}


def test_config_round_trips():
    cfg = config_from_dict(GRAPH)
    assert config_from_dict(cfg.to_dict()).to_dict() == cfg.to_dict()


def test_a_supported_answer_passes(view):
    out = check(view).run(state(view, "Employees get 10 days of parental leave. [d-leave]"))
    assert out["self_check_decision"] == "pass" and out["self_check_passed"] is True
    assert out.get("reflection") is None and "1 supported, 0 unsupported" in out["self_check_reason"]


def test_an_unsupported_answer_retries_then_is_exhausted(view):
    bad = "Employees get 25 days of parental leave. [d-leave]"
    first = check(view, max_attempts=2).run(state(view, bad, attempt=1))
    assert first["self_check_decision"] == "retry" and first["self_check_passed"] is False
    assert first["self_check_claims"][0]["verdict"] == "unsupported"
    fb = first["reflection"]
    assert fb["source"] == "self_check" and fb["unsupported_claims"] == ["Employees get 25 days of parental leave."]
    last = check(view, max_attempts=2).run(state(view, bad, attempt=2))
    assert last["self_check_decision"] == "exhausted" and "attempt 2/2" in last["self_check_reason"]


def test_condition_limits_the_check_to_thin_evidence(view):
    bad = "Employees get 25 days of parental leave. [d-leave]"
    out = check(view, only_below_evidence=2).run(state(view, bad, docs=("d-leave", "d-noise")))
    assert out["self_check_decision"] == "skipped" and out["self_check_passed"] is None
    assert check(view, only_below_evidence=3).run(state(view, bad, docs=("d-leave", "d-noise")))[
        "self_check_decision"] == "retry"


def test_abstentions_are_skipped_unless_asked(view):
    refusal = "The knowledge base has no reliable evidence for this question."
    assert check(view).run(state(view, refusal, abstained=True))["self_check_decision"] == "skipped"


@pytest.mark.parametrize("judge", ["test_broken", "test_erroring"])
def test_a_failing_judge_degrades_and_is_counted(view, judge):
    out = check(view, judge=judge).run(state(view, "Employees get 25 days. [d-leave]"))
    assert out["self_check_decision"] == "pass" and out["llm_fallback"]["kind"] == "judge_error"
    strict = check(view, judge=judge, on_judge_error="fail").run(state(view, "Employees get 25 days. [d-leave]"))
    assert strict["self_check_decision"] == "retry" and strict["llm_fallback"]["node"] == "self_check"


def test_unknown_judge_is_refused_when_the_graph_is_built(view):
    from evalkit.judges import UnknownJudgeError

    with pytest.raises(UnknownJudgeError, match="unknown judge 'ofline'; did you mean 'offline'"):
        check(view, judge="ofline")


def test_llm_judge_when_configured(view, fault_server, llm_spec):
    claim = "Employees get 25 days of parental leave."
    fault_server.push("text:" + json.dumps({"claims": [claim]}),
                      "text:" + json.dumps({"verdicts": [{"claim": claim, "verdict": "unsupported",
                                                          "reason": "the evidence says 10 days",
                                                          "evidence_id": "d-leave"}]}))
    node = check(view, judge="llm", judge_options={"llm": llm_spec})
    out = node.run(state(view, f"{claim} [d-leave]"))
    assert out["self_check_decision"] == "retry"
    assert out["self_check_claims"] == [{"claim": claim, "verdict": "unsupported",
                                         "reason": "the evidence says 10 days"}]
    assert len(fault_server.requests) == 2 and "llm_fallback" not in out


def test_llm_judge_failure_is_counted_not_fatal(view, fault_server, llm_spec):
    fault_server.push(*(["500"] * 6))
    out = check(view, judge="llm", judge_options={"llm": llm_spec}).run(
        state(view, "Employees get 25 days of parental leave. [d-leave]"))
    assert out["llm_fallback"]["kind"] == "judge_error" and out["self_check_decision"] == "pass"
