"""The error-reply detector: service/transport/provider error texts (en, zh) vs answers about errors,
its place among the abstention rules, and the labelled held-out split (data/error_replies.jsonl)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalkit.text.abstention import detect_abstention
from evalkit.text.error_replies import detect_error_reply

CASES = Path(__file__).resolve().parent / "data" / "error_replies.jsonl"
REPO = Path(__file__).resolve().parents[2]
# per language, on the held-out split; measured (benchmarks/error_replies.py --split test, 2026-12-02, after the
# cause / docs-pointer / bare-state rules): precision 1.000 both, recall en 1.000 (25/25; en096 was named by an
# audit, so not blind), zh 0.955 (21/22). The floors allow one more wrong call of each kind per language.
FLOOR_PRECISION, FLOOR_RECALL = 0.94, 0.90


def _cases(split: str) -> list[dict]:
    rows = [json.loads(x) for x in CASES.read_text(encoding="utf-8").splitlines() if x.strip()]
    return [r for r in rows if r["split"] == split]


def test_the_cases_file_is_as_described():
    rows = _cases("dev") + _cases("test")
    assert len(rows) >= 150 and {r["lang"] for r in rows} == {"en", "zh"}
    assert {r["label"] for r in rows} == {"error", "answer", "refusal"} and all(r["source"] for r in rows)
    assert len({r["text"] for r in rows}) == len(rows)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_held_out_split_meets_the_floor(lang):
    rows = [r for r in _cases("test") if r["lang"] == lang]
    assert len(rows) >= 35 and sum(r["label"] == "error" for r in rows) >= 15
    pred = [detect_error_reply(r["text"]) is not None for r in rows]
    gold = [r["label"] == "error" for r in rows]
    tp = sum(p and g for p, g in zip(pred, gold))
    wrong = [r["id"] for r, p, g in zip(rows, pred, gold) if p != g]
    assert tp / sum(pred) >= FLOOR_PRECISION and tp / sum(gold) >= FLOOR_RECALL, wrong


def test_no_false_alarm_on_the_repositorys_other_answers():
    """Answers and refusals labelled for other detectors and the demo's reference answers: none is an error."""
    files = {"tests/judges/data/abstention_cases.jsonl": "answer", "benchmarks/data/abstention_dev.jsonl": "answer",
             "benchmarks/data/abstention_test.jsonl": "answer", "benchmarks/data/abstention_test2.jsonl": "answer",
             "benchmarks/data/abstention_test3.jsonl": "answer", "benchmarks/data/judge_cases.jsonl": "answer",
             "benchmarks/data/judge_paraphrases.jsonl": "answer", "eval_sets/demo_kb.jsonl": "reference_answer"}
    texts = [r[key] for f, key in files.items()
             for r in map(json.loads, (REPO / f).read_text(encoding="utf-8").splitlines())
             if isinstance(r.get(key), str) and r[key].strip()]
    assert len(texts) >= 1800
    flagged = [t for t in texts if detect_error_reply(t)]
    assert len(flagged) <= 2, flagged  # measured: 0


@pytest.mark.parametrize(("text", "kind"), [
    ('{"error":{"message":"Rate limit reached for gpt-4o","type":"requests","code":"429"}}', "json"),
    ("{'error': {'message': 'Overloaded', 'type': 'overloaded_error'}}", "json"),  # a Python dict's repr
    ('{"error": {"message": "That model is currently overloaded with other requests. You can retry your requ',
     "json"),  # truncated
    ('{"code":500,"msg":"系统异常，请联系管理员","data":null}', "json"),
    ("<html><head><title>502 Bad Gateway</title></head><body><h1>502 Bad Gateway</h1></body></html>", "page"),
    ("HTTP/1.1 503 Service Unavailable\n\nupstream overloaded", "page"),
    ("Traceback (most recent call last):\n  File \"a.py\", line 1, in <module>\nopenai.APITimeoutError: Request "
     "timed out.", "exception"),
    ("openai.APIConnectionError: Connection error.", "exception"),
    ("Error: timeout of 60000ms exceeded", "exception"),
    ("调用大模型失败: Read timed out. (read timeout=60)", "exception"),
    ("Sorry, the service is temporarily unavailable. Please try again later.", "message"),
    ("当前分组上游负载已饱和，请稍后再试 (request id: 2024061215304512)", "message"),
    ("请求过于频繁，请稍后再试", "message"),
    ("服务繁忙，请稍后重试", "message"),
    ("令牌额度已用尽", "message"),
    ("模型不存在", "message"),
    ("Service Unavailable", "message"),
    ("Sorry, we're having trouble connecting to the AI service right now.", "message"),
])
def test_error_replies(text, kind):
    found = detect_error_reply(text)
    assert found is not None and found.kind == kind, (text, found)


@pytest.mark.parametrize("text", [
    "A 502 Bad Gateway error means the upstream server returned an invalid response; check the proxy logs [doc3].",
    "“当前分组上游负载已饱和”是 one-api 在所有渠道都被限流时返回的提示 [ops-5]。",  # quoted, and cited
    "当系统提示“请求过于频繁”时，等待一分钟即可。",  # a quoted message, no citation
    "The documents do not say.", "资料中没有提到。", "根据检索结果，暂时无法回答您的问题，建议您稍后再试或联系管理员。",
    "Yes. When the limit is exceeded the API answers {\"error\": {\"code\": \"429\"}} [api-07].",
    '{"answer": "The fee is $25.", "citations": ["fin-2"]}', '{"code": 0, "msg": "success", "data": {"answer": "10天"}}',
    "HTTP 401: the access token expired.", "Rate limit: 60 requests per minute.", "超时时间为 30 秒。",
    "The service is temporarily unavailable on Sundays.", "系统繁忙时请耐心等待。", "Timeout: 30 seconds.",
    "ValueError: raised when a function receives an argument of the right type but an inappropriate value.",
    "ConnectionError: base class for connection-related issues.", "Payment failed: the card was declined by the bank.",
    "Connection refused means nothing is listening on that port.", "30 seconds.", "10天 [hr-1]。", "",
])
def test_answers_and_refusals_are_not_error_replies(text):
    assert detect_error_reply(text) is None, text


def test_its_place_among_the_abstention_rules():
    d = detect_abstention("抱歉，服务暂时不可用，请稍后再试。")
    assert (d.abstained, d.reason) == (False, "error_reply")  # an outage is no correct abstention...
    assert not d.by_user and d.to_dict()["matched"]
    # ...and a not_pattern keeps it an answer, a user pattern a refusal (the user decides first)
    assert detect_abstention("抱歉，服务暂时不可用，请稍后再试。", not_patterns=["服务暂时不可用"]).reason == "user_not_pattern"
    assert detect_abstention("Service Unavailable", extra_patterns=["unavailable"]).reason == "user_pattern"
    assert detect_abstention("", finish_reason="stop").reason == "empty"
    assert detect_abstention("Hi", finish_reason="content_filter").reason == "content_filter"
    assert detect_abstention("I don't know.").reason == "refusal"


@pytest.mark.parametrize("text", [
    # a failure message that gives its cause, with retry advice: the cause is part of the message
    "The model is busy because of heavy traffic right now. Please try again in a few minutes.",
    "因为当前使用人数过多，服务繁忙，请稍候再试。",
    "由于请求量过大，接口暂时无法提供服务，请稍后重试。",
    # a pointer to the docs (and its URL) says where to get help; it is not a source
    "You have reached your rate limit. For details, see the documentation: https://example.com/docs/limits",
    "令牌额度已用尽，详情请查阅官方文档 https://docs.example.cn/quota",
    # a bare domain ends in any top-level domain the refusal rules know (one list: data/web_domains.txt)
    "Service temporarily unavailable. Check status.benefits.gov for updates.",
    "Error 503: upstream timeout. See help.city.edu/status",
    "服务暂时不可用，请稍后重试。详情见 status.example.co.uk",
])
def test_causes_and_docs_pointers_do_not_hide_an_error(text):
    assert detect_error_reply(text) is not None, text


@pytest.mark.parametrize("text", [
    # bare states name nothing that failed: each can answer "what did the log say?" or "what status is shown?"
    "Out of memory.", "Unauthorized.", "Forbidden", "超时。", "余额不足。", "显存不足",
    # a cause without retry advice explains; a docs pointer next to a real source is still a refusal
    "The 2 May outage happened because the gateway was overloaded.",
    "接口返回 503 是因为上游服务繁忙。",
    "The documents do not say; please see the documentation for details.",
])
def test_bare_states_and_explained_causes_are_answers(text):
    assert detect_error_reply(text) is None, text


@pytest.mark.parametrize("text", ["Service Unavailable", "Request timed out.", "网关超时", "模型不存在", "401 Unauthorized"])
def test_a_bare_failure_that_names_the_service_or_a_status_is_an_error(text):
    assert detect_error_reply(text) is not None, text
