"""The ``offline+llm`` cascade over real HTTP: the offline judge decides what it can, an
OpenAI-compatible fault server (tests/llm/fault_server.py) plays the model with scripted
replies, so each path is exact: which claims go to the model (counted on the server), the
stage each verdict records, and the model down, slow or lying.
"""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from evalkit.judges import make_judge
from evalkit.judges.base import UnknownJudgeError
from evalkit.judges.cascade import CascadeJudge, combine
from evalkit.llm import LLMSpec
from evalkit.metrics.answer import aggregate_answers, score_answer

Q = "Which company had higher 2023 revenue, Norvik or Halden, and by how much?"
EVIDENCE = [("norvik", "Norvik Systems reported total revenue of $2,400 million for fiscal year 2023."),
            ("halden", "Halden Bio's revenue for fiscal 2023 reached $1.9 billion.")]
STATED = "Norvik Systems reported $2.4 billion in 2023 revenue."   # supported offline (a rescaled value)
DERIVED = "That is about $500 million more than Halden Bio."        # unverified offline (2,400 - 1,900)
WRONG = "Halden Bio reported $1.6 billion."                         # unsupported offline (1.6 is nowhere)


def spec_for(srv, **kw) -> LLMSpec:
    settings = {"backend": "openai", "model": "judge-test", "base_url": srv.base_url, "max_retries": 1,
                "backoff_s": 0.01, "timeout_s": 20.0, "max_tokens": 300, "seed": 7}
    return LLMSpec(**{**settings, **kw})


def replies(claim: str, verdict: str, reason: str) -> tuple[str, str]:
    """The two replies of the llm judge for one claim: its claim list, then its verdicts."""
    return ("text:" + json.dumps({"claims": [claim]}),
            "text:" + json.dumps({"verdicts": [{"claim": claim, "verdict": verdict, "reason": reason,
                                                "evidence_id": "1"}]}))


def test_offline_verdicts_first(scripted_server, tmp_path):
    offline = make_judge("offline").judge(Q, f"{STATED} {DERIVED}", EVIDENCE)
    assert [c.verdict for c in offline.claims] == ["supported", "unverified"]
    assert " = " in offline.claims[1].reason  # the derivation is named


def test_only_unverified_claims_reach_the_model(scripted_server, tmp_path):
    scripted_server.push(*replies(DERIVED, "supported", "2,400 - 1,900 = 500"))
    judge = make_judge("offline+llm", cache_root=tmp_path, llm=spec_for(scripted_server))
    assert isinstance(judge, CascadeJudge)
    result = judge.judge(Q, f"{STATED} {DERIVED}", EVIDENCE)
    assert result.error is None
    assert [(c.verdict, c.stage, c.escalated) for c in result.claims] == [
        ("supported", "offline", False), ("supported", "llm", True)]
    assert "2,400 - 1,900" in result.claims[1].reason and "offline: unverified" in result.claims[1].reason
    assert len(scripted_server.requests) == 2  # one claim: its claim list and its verdict
    assert DERIVED in scripted_server.requests[1].body["messages"][1]["content"]
    assert STATED not in scripted_server.requests[1].body["messages"][1]["content"]
    assert (judge.stats.claims, judge.stats.escalated, judge.stats.failed) == (2, 1, 0)
    # the per-query record says how many claims went to the model
    m = score_answer(answerable=True, answered=True, abstained=False, judgement=result.to_dict(), answer="",
                     reference=None, cited_docs=[], invalid_citations=0, gold=["norvik"])
    assert m["claims_escalated"] == 1.0 and m["claims"] == 2.0 and m["hallucinated"] == 0.0
    agg = aggregate_answers([(True, m)])
    assert (agg["n_claims_escalated"], agg["n_claims_judged"]) == (1.0, 2.0)


def test_an_unsupported_claim_stays_offline_unless_asked(scripted_server, tmp_path):
    judge = make_judge("offline+llm", cache_root=tmp_path, llm=spec_for(scripted_server))
    result = judge.judge(Q, WRONG, EVIDENCE)
    assert [(c.verdict, c.stage) for c in result.claims] == [("unsupported", "offline")]
    assert scripted_server.requests == []


def test_a_lying_model_is_recorded_where_it_decided(scripted_server, tmp_path):
    """Escalating hallucination calls too: a model that says a wrong value is supported overrules the
    offline judge, and the record shows who decided and what the offline judge had said."""
    scripted_server.push(*replies(WRONG, "supported", "trust me"))
    judge = make_judge("offline+llm", cache_root=tmp_path, llm=spec_for(scripted_server),
                       escalate="unverified,unsupported")
    (claim,) = judge.judge(Q, WRONG, EVIDENCE).claims
    assert (claim.verdict, claim.stage, claim.escalated) == ("supported", "llm", True)
    assert "offline: unsupported" in claim.reason and "1.6 billion not in evidence" in claim.reason


@pytest.mark.parametrize("fault", ["500", "badjson", "down"])
def test_a_failing_model_keeps_the_offline_verdict(scripted_server, closed_port, tmp_path, fault):
    if fault == "down":
        spec = spec_for(scripted_server, base_url=f"http://127.0.0.1:{closed_port}/v1")
    else:
        scripted_server.push(fault, fault)  # the client retries once
        spec = spec_for(scripted_server)
    judge = make_judge("offline+llm", cache_root=tmp_path, llm=spec)
    result = judge.judge(Q, f"{STATED} {DERIVED}", EVIDENCE)
    assert result.error is None  # a model failure never becomes a verdict, nor loses the offline one
    assert [(c.verdict, c.stage, c.escalated) for c in result.claims] == [
        ("supported", "offline", False), ("unverified", "offline", True)]
    assert "llm judge failed" in result.claims[1].reason
    assert (judge.stats.escalated, judge.stats.failed) == (1, 1)


def test_a_slow_model_times_out_into_the_offline_verdict(scripted_server, tmp_path):
    scripted_server.push("slow:3", "slow:3")
    judge = make_judge("offline+llm", cache_root=tmp_path, llm=spec_for(scripted_server, timeout_s=0.5))
    claims = judge.judge(Q, DERIVED, EVIDENCE).claims
    assert [(c.verdict, c.stage) for c in claims] == [("unverified", "offline")]
    assert judge.stats.failed == 1


def test_combine_the_pieces_of_a_claim():
    assert combine(["supported", "unsupported"]) == "unsupported"
    assert combine(["supported", "supported"]) == "supported"
    assert combine(["supported", "unverified"]) == "unverified"
    assert combine(["not_checkable"]) == "not_checkable"
    assert combine([]) == "unverified"


def test_registry_names_and_errors(tmp_path):
    with pytest.raises(UnknownJudgeError, match="unknown judge 'lmm' in cascade 'offline\\+lmm'"):
        make_judge("offline+lmm")
    with pytest.raises(ValueError, match="escalate"):
        make_judge("offline+offline", escalate="supported")
    judge = make_judge("offline+offline", escalate="unverified")
    assert judge.identity.startswith("offline/v") and judge.identity.endswith(":escalate=unverified")


def test_escalate_is_refused_for_a_single_judge(tmp_path):
    from evalkit.cli import cli

    answers = tmp_path / "a.jsonl"
    answers.write_text(json.dumps({"id": "q1", "question": Q, "answer": STATED,
                                   "contexts": [t for _, t in EVIDENCE]}) + "\n", encoding="utf-8")
    out = CliRunner().invoke(cli, ["score", "--answers", str(answers), "--name", "x", "--judge", "offline",
                                    "--escalate", "unverified", "--output", str(tmp_path / "r.json"), "--no-mlflow"])
    assert out.exit_code == 2 and "--escalate applies to a cascade judge" in out.output
