"""Splitting answers into claims (sentences) and clauses, Chinese and English."""
from __future__ import annotations

import pytest

from evalkit.text.claims import split_claims, split_clauses, strip_citations


@pytest.mark.parametrize("answer, claims", [
    # decimals, versions, abbreviations, codes and "No." do not end a sentence
    ("Revenue was $3.5 million [fin-004]. It grew 12%.", ["Revenue was $3.5 million.", "It grew 12%."]),
    ("Use v1.2 of the SDK, e.g. for E-4012. See No. 5 for details!",
     ["Use v1.2 of the SDK, e.g. for E-4012.", "See No. 5 for details!"]),
    ("Version 4.2 fixes it, i.e. the retry.max_attempts bug. Done.",
     ["Version 4.2 fixes it, i.e. the retry.max_attempts bug.", "Done."]),
    ("J. K. Rowling wrote it. Dr. Smith agreed.", ["J. K. Rowling wrote it.", "Dr. Smith agreed."]),
    ("Is it free? Yes! It costs 0.0 USD", ["Is it free?", "Yes!", "It costs 0.0 USD"]),
    # citation markers of several shapes are dropped
    ("Backups are kept for 35 days [1, 2][ops-backup].", ["Backups are kept for 35 days."]),
    # bullets and numbered steps; line breaks end claims
    ("1. Open Settings > API Keys.\n2. Click Rotate.\n- The old key works for 24 hours",
     ["Open Settings > API Keys.", "Click Rotate.", "The old key works for 24 hours"]),
    ("* Starter: 10 GB\n* Team: 1 TB", ["Starter: 10 GB", "Team: 1 TB"]),
    # empty fragments are dropped
    ("\n\n - \n...\nOK.", ["OK."]),
])
def test_english_claims(answer, claims):
    assert split_claims(answer) == claims


@pytest.mark.parametrize("answer, claims", [
    ("签收后七日内可以无理由退货；若有质量问题，十五天内可换货。", ["签收后七日内可以无理由退货；", "若有质量问题，十五天内可换货。"]),
    ("黄山以“四绝”闻名。它于1990年被列入名录！真的吗？", ["黄山以“四绝”闻名。", "它于1990年被列入名录！", "真的吗？"]),
    ("他说：“价格是3.5元。”然后离开了。", ["他说：“价格是3.5元。”", "然后离开了。"]),
    ("- 入门版：10 GB\n- 团队版：1 TB", ["入门版：10 GB", "团队版：1 TB"]),
    ("1、进入设置\n2）点击“轮换”【1】", ["进入设置", "点击“轮换”"]),
    ("哈勃望远镜在1990年4月24日升空[1]。", ["哈勃望远镜在1990年4月24日升空。"]),
])
def test_chinese_claims(answer, claims):
    assert split_claims(answer) == claims


def test_mixed_and_deterministic():
    text = "X9 支持 Wi-Fi 7。It does not support PoE. 价格为 3.5 万元。"
    assert split_claims(text) == ["X9 支持 Wi-Fi 7。", "It does not support PoE.", "价格为 3.5 万元。"]
    assert split_claims(text) == split_claims(text)


def test_strip_citations_keeps_other_brackets():
    assert strip_citations("see [fin-004] and [1] but keep (this)") == "see and but keep (this)"


@pytest.mark.parametrize("sentence, clauses", [
    ("No, the LX-200 Pro has no NFC support, though it does support Wi-Fi 6E.",
     ["No", "the LX-200 Pro has no NFC support", "though it does support Wi-Fi 6E"]),
    ("X9 不支持 PoE 供电，不过它支持 Wi-Fi 7。", ["X9 不支持 PoE 供电", "它支持 Wi-Fi 7"]),
    ("Revenue was 5,000 units; up 3.5%", ["Revenue was 5,000 units", "up 3.5%"]),
    ("年假可以结转，但最多5天", ["年假可以结转", "最多5天"]),
])
def test_clauses(sentence, clauses):
    assert split_clauses(sentence) == clauses
