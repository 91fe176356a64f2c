"""The ``llm`` judge over real HTTP: an OpenAI-compatible fault server (tests/llm/fault_server.py)
answers with scripted replies (``text:...``), so each path is deterministic: claims and
verdicts, the sentence-splitter fallback, garbage and schema-breaking replies, HTTP 500,
the cache, and usage under ``purpose="judge"``. One smoke test runs the real SmolLM2.
"""
from __future__ import annotations

import json

import pytest

from evalkit.judges import JUDGES, JudgeResult, make_judge
from evalkit.judges.llm import (
    CLAIMS_SYSTEM,
    CORRECTNESS_SYSTEM,
    PROMPT_VERSION,
    VERDICTS_SYSTEM,
    LLMJudge,
    _evidence_id,
    claims_grounded,
    evidence_block,
    missing_numbers,
)
from evalkit.llm import LLMSpec, usage_scope


@pytest.fixture
def server(scripted_server):
    return scripted_server


def spec_for(srv, **kw) -> LLMSpec:
    settings = {"backend": "openai", "model": "judge-test", "base_url": srv.base_url, "max_retries": 1,
                "backoff_s": 0.01, "timeout_s": 20.0, "max_tokens": 300, "seed": 7}
    return LLMSpec(**{**settings, **kw})


def text(obj) -> str:
    return "text:" + (obj if isinstance(obj, str) else json.dumps(obj, ensure_ascii=False))


Q = "How much is the home office stipend for full-time remote employees?"
EVIDENCE = [("hr-012", ("Full-time remote employees receive a one-time home office stipend of $1,200. "
                       "It is paid with the first payroll.")), ("hr-013", "Part-time remote employees receive $600.")]
ANSWER = "Full-time remote staff get a one-time stipend of $1,500 [hr-012]. It is paid with the first payroll."
CLAIMS = ["Full-time remote staff get a one-time stipend of $1,500.",
          "The stipend is paid with the first payroll."]
VERDICTS = {"verdicts": [
    {"claim": CLAIMS[0], "verdict": "unsupported", "reason": "passage 1 says $1,200", "evidence_id": "1"},
    {"claim": CLAIMS[1], "verdict": "Supported", "reason": "passage 1 says so", "evidence_id": "[1]"}]}


def test_claims_then_verdicts_over_http(server, tmp_path):
    server.push(text({"claims": CLAIMS}), text(VERDICTS))
    judge = make_judge("llm", cache_root=tmp_path, llm=spec_for(server))
    with usage_scope() as usage:
        result = judge.judge(Q, ANSWER, EVIDENCE)
    assert result.error is None
    assert [(c.claim, c.verdict, c.evidence_id) for c in result.claims] == [
        (CLAIMS[0], "unsupported", None), (CLAIMS[1], "supported", "hr-012")]
    assert result.claims[0].reason == "passage 1 says $1,200"
    first, second = server.requests
    for seen in (first, second):  # deterministic, JSON mode, the spec's seed
        assert seen.body["temperature"] == 0.0 and seen.body["seed"] == 7
        assert seen.body["response_format"] == {"type": "json_object"}
    assert first.body["messages"][0] == {"role": "system", "content": CLAIMS_SYSTEM}
    assert second.body["messages"][0] == {"role": "system", "content": VERDICTS_SYSTEM}
    user = second.body["messages"][1]["content"]
    assert "[1] Full-time remote employees receive" in user and "[2] Part-time" in user
    assert "1. " + CLAIMS[0] in user and "2. " + CLAIMS[1] in user
    assert set(usage) == {"judge"} and usage["judge"].calls == 2 and usage["judge"].failures == 0


def test_correctness_against_the_reference(server, tmp_path):
    server.push(text({"verdict": "incorrect", "reason": "1,500 is not 1,200"}), text({"verdict": "Correct"}),
                text({"verdict": "maybe"}), "500", "500")
    judge = make_judge("llm", cache_root=tmp_path, llm=spec_for(server))
    assert judge.correctness(Q, ANSWER, "$1,200") == {"verdict": "incorrect", "reason": "1,500 is not 1,200"}
    assert server.requests[0].body["messages"][0] == {"role": "system", "content": CORRECTNESS_SYSTEM}
    assert "Reference: $1,200" in server.requests[0].body["messages"][1]["content"]
    assert judge.correctness(Q, "It is $1,200.", "$1,200")["verdict"] == "correct"
    unusable = judge.correctness(Q, "It is $1,200 per year.", "$1,200")  # a verdict word it does not know
    assert unusable["verdict"] is None and "bad_schema" in unusable["reason"]
    failed = judge.correctness(Q, "It is $1,200, paid once.", "$1,200")  # HTTP 500 after the retry
    assert failed["verdict"] is None and "llm judge" in failed["reason"]


def test_prompts_are_bilingual_with_an_english_and_a_chinese_example():
    for prompt in (CLAIMS_SYSTEM, VERDICTS_SYSTEM):
        assert "Example 1" in prompt and "Example 2" in prompt
        assert "冬奥会" in prompt and "Lisbon" in prompt
    assert "Example 1" in CORRECTNESS_SYSTEM and "报销" in CORRECTNESS_SYSTEM
    assert "do NOT translate" in CLAIMS_SYSTEM and "any language" in VERDICTS_SYSTEM


def test_second_judgement_comes_from_the_cache(server, tmp_path):
    server.push(text({"claims": CLAIMS}), text(VERDICTS))
    judge = make_judge("llm", cache_root=tmp_path, llm=spec_for(server))
    first = judge.judge(Q, ANSWER, EVIDENCE)
    with usage_scope() as usage:
        again = make_judge("llm", cache_root=tmp_path, llm=spec_for(server)).judge(Q, ANSWER, EVIDENCE)
    assert len(server.requests) == 2  # no HTTP request for the second judgement
    assert again.to_dict() == first.to_dict()
    assert (usage["judge"].calls, usage["judge"].cache_hits) == (2, 2)


def test_chinese_answer(server, tmp_path):
    ev = [("zh-1", "2022年冬奥会于2月4日在北京开幕，共有91个代表团参加。")]
    answer = "2022年冬奥会在上海开幕，共有91个代表团参加。"
    claims = ["2022年冬奥会在上海开幕。", "2022年冬奥会共有91个代表团参加。"]
    server.push(text({"claims": claims}), text({"verdicts": [
        {"claim": claims[0], "verdict": "unsupported", "reason": "证据说北京", "evidence_id": 1},
        {"claim": claims[1], "verdict": "supported", "reason": "证据说91个", "evidence_id": "zh-1"}]}))
    result = make_judge("llm", cache_root=tmp_path, llm=spec_for(server)).judge("2022年冬奥会在哪里开幕？", answer, ev)
    assert [c.verdict for c in result.claims] == ["unsupported", "supported"]
    assert result.claims[1].evidence_id == "zh-1" and result.unsupported is True


def test_garbage_claims_fall_back_to_sentences(server, tmp_path):
    # no JSON, then (the client's corrective retry) still none: the answer's sentences are judged
    server.push("text:Sure, here are the claims!", "text:I cannot do JSON.",
                text({"verdicts": [{"verdict": "unsupported", "reason": "r", "evidence_id": None},
                                   {"claim": "It is paid with the first payroll.", "verdict": "supported",
                                    "reason": "r", "evidence_id": 1}]}))
    with usage_scope() as usage:
        result = make_judge("llm", cache_root=tmp_path, llm=spec_for(server)).judge(Q, ANSWER, EVIDENCE)
    assert [c.claim for c in result.claims] == ["Full-time remote staff get a one-time stipend of $1,500.",
                                                "It is paid with the first payroll."]
    assert all("claims split by sentence: LLM claim list unusable" in c.reason for c in result.claims)
    assert len(server.requests) == 3 and usage["judge"].retries == 1


@pytest.mark.parametrize("reply, why", [
    ({"claims": ["The Lisbon office opened in March 2019.", "About 120 people work in the Lisbon office."]},
     "not in the answer"),                                               # the few-shot example copied
    ({"claims": [Q]}, "not in the answer"),                              # the question repeated
    ({"claims": ["Full-time remote staff get a one-time stipend."]}, "leave out the answer's number"),
    ({"facts": CLAIMS}, "no 'claims' list"),
    ({"claims": []}, "no claims"),
])
def test_unusable_claim_lists_fall_back(server, tmp_path, reply, why):
    server.push(text(reply), text(VERDICTS))
    result = make_judge("llm", cache_root=tmp_path, llm=spec_for(server)).judge(Q, ANSWER, EVIDENCE)
    assert result.error is None and len(result.claims) == 2
    assert why in result.claims[0].reason


def test_garbage_verdicts_are_an_error_never_a_verdict(server, tmp_path):
    server.push(text({"claims": CLAIMS}), "text:<html>oops</html>", "text:still not json")
    with usage_scope() as usage:
        result = make_judge("llm", cache_root=tmp_path, llm=spec_for(server)).judge(Q, ANSWER, EVIDENCE)
    assert result.claims == [] and result.unsupported is None
    assert result.error.startswith("llm judge: bad_json")
    assert usage["judge"].failures == 1 and usage["judge"].retries == 1


def test_verdicts_that_break_the_schema_are_asked_again_once(server, tmp_path):
    bad = {"verdicts": [{"claim": CLAIMS[0], "verdict": "maybe"}]}
    server.push(text({"claims": CLAIMS}), text(bad), text(VERDICTS))
    with usage_scope() as usage:
        result = make_judge("llm", cache_root=tmp_path, llm=spec_for(server)).judge(Q, ANSWER, EVIDENCE)
    assert [c.verdict for c in result.claims] == ["unsupported", "supported"]
    fix = server.requests[2].body["messages"]
    assert fix[-1]["role"] == "user" and "gives 1 verdicts for 2 claims" in fix[-1]["content"]
    assert usage["judge"].retries == 1 and usage["judge"].failures == 0

    server.push(text({"claims": CLAIMS}), text(bad), text({"verdicts": [{"verdict": "maybe"}] * 2}))
    fresh = tmp_path / "fresh-cache"  # the same prompts would otherwise be answered from the cache
    result = make_judge("llm", cache_root=fresh, llm=spec_for(server)).judge(Q, ANSWER, EVIDENCE)
    assert result.claims == [] and result.error.startswith("llm judge: bad_schema")
    assert "'maybe'" in result.error


def test_verdicts_copied_from_the_prompt_example_are_an_error(server, tmp_path):
    # what SmolLM2 does: the example's verdicts, as many as there are claims
    copied = {"verdicts": [{"claim": "2022年冬奥会在上海举办。", "verdict": "unsupported", "reason": "x"},
                           {"claim": "2022年冬奥会共有91个代表团参加。", "verdict": "supported", "reason": "y"}]}
    server.push(text({"claims": CLAIMS}), text(copied), text(copied))
    result = make_judge("llm", cache_root=tmp_path, llm=spec_for(server)).judge(Q, ANSWER, EVIDENCE)
    assert result.claims == [] and "bad_schema" in result.error and "not claim 1" in result.error


def test_http_500_is_a_judge_error(server, tmp_path):
    server.push("500", "500")  # max_retries=1: two attempts, both fail
    with usage_scope() as usage:
        result = make_judge("llm", cache_root=tmp_path, llm=spec_for(server)).judge(Q, ANSWER, EVIDENCE)
    assert result.claims == [] and result.error.startswith("llm judge: server_error")
    assert len(server.requests) == 2 and usage["judge"].failures == 1
    server.push("500", "500")
    assert make_judge("llm", cache_root=tmp_path, llm=spec_for(server)).judge(Q, ANSWER, EVIDENCE).error


def test_500_in_the_verdict_step_is_an_error_too(server, tmp_path):
    server.push(text({"claims": CLAIMS}), "500", "500")
    result = make_judge("llm", cache_root=tmp_path, llm=spec_for(server)).judge(Q, ANSWER, EVIDENCE)
    assert result.error and "server_error" in result.error and not result.claims


def test_no_evidence_and_empty_answer(server, tmp_path):
    judge = make_judge("llm", cache_root=tmp_path, llm=spec_for(server))
    assert judge.judge(Q, "  ", EVIDENCE).to_dict() == JudgeResult([]).to_dict()
    server.push(text({"claims": CLAIMS}))
    result = judge.judge(Q, ANSWER, [])
    assert [c.verdict for c in result.claims] == ["unsupported", "unsupported"]
    assert len(server.requests) == 1  # no verdict call without evidence


def test_registry_configuration_and_identity(server, tmp_path):
    assert {"offline", "llm", "ragas"} <= set(JUDGES)
    with pytest.raises(ValueError, match="needs an LLM"):
        make_judge("llm", cache_root=tmp_path)
    with pytest.raises(ValueError, match="extractive"):
        make_judge("llm", cache_root=tmp_path, llm={"backend": "extractive"})
    a = make_judge("llm", cache_root=tmp_path, llm=spec_for(server).model_dump())
    b = make_judge("llm", cache_root=tmp_path, llm=spec_for(server, model="other"))
    assert isinstance(a, LLMJudge) and a.identity != b.identity
    assert f"prompt=v{PROMPT_VERSION}" in a.identity and "model=judge-test" in a.identity
    assert "seed=7" in a.identity and "t=0" in a.identity


def test_helpers():
    assert claims_grounded(["The stipend is $1,500.", "Lisbon opened in 2019."], ANSWER, Q) == [
        "The stipend is $1,500."]
    assert missing_numbers(["stipend of 1500"], "It is $1,500 and 20 days [doc-3].") == ["20"]
    ids = ["hr-012", "hr-013"]
    assert [_evidence_id(x, ids) for x in ("1", 2, "[2]", "passage 1", "hr-013", "9", None, "x")] == [
        "hr-012", "hr-013", "hr-013", "hr-012", "hr-013", None, None, None]
    block, cut = evidence_block([("a", "x" * 500), ("b", "short")], max_chars=400)
    assert cut and block.startswith("[1] " + "x" * 200 + "...") and block.endswith("[2] short")
    assert evidence_block([("a", "fine")]) == ("[1] fine", False)


@pytest.mark.integration
def test_smoke_with_the_real_local_smollm2(tmp_path):
    judge = make_judge("llm", cache_root=tmp_path, llm=LLMSpec(backend="local", max_tokens=24))
    result = judge.judge(Q, ANSWER, EVIDENCE)
    assert isinstance(result, JudgeResult)  # a code-path check: SmolLM2-135M is no judge (see reports/judges.md)


@pytest.mark.parametrize("judge_llm", [None, {"backend": "extractive"}])
def test_a_judge_without_a_usable_llm_is_a_user_error_not_a_traceback(tmp_path, judge_llm):
    # `evalkit run --judge llm` without --judge-llm (or with an extractive one) must print one line
    from click.testing import CliRunner

    from evalkit.cli import cli
    from evalkit.errors import EvalkitError

    with pytest.raises(EvalkitError):
        make_judge("llm", cache_root=tmp_path, llm=judge_llm)
    answers = tmp_path / "answers.jsonl"
    answers.write_text(json.dumps({"id": "q1", "question": "x?", "answer": "y", "contexts": ["z"]}) + "\n")
    args = ["score", "--answers", str(answers), "--name", "x", "--output", str(tmp_path / "r.json"), "--no-mlflow",
            "--judge", "llm"]
    if judge_llm is not None:
        (tmp_path / "j.yaml").write_text("backend: extractive\n")
        args += ["--judge-llm", str(tmp_path / "j.yaml")]
    res = CliRunner().invoke(cli, args)
    assert res.exit_code != 0 and isinstance(res.exception, SystemExit), res.exception  # a clean exit, no traceback
    assert ("needs an LLM" if judge_llm is None else "needs a model backend") in res.output, res.output
