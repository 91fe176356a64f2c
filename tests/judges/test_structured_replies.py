"""Refusals in the shape of an answer (evalkit.text.structured_replies), punctuation-only replies and a
pipeline's report of an empty retrieval: each a refusal, and the look-alikes that are answers stay answers."""
from __future__ import annotations

import pytest

from evalkit.text.abstention import detect_abstention
from evalkit.text.structured_replies import no_value, states_no_value

REFUSALS = {
    '```json\n{"question_id": "q_1", "answer": "", "evidence": [], "status": "empty"}\n```': '"answer": ""',
    '{"answer": null, "reason": "not in the context"}': '"answer": null',
    '{"结论": "暂无"}': '"结论": "暂无"',
    "| 网点 | 冷链仓储费（元/托/天） |\n|---|---|\n| 武汉 | 待补充 |\n| 成都 | 待补充 |": "| 武汉 | 待补充 |",
    "| City | Per diem (USD) | Source |\n|---|---|---|\n| Singapore | — | — |": "| Singapore | — | — |",
    "| Item | Value |\n|:--|--:|\n| Fee | N/A |": "| Fee | N/A |",
    "【问题】创业担保贷款最高额度\n【答案】——\n【依据】——": "【答案】——",
    "**Answer:** unknown\nSource: —": "**Answer:** unknown",
}
ANSWERS = [
    '{"answer": "April 10", "source": "FAQ p. 2"}',
    '```json\n{"answer": "No", "evidence": ["doc-3"]}\n```',
    "Answer: April 10\nSource: County Treasurer FAQ, p. 2\nConfidence: high",
    "Answer: None.",           # "Any fees? None." is an answer
    "答案：无",
    "Result: pending",         # a status
    "| City | Per diem |\n|---|---|\n| Singapore | 120 |\n| Tokyo | — |",  # one filled cell
    "| City | Per diem |\n|---|---|\n| Singapore | 120 |",
    "Here is the table:\n| City | Per diem |\n|---|---|\n| Singapore | — |",  # more than a table: the rules decide
]


@pytest.mark.parametrize("text,matched", REFUSALS.items())
def test_a_structured_reply_with_no_value_is_a_refusal(text: str, matched: str):
    assert no_value(text) == matched
    found = detect_abstention(text)
    assert (found.abstained, found.reason, found.matched) == (True, "refusal", matched)


@pytest.mark.parametrize("text", ANSWERS)
def test_a_structured_reply_with_a_value_is_not_refused_by_its_shape(text: str):
    assert no_value(text) is None


def test_what_a_slot_with_no_value_is():
    assert all(states_no_value(v) for v in (None, "", "  ", [], {}, "—", "/", "……", "N/A", "**TBD**", "待补充", "未知"))
    assert not any(states_no_value(v) for v in ("none", "无", "pending", "0", 0, 0.0, False, ["x"], "No", "120"))


@pytest.mark.parametrize("text", ["—", "……", "?", " -- ", "……？"])
def test_a_reply_of_punctuation_only_is_a_refusal(text: str):
    found = detect_abstention(text)
    assert (found.abstained, found.reason) == (True, "refusal")


@pytest.mark.parametrize("text", ["[retriever] 0 passages matched query (threshold 0.72). Generation skipped.",
                                  "Search returned 0 matching passages.", "[search] hits=0",
                                  "【系统提示】知识检索返回结果为空（top_k=5），已跳过回答生成。", "搜索结果为空"])
def test_a_pipelines_report_of_an_empty_retrieval_is_a_refusal(text: str):
    assert detect_abstention(text).abstained


@pytest.mark.parametrize("text", ["The store returned 0 defects last quarter.", "Our audit found 0 documents missing.",
                                  "The line had zero hits on the safety log in May.", "检测结果为阴性。"])
def test_counts_of_zero_in_the_world_are_answers(text: str):
    assert not detect_abstention(text).abstained
