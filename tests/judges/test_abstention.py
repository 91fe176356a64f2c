"""The abstention detector: refusals (en, zh) vs negative facts, the order of its rules, user
patterns, and the labelled held-out split (benchmarks/data/abstention_test.jsonl)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalkit.judges.abstention import AbstentionPatternError, detect_abstention

DATA = Path(__file__).resolve().parents[2] / "benchmarks" / "data"


@pytest.mark.parametrize("answer", [
    "I don't know.", "The knowledge base has no information on this.", "抱歉，我找不到相关信息。",
    "知识库中没有找到相关信息。", "根据现有资料无法回答。", "没有找到与该问题相关的内容。",
    "The provided documents do not mention the Q4 figures.", "I'm not finding anything about that in our docs.",
    "就目前掌握的资料来看，这一点没有记载。", "信息不足，无法回复。",
])
def test_refusals(answer):
    assert detect_abstention(answer).abstained, answer


@pytest.mark.parametrize("answer", [
    "The LX-200 does not contain a built-in Wi-Fi module.", "2026 版制度也未提供住宿补贴。",
    "前一笔借款未冲销完毕前，不得再次借款。", "No, USB storage is blocked by default.",
    "Data older than the retention period cannot be restored.", "资料显示，LX-300 没有 4G 模组。",
    "The documents say the Hong Kong rates will be announced separately, so there is no fixed cap yet.",
])
def test_negative_facts_are_answers(answer):
    assert not detect_abstention(answer).abstained, answer


def test_a_partial_refusal_that_answers_is_an_answer():
    d = detect_abstention("The documents don't give an exact date, but the policy took effect on 1 January 2026.")
    assert (d.abstained, d.reason) == (False, "partial")


def test_the_order_of_the_rules():
    assert detect_abstention("", finish_reason="stop").reason == "empty"
    assert detect_abstention("Here is a harmless text.", finish_reason="content_filter").reason == "content_filter"
    d = detect_abstention("暂无该数据。", extra_patterns=["暂无该数据"])
    assert (d.abstained, d.reason, d.matched, d.by_user) == (True, "user_pattern", "暂无该数据", True)
    # a not_pattern wins over a default refusal and over the user's own patterns
    d = detect_abstention("I don't know the exact date.", not_patterns=["exact date"], extra_patterns=["know"])
    assert (d.abstained, d.reason) == (False, "user_not_pattern")
    assert detect_abstention("x", not_patterns=["x"], finish_reason="content_filter").abstained is False


def test_invalid_user_patterns_are_errors():
    with pytest.raises(AbstentionPatternError, match=r"patterns\[1\].*not a valid regular expression"):
        detect_abstention("a", extra_patterns=["ok", "(unclosed"])


def test_the_held_out_split_meets_the_targets():
    rows = [json.loads(x) for x in (DATA / "abstention_test.jsonl").read_text(encoding="utf-8").splitlines() if x]
    assert len(rows) >= 190 and {r["lang"] for r in rows} == {"en", "zh"}
    pred = [detect_abstention(r["answer"], finish_reason=r.get("finish_reason")).abstained for r in rows]
    gold = [r["label"] == "abstained" for r in rows]
    tp = sum(p and g for p, g in zip(pred, gold))
    precision, recall = tp / sum(pred), tp / sum(gold)
    assert precision >= 0.95 and recall >= 0.95, (precision, recall)
