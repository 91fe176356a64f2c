"""The ``ragas`` judge (ragas 0.4 ``Faithfulness``) over real HTTP with scripted replies.

The replies are exactly what ragas' two prompts ask for, built from its own response
models (``StatementGeneratorOutput``, then ``NLIStatementOutput``), and sent by the fault
server (tests/llm/fault_server.py) as ``text:...`` completions. Covered: statements and
verdicts -> claim verdicts (score = ragas' score), garbage and schema-breaking replies,
HTTP 500, the cache, usage under ``purpose="judge"``, and running from worker threads
and from inside a running event loop. One smoke test runs the real SmolLM2.
"""
from __future__ import annotations

import asyncio
import math
import os
from concurrent.futures import ThreadPoolExecutor

import pytest

from evalkit.judges import JudgeResult, make_judge
from evalkit.llm import LLMSpec, usage_scope

ragas_judge = pytest.importorskip("evalkit.judges.ragas_judge")
from ragas.metrics.collections.faithfulness.util import (  # noqa: E402 - only once ragas is known to import
    NLIStatementOutput,
    StatementFaithfulnessAnswer,
    StatementGeneratorOutput,
)


@pytest.fixture
def server(scripted_server):
    return scripted_server


def spec_for(srv, **kw) -> LLMSpec:
    settings = {"backend": "openai", "model": "ragas-test", "base_url": srv.base_url, "max_retries": 1,
                "backoff_s": 0.01, "timeout_s": 20.0, "max_tokens": 400}
    return LLMSpec(**{**settings, **kw})


Q = "How much is the home office stipend for full-time remote employees?"
EVIDENCE = [("hr-012", "Full-time remote employees receive a one-time home office stipend of $1,200."),
            ("hr-013", "The stipend is paid with the first payroll after approval.")]
ANSWER = "Full-time remote staff get a one-time stipend of $1,500, paid with the first payroll."
STATEMENTS = ["Full-time remote staff get a one-time stipend of $1,500.",
              "The stipend is paid with the first payroll."]


def statements_reply(statements=STATEMENTS) -> str:
    return "text:" + StatementGeneratorOutput(statements=statements).model_dump_json()


def nli_reply(*verdicts: tuple[str, int, str]) -> str:
    out = NLIStatementOutput(statements=[StatementFaithfulnessAnswer(statement=s, verdict=v, reason=r)
                                         for s, v, r in verdicts])
    return "text:" + out.model_dump_json()


NLI = nli_reply((STATEMENTS[0], 0, "The context says $1,200."), (STATEMENTS[1], 1, "Stated in the context."))


def test_statements_and_verdicts_become_claims(server, tmp_path):
    assert os.environ["RAGAS_DO_NOT_TRACK"] == "true"
    server.push(statements_reply(), NLI)
    judge = make_judge("ragas", cache_root=tmp_path, llm=spec_for(server))
    with usage_scope() as usage:
        result = judge.judge(Q, ANSWER, EVIDENCE)
    assert result.error is None
    assert [(c.claim, c.verdict, c.evidence_id) for c in result.claims] == [
        (STATEMENTS[0], "unsupported", None), (STATEMENTS[1], "supported", None)]
    assert result.claims[0].reason == "The context says $1,200. (ragas faithfulness 0.50)"
    first, second = server.requests  # ragas' own prompts, through our client (JSON mode, temperature 0)
    assert "Break down each sentence into one or more fully understandable statements" in \
        first.body["messages"][0]["content"]
    assert ANSWER in first.body["messages"][0]["content"]
    nli_prompt = second.body["messages"][0]["content"]
    assert "judge the faithfulness of a series of statements" in nli_prompt
    assert EVIDENCE[0][1] in nli_prompt and EVIDENCE[1][1] in nli_prompt
    for seen in (first, second):
        assert seen.body["temperature"] == 0.0 and seen.body["response_format"] == {"type": "json_object"}
    assert set(usage) == {"judge"} and usage["judge"].calls == 2
    assert "ragas==" in judge.identity and "model=ragas-test" in judge.identity


def test_score_matches_ragas(server, tmp_path):
    """The judge's supported share equals the score ragas itself computes from the same replies."""
    server.push(statements_reply(), NLI)
    judge = make_judge("ragas", cache_root=tmp_path, llm=spec_for(server))
    result = judge.judge(Q, ANSWER, EVIDENCE)
    from ragas.metrics.collections import Faithfulness

    llm = ragas_judge.ClientRagasLLM(judge.client)  # same prompts: answered from the cache
    score = ragas_judge.run_sync(lambda: Faithfulness(llm=llm).ascore(
        user_input=Q, response=ANSWER, retrieved_contexts=judge.contexts(EVIDENCE)))
    assert len(server.requests) == 2
    assert score.value == result.n_supported / result.n_checkable == 0.5


def test_second_judgement_comes_from_the_cache(server, tmp_path):
    server.push(statements_reply(), NLI)
    first = make_judge("ragas", cache_root=tmp_path, llm=spec_for(server)).judge(Q, ANSWER, EVIDENCE)
    with usage_scope() as usage:
        again = make_judge("ragas", cache_root=tmp_path, llm=spec_for(server)).judge(Q, ANSWER, EVIDENCE)
    assert len(server.requests) == 2 and again.to_dict() == first.to_dict()
    assert (usage["judge"].calls, usage["judge"].cache_hits) == (2, 2)


def test_garbage_reply_is_an_error(server, tmp_path):
    server.push("text:I am not sure what you mean.", "text:Still no JSON, sorry.")
    with usage_scope() as usage:
        result = make_judge("ragas", cache_root=tmp_path, llm=spec_for(server)).judge(Q, ANSWER, EVIDENCE)
    assert result.claims == [] and result.error.startswith("ragas judge: bad_json")
    assert usage["judge"].failures == 1 and len(server.requests) == 2


def test_schema_breaking_reply_is_asked_again_then_an_error(server, tmp_path):
    # the schema echoed back (what SmolLM2 does) instead of statements: one corrective retry
    echo = 'text:{"description": "The generated statements", "type": "object"}'
    server.push(echo, statements_reply(), NLI)
    with usage_scope() as usage:
        result = make_judge("ragas", cache_root=tmp_path, llm=spec_for(server)).judge(Q, ANSWER, EVIDENCE)
    assert [c.verdict for c in result.claims] == ["unsupported", "supported"]
    assert "does not match the schema" in server.requests[1].body["messages"][-1]["content"]
    assert usage["judge"].retries == 1

    server.push(echo, echo)
    result = make_judge("ragas", cache_root=tmp_path / "fresh", llm=spec_for(server)).judge(Q, ANSWER, EVIDENCE)
    assert result.claims == [] and result.error.startswith("ragas judge: bad_schema")
    assert "StatementGeneratorOutput" in result.error


def test_nli_verdict_with_wrong_type_is_an_error(server, tmp_path):
    bad = 'text:{"statements": [{"statement": "x", "reason": "y", "verdict": "perhaps"}]}'
    server.push(statements_reply(), bad, bad)
    result = make_judge("ragas", cache_root=tmp_path, llm=spec_for(server)).judge(Q, ANSWER, EVIDENCE)
    assert result.error and "NLIStatementOutput" in result.error and not result.claims


def test_copied_prompt_example_is_an_error(server, tmp_path):
    einstein = ["Albert Einstein was a German-born theoretical physicist."]
    server.push(statements_reply(einstein), nli_reply((einstein[0], 1, "copied")))
    result = make_judge("ragas", cache_root=tmp_path, llm=spec_for(server)).judge(Q, ANSWER, EVIDENCE)
    assert result.claims == [] and "copied ragas' prompt example" in result.error

    server.push(statements_reply(), nli_reply(("John is majoring in Biology.", 0, "x"),
                                              ("John is a dedicated student.", 1, "y")))
    result = make_judge("ragas", cache_root=tmp_path / "2", llm=spec_for(server)).judge(Q, ANSWER, EVIDENCE)
    assert result.claims == [] and "John is majoring in Biology" in result.error


def test_http_500_is_an_error(server, tmp_path):
    server.push("500", "500")
    result = make_judge("ragas", cache_root=tmp_path, llm=spec_for(server)).judge(Q, ANSWER, EVIDENCE)
    assert result.claims == [] and result.error.startswith("ragas judge: server_error")


def test_no_statements_and_missing_verdicts(server, tmp_path):
    server.push(statements_reply([]))  # ragas: NaN, one call only
    result = make_judge("ragas", cache_root=tmp_path, llm=spec_for(server)).judge(Q, ANSWER, EVIDENCE)
    assert [c.verdict for c in result.claims] == ["not_checkable"] and "no statements" in result.claims[0].reason
    assert len(server.requests) == 1

    server.push(statements_reply(), nli_reply((STATEMENTS[1], 1, "ok")))  # one statement left out by the model
    result = make_judge("ragas", cache_root=tmp_path / "2", llm=spec_for(server)).judge(Q, ANSWER, EVIDENCE)
    assert [(c.claim, c.verdict) for c in result.claims] == [(STATEMENTS[1], "supported"),
                                                            (STATEMENTS[0], "not_checkable")]
    assert "ragas faithfulness 1.00" in result.claims[0].reason


def test_to_result_mirrors_ragas_counting():
    gen = StatementGeneratorOutput(statements=["a", "b"])
    nli = NLIStatementOutput(statements=[StatementFaithfulnessAnswer(statement="a", reason="r", verdict=2),
                                         StatementFaithfulnessAnswer(statement="b", reason="", verdict=0)])
    r = ragas_judge.RagasJudge.to_result([gen, nli], 0.5, "a. b.")
    assert [c.verdict for c in r.claims] == ["supported", "unsupported"]  # any non-zero is faithful, as in ragas
    assert r.claims[1].reason == "no reason given (ragas faithfulness 0.50)"
    assert math.isnan(float("nan"))


def test_no_evidence_and_empty_answer_need_no_call(server, tmp_path):
    judge = make_judge("ragas", cache_root=tmp_path, llm=spec_for(server))
    assert judge.judge(Q, "", EVIDENCE).to_dict() == JudgeResult([]).to_dict()
    assert [c.verdict for c in judge.judge(Q, ANSWER, []).claims] == ["unsupported"]
    assert server.requests == []


def test_worker_threads_and_a_running_event_loop(server, tmp_path):
    server.push(statements_reply(), NLI)
    judge = make_judge("ragas", cache_root=tmp_path, llm=spec_for(server))
    expected = judge.judge(Q, ANSWER, EVIDENCE).to_dict()

    def in_thread(_: int):
        with usage_scope() as usage:
            return judge.judge(Q, ANSWER, EVIDENCE).to_dict(), usage["judge"].cache_hits

    with ThreadPoolExecutor(max_workers=4) as pool:
        got = list(pool.map(in_thread, range(8)))
    assert all(r == expected and hits == 2 for r, hits in got)

    async def from_async_code():
        with usage_scope() as usage:
            result = judge.judge(Q, ANSWER, EVIDENCE)  # sync call while this thread runs a loop
        return result.to_dict(), usage["judge"].calls

    assert asyncio.run(from_async_code()) == (expected, 2)
    assert len(server.requests) == 2  # everything after the first judgement came from the cache


def test_missing_llm_fails_before_importing_ragas(tmp_path):
    with pytest.raises(ValueError, match="needs an LLM"):
        make_judge("ragas", cache_root=tmp_path)


@pytest.mark.integration
def test_smoke_with_the_real_local_smollm2(tmp_path):
    judge = make_judge("ragas", cache_root=tmp_path, llm=LLMSpec(backend="local", max_tokens=24))
    result = judge.judge(Q, ANSWER, EVIDENCE)
    assert isinstance(result, JudgeResult)  # a code-path check: SmolLM2-135M is no judge (see reports/judges.md)
