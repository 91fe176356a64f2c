"""A clause with a subject of its own is judged on its own (audit of 2026-12-01, me2 and variants).

Correct multi-document answers whose second clause has its own subject were flagged: the
value was bound to the previous clause's name ("6 weeks ... not with entity 'Anna Weber'").
Both directions are tested on real sentences: the correct answers are supported, a wrong
value in such a clause is still caught (one the evidence states for something else is, since
judge v10, unverified), and a clause with no subject of its own ("华南区更高：2,240 万元") still
takes the one before.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalkit.judges.grounding import analyse, segments
from evalkit.judges.offline import OfflineJudge
from evalkit.judges.subjects import own_subject

CORPUS = Path(__file__).resolve().parents[2] / "eval_sets" / "corpora" / "demo_kb.jsonl"
DOCS = {d["id"]: d["text"] for d in map(json.loads, CORPUS.read_text(encoding="utf-8").splitlines())}

RETURNS_EN = [("ret-1", "All EU returns are processed at our Dublin warehouse."),
              ("ret-2", "Refunds are issued within 14 days of receiving the item.")]
RETURNS_ZH = [("ret-1", "所有欧盟退货均由都柏林仓库处理。"), ("ret-2", "退款将在收到商品后 14 天内发放。")]
PILOT = [("p1", "The project is led by Anna Weber."), ("p2", "The pilot runs for 6 weeks.")]
OFFICE = [("o1", "Our office is in Berlin."), ("o2", "The office opens at 9:00 every weekday.")]
STAFF_ZH = [("h1", "北京办公室由张伟负责。"), ("h2", "员工每年享有 10 天带薪年假。")]


@pytest.fixture(scope="module")
def judge():
    return OfflineJudge()


def verdicts(judge, answer, evidence, question="?"):
    return [(c.verdict, c.reason) for c in judge.judge(question, answer, evidence).claims]


@pytest.mark.parametrize("clause, subject", [
    ("and the pilot runs for 6 weeks", "the pilot"),
    ("refunds are issued within 14 days", "refunds"),
    ("and refunds take 14 days", "refunds"),
    ("and the refund window is 14 days", "the refund window"),
    ("it opens at 9:00", "it"),
    ("its case recharges fully in 90 minutes", "its case"),
    ("退款在 14 天内发放", "退款"),
    ("住宿费每晚上限为 800 元", "住宿费"),
    ("员工每年享有 10 天带薪年假", "员工"),
    ("其充电盒 90 分钟充满", "其"),
])
def test_a_noun_phrase_or_pronoun_before_the_verb_is_a_subject(clause, subject):
    assert own_subject(clause) == subject


@pytest.mark.parametrize("clause", [
    "and has 25 seats",                # a verb phrase: the subject is the one before
    "and also costs $10",              # an adverb, then the verb
    "an increase of 24%",              # a noun phrase without a verb
    "which gets 600 requests per minute",  # a relative pronoun stands for the name before
    "2,240 万元",                       # the value alone
    "同比增长 6%",                      # a verb first
    "为 1,270 万元",                    # a preposition first
    "增长至 2,710 万元",                # a verb and its result, not a nominal verb
    "目标 2,300 万元",                  # a label and its value
    "要在领证后一年内一次休完",          # a modal first
    "内置四根天线",                     # a verb jieba tags as a noun, directly before its object
])
def test_a_clause_without_its_own_subject(clause):
    assert own_subject(clause) is None


@pytest.mark.parametrize("answer, evidence", [
    ("Anna Weber leads the project and the pilot runs for 6 weeks.", PILOT),
    ("Returns for the EU are processed in Dublin and refunds are issued within 14 days.", RETURNS_EN),
    ("EU returns are handled by the Dublin warehouse and refunds are issued within 14 days.", RETURNS_EN),
    ("Returns for the EU are processed in Dublin, and refunds are issued within 14 days.", RETURNS_EN),
    ("EU returns go to Dublin; refunds take 14 days.", RETURNS_EN),
    ("The office is in Berlin and it opens at 9:00.", OFFICE),
    ("欧盟退货由都柏林仓库处理，退款在 14 天内发放。", RETURNS_ZH),
    ("北京办公室由张伟负责，员工每年享有 10 天带薪年假。", STAFF_ZH),
])
def test_a_correct_multi_document_answer_is_supported(judge, answer, evidence):
    out = verdicts(judge, answer, evidence)
    assert [v for v, _ in out] == ["supported"] * len(out), out


@pytest.mark.parametrize("answer, evidence, wrong", [
    ("Returns for the EU are processed in Dublin and refunds are issued within 30 days.", RETURNS_EN, "30 days"),
    ("Anna Weber leads the project and the pilot runs for 8 weeks.", PILOT, "8 weeks"),
    ("The office is in Berlin and it opens at 10:00.", OFFICE, "10:00"),
    ("欧盟退货由都柏林仓库处理，退款在 30 天内发放。", RETURNS_ZH, "30 天"),
    ("北京办公室由张伟负责，员工每年享有 15 天带薪年假。", STAFF_ZH, "15 天"),
])
def test_a_wrong_value_in_such_a_clause_is_caught(judge, answer, evidence, wrong):
    ((verdict, reason),) = verdicts(judge, answer, evidence)
    assert verdict == "unsupported" and wrong in reason and "not in evidence" in reason


def test_a_value_the_evidence_states_for_something_else_is_unverified():
    # 30 days is in the evidence, for returns: the refunds' value must come from a passage about refunds. Stated
    # with another subject, v10 cannot call it a contradiction: unverified, never supported
    judge = OfflineJudge()
    en = [("ret-1", "All EU returns are processed at our Dublin warehouse. Returns are accepted within 30 days."),
          RETURNS_EN[1]]
    ((verdict, reason),) = verdicts(judge, "Returns for the EU are processed in Dublin and refunds are issued "
                                           "within 30 days.", en)
    assert verdict == "unverified" and reason.endswith("not with 'refunds'")
    zh = [("ret-1", "所有欧盟退货均由都柏林仓库处理，退货须在签收后 30 天内申请。"), RETURNS_ZH[1]]
    ((verdict, reason),) = verdicts(judge, "欧盟退货由都柏林仓库处理，退款在 30 天内发放。", zh)
    assert verdict == "unverified" and reason.endswith("not with '退款'")
    # the right value passes with that evidence too
    assert verdicts(judge, "欧盟退货由都柏林仓库处理，退款在 14 天内发放。", zh)[0][0] == "supported"


def test_a_subject_the_evidence_paraphrases_binds_nothing(judge):
    # "trial" is nowhere in the evidence (it says "pilot"): like a name it never states, no binding
    out = verdicts(judge, "Anna Weber leads the project and the trial runs for 6 weeks.", PILOT)
    assert "not with" not in out[0][1]


def test_a_clause_without_its_own_subject_still_takes_the_one_before(judge):
    q = "2025年第二季度哪个区域销售额最高？"  # the question names no region: the answer's are claims
    docs = [(d, DOCS[d]) for d in ("sales-002", "sales-005")]
    assert verdicts(judge, "华东区更高：3,420 万元，华南区为 2,240 万元。", docs, q)[0][0] == "supported"
    # the inherited subject binds: 3,420 is East China's, not South China's (a value stated with another subject:
    # unverified, never supported)
    ((verdict, reason),) = verdicts(judge, "华南区更高：3,420 万元，华东区为 2,240 万元。", docs, q)
    assert verdict == "unverified" and "not with entity '华南区'" in reason
    ((verdict, reason),) = verdicts(judge, "华东区更高：3,240 万元，华南区为 2,240 万元。", docs, q)
    assert verdict == "unsupported" and "3,240" in reason
    unit = analyse("华南区更高：2,240 万元，华北区为 1,980 万元。")
    assert [s.topic for s in segments(unit)] == ["", "", ""]


def test_an_own_subject_keeps_the_period_of_the_clause_before():
    unit = analyse("2021年末，全国人口为141260万人。")
    first, second = segments(unit)
    assert second.topic == "全国人口" and [unit.atoms[j].text for j in second.subjects] == ["2021年"]


def test_a_clause_with_its_own_subject_is_cut_off_at_and():
    unit = analyse("Anna Weber leads the project and the pilot runs for 6 weeks.")
    segs = segments(unit)
    assert [[unit.atoms[i].text for i in s.atoms] for s in segs] == [["Anna Weber"], ["6 weeks"]]
    assert segs[1].subjects == () and segs[1].topic == "the pilot"
    # a verb phrase has no subject of its own: its value stays with the name before
    unit = analyse("The Basic plan costs $10 and has 25 seats.")
    last = segments(unit)[-1]
    assert last.topic == "" and [unit.atoms[j].text for j in last.subjects] == ["Basic"]
