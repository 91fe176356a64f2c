"""The offline judge: each error type in Chinese and English, reformatted supported values,
not-checkable claims, failures, and the records and registry around it."""
from __future__ import annotations

import pytest

from evalkit.judges import (
    JUDGES,
    ClaimVerdict,
    JudgeResult,
    UnknownJudgeError,
    make_judge,
)
from evalkit.judges.offline import OfflineJudge

# one small policy / spec per language, used by several tests
EN_TEXT = ("The Pro plan costs $49 per month and includes 20,000 API calls. Annual billing starts on "
           "1 July 2026. The Pro plan does not include phone support. Support tickets are answered by "
           "the Lisbon team within 8 hours.")
ZH_TEXT = ("专业版每月收费4900元，包含两万次接口调用。年付计费自2026年7月1日起执行。专业版不提供电话支持。"
           "工单由杭州团队在8小时内答复。")
EN = [("pol-7", EN_TEXT)]
ZH = [("pol-zh-7", ZH_TEXT)]


@pytest.fixture(scope="module")
def judge() -> OfflineJudge:
    return OfflineJudge()


def verdicts(judge, question, answer, evidence):
    return [c.verdict for c in judge.judge(question, answer, evidence).claims]


@pytest.mark.parametrize("answer", [
    "The Pro plan costs 49 USD a month and includes 20000 API calls.",          # thousands separator, currency
    "It costs $49 monthly, with twenty thousand API calls included.",          # number words
    "The Pro plan includes 20k API calls [pol-7].",                              # scale word, citation
    "Annual billing begins on July 1st, 2026.",                                  # other date format
    "Annual billing starts 2026-07-01.",
    "Tickets get an answer from the Lisbon team in under eight hours.",          # paraphrase
])
def test_en_supported_reformatted(judge, answer):
    assert verdicts(judge, "What does the Pro plan include?", answer, EN) == ["supported"]


@pytest.mark.parametrize("answer", [
    "专业版每月4900元，包含20000次接口调用。",          # 两万 = 20000
    "专业版月费四千九百元，含2万次接口调用。",          # 四千九百 = 4900; 2万
    "年付计费从2026-07-01开始执行。",                 # date format
    "年付计费自二〇二六年七月一日起执行。",
    "工单由杭州团队在八小时内答复。",
])
def test_zh_supported_reformatted(judge, answer):
    assert verdicts(judge, "专业版包含什么？", answer, ZH) == ["supported"]


@pytest.mark.parametrize("lang, answer, reason", [
    ("en", "The Pro plan costs $59 per month.", "number $59 not in evidence"),
    ("en", "Annual billing starts on 1 August 2026.", "date 1 August 2026 not in evidence"),
    ("en", "Support tickets are answered by the Porto team within 8 hours.", "entity 'Porto"),
    ("en", "The Pro plan includes phone support.", "polarity flip"),
    ("zh", "专业版每月收费5900元。", "number 5900元 not in evidence"),
    ("zh", "年付计费自2026年8月1日起执行。", "date 2026年8月1日 not in evidence"),
    ("zh", "工单由成都团队在8小时内答复。", "entity '成都'"),
    ("zh", "专业版提供电话支持。", "polarity flip"),
    ("zh", "专业版每月收费4900元。专业版还赠送专属客户经理和培训课程。", "is anywhere in the evidence"),
])
def test_each_error_type_is_caught(judge, lang, answer, reason):
    ev = EN if lang == "en" else ZH
    result = judge.judge("Tell me about the Pro plan." if lang == "en" else "介绍一下专业版。", answer, ev)
    bad = [c for c in result.claims if c.verdict == "unsupported"]
    assert len(bad) == 1, result
    assert reason in bad[0].reason


def test_an_added_sentence_with_a_word_of_the_evidence_is_unverified(judge):
    # "includes" is in the evidence, so the added sentence is not one none of whose words is anywhere: v10 calls it
    # unverified (low coverage), never supported
    answer = "The Pro plan costs $49 per month. It also includes a dedicated account manager."
    first, added = judge.judge("Tell me about the Pro plan.", answer, EN).claims
    assert first.verdict == "supported"
    assert added.verdict == "unverified" and "content words found in the evidence" in added.reason, added


@pytest.mark.parametrize("lang, answer", [
    ("en", "The Pro plan has no phone support."),
    ("en", "Phone support isn't included in the Pro plan."),
    ("zh", "专业版没有电话支持。"),
    ("zh", "专业版不含电话支持。"),
])
def test_negation_supported_by_negated_evidence(judge, lang, answer):
    ev = EN if lang == "en" else ZH
    assert verdicts(judge, "?", answer, ev) == ["supported"]


def test_a_label_before_a_negated_fact_is_not_a_flip(judge):
    """A claim that keeps the evidence's negation is not a flip because a plain label clause
    before it names the same thing (q073 of the rag_compress demo run: "备注：LX-300 不在该供应商
    代工范围内" after a "代工范围：" field was a "polarity flip"); dropping the negation still is."""
    sup = [("sup-006", "代工范围：LX-200 系列（LX-200、LX-200 Pro）的 SMT 贴片、整机组装与出厂测试\n"
                       "工厂地址：东莞松山湖园区\n备注：LX-300 不在该供应商代工范围内。")]
    kept = ("代工范围：LX-200 系列（LX-200、LX-200 Pro）的 SMT 贴片、整机组装与出厂测试 工厂地址：东莞松山湖园区 "
            "备注：LX-300 不在该供应商代工范围内。")
    assert verdicts(judge, "LX-200 的主控芯片是哪家供应商生产的？", kept, sup) == ["supported"]
    (c,) = judge.judge("Can interns access production?", "Production access: interns do not get production access.",
                       [("sec", "Interns do not get production access.")]).claims
    assert "flip" not in c.reason and c.verdict != "unsupported", c
    (flipped,) = judge.judge("鹭岭智造代工哪些产品？", "LX-300 在该供应商代工范围内。", sup).claims
    assert flipped.verdict == "unsupported" and "flip" in flipped.reason


@pytest.mark.parametrize("lang, answer", [
    ("en", "Annual billing never starts on 1 July 2026."),
    ("zh", "年付计费不从2026年7月1日起执行。"),
])
def test_negation_absent_from_evidence(judge, lang, answer):
    ev = EN if lang == "en" else ZH
    (c,) = judge.judge("?", answer, ev).claims
    assert c.verdict == "unsupported" and "absent from best sentence" in c.reason


def test_question_atoms_are_not_rechecked(judge):
    # the question's number is given: only what the answer adds must be in the evidence
    ev = [("kb", "The limit is 50 requests per second, counted per API key.")]
    q = "Is the limit for plan X-100 50 requests per second?"
    assert verdicts(judge, q, "Yes: for X-100 it is 50 requests per second, counted per API key.", ev) == [
        "supported"]
    # a claim that only repeats the question adds nothing to check
    assert verdicts(judge, q, "Yes, the limit is 50 requests per second for X-100.", ev) == ["not_checkable"]


def test_atoms_must_sit_with_their_subject(judge):
    ev = [("a", "The Basic plan costs $10. It has 5 seats."), ("b", "The Team plan costs $30 and has 25 seats.")]
    (c,) = judge.judge("?", "The Basic plan costs $10 and has 25 seats.", ev).claims
    # 25 seats are the Team plan's: stated with another subject, unverified (never "supported")
    assert c.verdict == "unverified" and "not with entity 'Basic'" in c.reason


def test_not_checkable_is_never_supported(judge):
    result = judge.judge("Does the Pro plan include phone support?", "No. Hope this helps!", EN)
    assert [c.verdict for c in result.claims] == ["not_checkable", "not_checkable"]
    assert result.n_supported == 0 and result.n_checkable == 0 and result.unsupported is False
    (c,) = judge.judge("年假可以结转吗？", "可以。", [("hr", "年假可以结转。")]).claims
    assert c.verdict == "not_checkable"


def test_supported_claim_names_its_passage(judge):
    ev = [("x", "Unrelated text about lunch."), ("pol-7", EN[0][1])]
    (c,) = judge.judge("?", "The Pro plan costs $49 per month.", ev).claims
    assert (c.verdict, c.evidence_id) == ("supported", "pol-7")


def test_no_evidence(judge):
    (c,) = judge.judge("?", "The Pro plan costs $49 per month.", []).claims
    assert c.verdict == "unsupported"


def test_failure_is_an_error_not_a_verdict(judge, monkeypatch):
    def boom(*a, **k):
        raise RuntimeError("broken")

    monkeypatch.setattr(judge, "analyse", boom)
    r = judge.judge("q", "a", [])
    assert r.error == "RuntimeError: broken" and r.claims == [] and r.unsupported is None


def test_deterministic_and_identity(judge):
    a = judge.judge("?", "The Pro plan costs $59 per month.", EN).to_dict()
    b = OfflineJudge().judge("?", "The Pro plan costs $59 per month.", EN).to_dict()
    assert a == b
    assert judge.identity.startswith("offline/v") and OfflineJudge(min_coverage=0.9).identity != judge.identity


def test_records_round_trip():
    r = JudgeResult([ClaimVerdict("c1", "supported", "ok", "p1"), ClaimVerdict("c2", "not_checkable", "none")])
    assert JudgeResult.from_dict(r.to_dict()) == r
    assert (r.n_supported, r.n_unsupported, r.n_checkable, r.n_not_checkable) == (1, 0, 1, 1)
    with pytest.raises(ValueError, match="verdict must be one of"):
        ClaimVerdict("c", "maybe", "?")  # type: ignore[arg-type]


def test_registry():
    assert "offline" in JUDGES
    assert isinstance(make_judge("offline", min_coverage=0.4), OfflineJudge)
    with pytest.raises(UnknownJudgeError, match="did you mean 'offline'"):
        make_judge("ofline")


@pytest.mark.parametrize("dash", ["-", "\u2010", "\u2011", "\u2012", "\u2013", "\u2212", "\uff0d"])
def test_a_code_written_with_another_dash_is_the_same_code(judge, dash):
    """Chat models write product codes with U+2011 ("LX‑200"): read as another code, a correct claim was
    unsupported. Any dash inside a word is "-" now, in the answer and in the evidence; another code still fails."""
    evidence = [("d1", "The LX-200 router has 4 Ethernet ports. Check-in starts at 14:00.")]
    assert judge.judge("q?", f"The LX{dash}200 has 4 Ethernet ports [d1].", evidence).claims[0].verdict == "supported"
    assert judge.judge("q?", f"Check{dash}in starts at 14:00 [d1].", evidence).claims[0].verdict == "supported"
    assert judge.judge("q?", f"The LX{dash}300 has 4 Ethernet ports [d1].", evidence).claims[0].verdict == "unsupported"
    written = [("d1", f"The LX{dash}200 router has 4 Ethernet ports.")]  # the other way round
    assert judge.judge("q?", "The LX-200 has 4 Ethernet ports [d1].", written).claims[0].verdict == "supported"
    assert judge.judge("q?", "The LX-200 has 5 Ethernet ports [d1].", written).claims[0].verdict == "unsupported"
