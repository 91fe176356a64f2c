"""The offline judge on real sentences of the demo knowledge base: atoms grounded across
passages with their own subject, units, negation cues, days of the month, sentence-initial
capitals, derived numbers and evidence in another language (issue 13)."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from evalkit.judges.grounding import analyse, segments
from evalkit.judges.offline import OfflineJudge
from evalkit.text.values import extract_atoms

CORPUS = Path(__file__).resolve().parents[2] / "eval_sets" / "corpora" / "demo_kb.jsonl"
DOCS = {d["id"]: d["text"] for d in map(json.loads, CORPUS.read_text(encoding="utf-8").splitlines())}


@pytest.fixture(scope="module")
def judge():
    return OfflineJudge()


def claims(judge, question, answer, doc_ids):
    return judge.judge(question, answer, [(d, DOCS[d]) for d in doc_ids]).claims


# --- atoms from several passages -----------------------------------------------------------------
def test_a_comparison_takes_each_side_from_its_own_passage(judge):
    q = "2025年第二季度华南区和华北区哪个销售额更高？"
    (c,) = claims(judge, q, "华南区更高：2,240 万元，华北区为 1,980 万元。", ["sales-005", "sales-008"])
    assert c.verdict == "supported", c.reason
    assert set(c.evidence_ids) == {"sales-005", "sales-008"}
    # the same facts as two sentences were already supported; they still are
    assert [x.verdict for x in claims(judge, q, "华南区 2,240 万元。华北区 1,980 万元。", ["sales-005", "sales-008"])] \
        == ["supported", "supported"]
    # a changed number is still caught, wherever the other side comes from
    (c,) = claims(judge, q, "华南区更高：2,240 万元，华北区为 1,890 万元。", ["sales-005", "sales-008"])
    assert c.verdict == "unsupported" and "1,890" in c.reason


def test_a_value_must_sit_with_the_subject_the_answer_gives_it(judge):
    # the question names no region: the answer's regions are claims, and each number needs its own
    q = "2025年第二季度哪个区域销售额最高？"
    (ok,) = claims(judge, q, "华东区为 3,420 万元，华南区为 2,240 万元。", ["sales-002", "sales-005"])
    (swapped,) = claims(judge, q, "华东区为 2,240 万元，华南区为 3,420 万元。", ["sales-002", "sales-005"])
    assert ok.verdict == "supported", ok.reason
    # both values are the evidence's, for the other region: v10 cannot call that a contradiction (never "supported")
    assert swapped.verdict == "unverified" and "not with entity '华东区'" in swapped.reason


def test_a_name_only_a_translation_states_is_not_compared(judge):
    # sales-008 is the English North China report: 华北区 cannot be matched in it, its number can.
    # The price of that leniency, a swap across languages, passes (a blind spot, documented).
    q = "2025年第二季度哪个区域销售额更高？"
    (c,) = claims(judge, q, "华南区为 2,240 万元，华北区为 1,980 万元。", ["sales-005", "sales-008"])
    assert c.verdict == "supported" and "another language" in c.reason
    (c,) = claims(judge, q, "华南区为 2,240 万元，华北区为 1,890 万元。", ["sales-005", "sales-008"])
    assert c.verdict == "unsupported"


def test_values_sit_with_their_subject_in_english():
    ev = [("a", "The Basic plan costs $10. It has 5 seats."), ("b", "The Team plan costs $30 and has 25 seats.")]
    (c,) = OfflineJudge().judge("?", "The Basic plan costs $10 and has 25 seats.", ev).claims
    # 25 seats are the Team plan's: stated with another subject, unverified (never "supported")
    assert c.verdict == "unverified" and "not with entity 'Basic'" in c.reason
    (c,) = OfflineJudge().judge("?", "The Basic plan costs $10 and the Team plan has 25 seats.", ev).claims
    assert c.verdict == "supported" and set(c.evidence_ids) == {"a", "b"}


def test_segments_split_comparisons_and_inherit_subjects():
    unit = analyse("USD 2.1 million in Q2 vs USD 2.6 million in Q3, an increase of USD 0.5 million.")
    texts = [[unit.atoms[i].text for i in s.atoms] for s in segments(unit)]
    assert texts == [["USD 2.1 million", "Q2"], ["USD 2.6 million", "Q3"], ["USD 0.5 million"]]
    unit = analyse("华南区更高：2,240 万元，华北区为 1,980 万元。")
    segs = segments(unit)
    subject = [[unit.atoms[j].text for j in s.subjects] for s in segs]
    assert subject == [["华南区"], ["华南区"], ["华北区"]]  # "2,240 万元" belongs to 华南区


# --- derived numbers -------------------------------------------------------------------------------
@pytest.mark.parametrize("answer, docs, derivation", [
    ("第二季度 3,420 万元，第三季度 3,150 万元，下降 270 万元（约 7.9%）。", ["sales-002", "sales-003"],
     "270 万元 = 3.42e+07 - 3.15e+07; 7.9% = (3.42e+07 - 3.15e+07) / 3.42e+07"),
    # sales-008 states "New customers: 24": a presence in another unit is reported before any derivation
    ("It rose from CNY 19.8 million to CNY 24.6 million, up CNY 4.8 million (about 24%).", ["sales-008", "sales-009"],
     "CNY 4.8 million = 2.46e+07 - 1.98e+07; 24% is stated in the evidence as 24, without its unit"),
    ("从 2,240 万元增长到 2,710 万元，增加 470 万元（约 21%）。", ["sales-005", "sales-006"],
     "470 万元 = 2.71e+07 - 2.24e+07; 21% = (2.71e+07 - 2.24e+07) / 2.24e+07"),
])
def test_a_computed_difference_or_change_is_unverified_with_its_derivation(judge, answer, docs, derivation):
    (c,) = claims(judge, "销售额有什么变化？ How did revenue change?", answer, docs)
    assert c.verdict == "unverified", c.reason
    assert c.reason == f"derived, not stated: {derivation}"


def test_a_wrong_computation_is_not(judge):
    (c,) = claims(judge, "销售额有什么变化？", "第二季度 3,420 万元，第三季度 3,150 万元，下降 300 万元。",
                  ["sales-002", "sales-003"])
    assert c.verdict == "unsupported" and "300" in c.reason
    (c,) = claims(judge, "销售额有什么变化？", "第二季度 3,420 万元，第三季度 3,150 万元，下降约 15%。",
                  ["sales-002", "sales-003"])
    # the drop is 7.9%, but 460 万元 (a contract in sales-002) / 3,150 万元 is 14.6%: a ratio fits "约 15%" by
    # chance, so v10 cannot call it a contradiction (never "supported")
    assert c.verdict == "unverified" and "15% = 4.6e+06 / 3.15e+07 as a percentage" in c.reason, c.reason


# --- units with numbers ------------------------------------------------------------------------------
@pytest.mark.parametrize("answer, evidence, verdict", [
    ("有效期为 10,000 天。", "单笔最高 10,000 元。有效期见合同。", "unsupported"),  # stated in another unit
    ("The attachment limit is 500 MB.", "The attachment limit is 500 MB.", "supported"),
    ("重试间隔默认 500 毫秒。", "`retry.backoff_ms` - integer, default 500.", "supported"),  # the field names the unit
    ("默认每 5 分钟同步一次。", "同步间隔，单位为分钟，类型为整数，默认值 5。", "supported"),
    ("The card limit is CNY 30,000.", "月度额度：30,000", "supported"),  # a currency may go unsaid
])
def test_units_must_agree(judge, answer, evidence, verdict):
    (c,) = judge.judge("?", answer, [("kb", evidence)]).claims
    assert c.verdict == verdict, c.reason


@pytest.mark.parametrize("answer, evidence, target", [
    ("The attachment limit is 500MB.", "The attachment limit is 500.", "500MB"),
    ("The session times out after 500 seconds.", "The session times out after 500.", "500 seconds"),
    ("The default retry delay is 500 seconds.", "`retry.backoff_ms` - integer, default 500.", "500 seconds"),
])
def test_a_unit_against_a_bare_number_is_unverified(judge, answer, evidence, target):
    # a bare 500 in the evidence: v10 cannot tell 500MB (or seconds) from 500 of another unit the evidence may give
    # elsewhere (or in a field name it does not read, "backoff_ms"), so it does not call the unit wrong; never
    # "supported"
    (c,) = judge.judge("?", answer, [("kb", evidence)]).claims
    assert c.verdict == "unverified", c.reason
    assert c.reason == f"derived, not stated: {target} is stated in the evidence as 500, without its unit"


def test_real_attachment_and_retention_sentences(judge):
    ev = ["it-009"]  # 单封邮件附件总大小不超过 35MB ... 离职后邮箱保留 30 天
    assert claims(judge, "邮件附件多大？", "附件总大小不超过 35MB。", ev)[0].verdict == "supported"
    # a wrong unit, but "不超过 35 天" is a bound the retention period's 30 天 satisfies: v10 cannot call that a
    # contradiction (never "supported")
    (c,) = claims(judge, "邮件附件多大？", "附件总大小不超过 35 天。", ev)
    assert c.verdict == "unverified" and "the stated 30 天 satisfies the bound 35 天" in c.reason, c.reason
    assert claims(judge, "离职后邮箱保留多久？", "邮箱保留 30 天。", ev)[0].verdict == "supported"
    assert claims(judge, "离职后邮箱保留多久？", "邮箱保留 30GB。", ev)[0].verdict == "unsupported"


# --- negation cues --------------------------------------------------------------------------------------
FLIPS = [("fin-001", "连续出差超过 15 天的，须由部门负责人加签。"), ("fin-001", "住宿须取得酒店开具的增值税发票，发票抬头为公司全称。"),
         ("fin-001", "自驾出差须事先审批，按每公里 0.8 元标准补贴油耗及折旧。"), ("fin-001", "退票费用可以报销，须在报销单中说明原因。"),
         ("fin-001", "报销单须关联出差申请单号，并附发票、行程单等原始凭证。"),
         ("fin-001", "发票遗失的，须由本人填写遗失说明并经部门负责人签字确认。"),
         ("fin-001", "因展会、旅游旺季等客观原因导致住宿超标的，须经事业部总经理审批后方可按实际金额报销。"),
         ("fin-002", "单张电子发票金额超过 5,000 元的，除常规审批外还须经财务经理审批。"),
         ("fin-002", "电子发票须在开具之日起 90 天内提交报销。"), ("fin-004", "前往境外出差的，除上述审批外还须经部门副总裁审批。")]


@pytest.mark.parametrize("i", range(len(FLIPS)))
def test_must_flipped_to_need_not_is_caught(judge, i):
    doc, sentence = FLIPS[i]
    cue = ("无须", "不须", "不必", "无需")[i % 4]
    assert claims(judge, "报销制度怎么规定？", sentence, [doc])[0].verdict == "supported"
    (c,) = claims(judge, "报销制度怎么规定？", sentence.replace("须", cue, 1), [doc])
    assert c.verdict == "unsupported" and cue in c.reason


@pytest.mark.parametrize("answer, doc, verdict", [
    ("SecureTunnel is no longer the VPN client; LanLink replaced it.", "it-015", None),
    ("A code is never reused with a different meaning on the LX-200 series.", "prod-008", "supported"),
    ("A code is reused with a different meaning on the LX-200 series.", "prod-008", "unsupported"),
    ("Employees need to attach bank exchange slips.", "fin-006", "unsupported"),
    ("LX-300 is sold overseas.", "sales-011", "unsupported"),
    ("前一笔借款冲销完毕前，可以再次借款。", "fin-007", "unsupported"),
    ("逾期 30 天仍未冲销的，财务部有权从借款人当月工资中扣回。", "fin-007", "supported"),
    ("逾期 30 天仍冲销的，财务部有权从借款人当月工资中扣回。", "fin-007", "unsupported"),
])
def test_english_and_chinese_cues(judge, answer, doc, verdict):
    (c,) = claims(judge, "?", answer, [doc])
    if verdict is not None:
        assert c.verdict == verdict, c.reason


def test_never_and_no_longer_are_cues():
    from evalkit.text.lexicon import negation_cues

    assert negation_cues("It is no longer supported.") == ["no longer"]
    assert negation_cues("We never refund.") == ["never"]
    assert negation_cues("无须审批。") == ["无须"] and negation_cues("不须提交。") == ["不须"]
    assert negation_cues("须经部门负责人审批。") == []


# --- days of the month -------------------------------------------------------------------------------
@pytest.mark.parametrize("answer, verdict", [
    ("每月 25 日之前审批通过的报销单计入当月费用。", "supported"),
    # fin-012 also has 12 月 20 日 (December's cut-off): the day is stated, for another period, so v10 cannot
    # call it a contradiction; never "supported"
    ("每月 20 日之前审批通过的报销单计入当月费用。", "unverified"),
    ("每月25号前审批通过的报销单算当月费用。", "supported"),
])
def test_day_of_the_month_is_an_atom(judge, answer, verdict):
    (c,) = claims(judge, "报销单什么时候计入当月费用？", answer, ["fin-012"])
    assert c.verdict == verdict, c.reason


def test_payday_in_both_languages(judge):
    assert claims(judge, "发薪日？", "公司于每月 10 日发放上月工资。", ["fin-015"])[0].verdict == "supported"
    assert claims(judge, "发薪日？", "公司于每月 15 日发放上月工资。", ["fin-015"])[0].verdict == "unsupported"
    (c,) = claims(judge, "When is payday?", "Salaries are paid on the 15th of each month.", ["fin-015"])
    assert c.verdict == "unsupported" and "15th" in c.reason


# --- sentence-initial capitals -------------------------------------------------------------------------
@pytest.mark.parametrize("text, names", [
    ("Keep the original receipt for 30 days.", []),
    ("Hold RESET for 10 seconds.", ["RESET"]),
    ("Press the RESET button until the SYS LED blinks amber.", ["RESET", "SYS LED"]),
    ("Contact IT support at ext. 8899.", ["IT"]),
    ("Fathers get 15 calendar days of paternity leave.", []),
    ("East China had the highest revenue.", ["East China"]),
    ("Zhou Mingxuan leads East China.", ["Zhou Mingxuan", "East China"]),
    ("Its lead is Zhou Mingxuan (周明轩).", ["Zhou Mingxuan", "周明轩"]),
])
def test_sentence_initial_capitals_are_not_names(text, names):
    assert [a.text for a in extract_atoms(text) if a.kind == "entity"] == names


def test_an_imperative_before_a_full_name_is_not_part_of_it():
    """"Contact Maria Gomez": before, the name 'Contact Maria Gomez' was not in evidence that
    names Maria Gomez, so a correct answer was unsupported. A wrong person is no longer caught:
    its atom is 'Contact Peter Zhang', and reach finds its word 'contact' in the question, so the
    name counts as reached; v10 calls it unverified (low coverage), never supported."""
    from evalkit.judges.offline import OfflineJudge

    ev = [("pr", "Payroll questions go to Maria Gomez in the finance department.")]
    q = "Who should I contact about payroll?"
    (ok,) = OfflineJudge().judge(q, "Contact Maria Gomez in the payroll team.", ev).claims
    (bad,) = OfflineJudge().judge(q, "Contact Peter Zhang in the payroll team.", ev).claims
    (lab,) = OfflineJudge().judge("Where is the lab?", "Visit Acme Labs on the third floor.",
                                  [("l", "Acme Labs is on the third floor.")]).claims
    assert (ok.verdict, bad.verdict, lab.verdict) == ("supported", "unverified", "supported"), (ok, bad, lab)


def test_reference_answers_with_imperatives_are_supported(judge):
    q = "I got a suspicious email asking for my password. What should I do?"
    answer = ("Don't click or reply; report it with the Report Phish button or forward it to phish@lanxing.example. "
              "If you already entered your password, change it immediately and call the security hotline (ext. 8899).")
    docs = json.loads(next(line for line in (CORPUS.parent.parent / "demo_kb.jsonl").read_text(
        encoding="utf-8").splitlines() if '"q060"' in line))["relevant_doc_ids"]
    assert all(c.verdict != "unsupported" for c in claims(judge, q, answer, docs))
    (c,) = claims(judge, "How many days off do I get when my kid is born?",
                  "Fathers get 15 calendar days of paternity leave (within 6 months of the birth); "
                  "mothers get 158 days of maternity leave.", ["hr-003"])
    assert c.verdict == "supported", c.reason


# --- evidence in another language -------------------------------------------------------------------
def test_cross_lingual_claims_are_judged_by_their_atoms(judge):
    q = "What is the maximum validity of temporary production environment access?"
    (ok,) = claims(judge, q, "At most 8 hours per grant; access is revoked automatically when it expires.", ["sec-008"])
    (bad,) = claims(judge, q, "At most 12 hours per grant; access is revoked automatically when it expires.",
                    ["sec-008"])
    (words,) = claims(judge, q, "Access is revoked automatically when it expires.", ["sec-008"])
    assert ok.verdict == "supported" and "another language" in ok.reason
    # "at most 12 hours" is a bound the stated 8 小时 satisfies: v10 cannot call it a contradiction (never
    # "supported")
    assert bad.verdict == "unverified" and "the stated 8 小时 satisfies the bound 12 hours" in bad.reason, bad.reason
    assert words.verdict == "not_checkable"  # no atom, and words are not compared across languages


def test_every_verdict_names_the_passage_that_decided_it(judge):
    for c in claims(judge, "2025年第二季度华南区和华北区哪个销售额更高？",
                    "华南区更高：2,240 万元。华北区为 1,890 万元。", ["sales-005", "sales-008"]):
        assert c.evidence_id in ("sales-005", "sales-008") and c.evidence_ids
    (c,) = claims(judge, "?", "华南区为 3,420 万元。", ["sales-002", "sales-005"])
    assert c.verdict == "unverified" and re.search(r"in the evidence \(sales-002\) but not with entity '华南区'",
                                                    c.reason), c.reason


# --- found on the paraphrase set's dev split (benchmarks/data/judge_paraphrases.jsonl) ---------------
@pytest.mark.parametrize("text, expected", [
    ("-20°C ~ 60°C", [("number", -20.0, "c"), ("number", 60.0, "c")]),
    ("工作温度从零下 20 度到 60 度", [("number", -20.0, "deg"), ("number", 60.0, "deg")]),
    ("from 19.8 to 24.6 million", [("number", 19.8e6, None), ("number", 24.6e6, None)]),
    ("建议安装 2.2 到 2.8 米高", [("number", 2.2, "m"), ("number", 2.8, "m")]),
    ("hold it for 10-15 seconds", [("duration", 10.0, "s"), ("duration", 15.0, "s")]),
    ("roughly half a million dollars more", [("number", 5e5, "usd")]),
    ("LX-300 为 8 TOPS", [("number", 8.0, "tops")]),
    ("12–48V DC", [("number", 12.0, None), ("number", 48.0, None)]),
])
def test_signs_ranges_and_unit_words(text, expected):
    from evalkit.text.quantities import find_quantities

    assert [(q.kind, q.value, q.unit) for q in find_quantities(text)] == expected


def test_a_month_range_is_two_months():
    from evalkit.text.dates import find_dates

    assert [str(v) for d in find_dates("体检一般在 4 到 6 月") for v in d.values] == ["????-04", "????-06"]


@pytest.mark.parametrize("answer, verdict", [
    ("工作温度从零下 20 度到 60 度。", "supported"),
    ("-10°C ~ 60°C。", "unsupported"),   # the sign is part of the value
])
def test_negative_temperatures(judge, answer, verdict):
    assert claims(judge, "LX-200 的工作温度范围是多少？", answer, ["prod-001"])[0].verdict == verdict


def test_a_figure_from_a_report_on_another_period_is_unverified(judge):
    q = "How did North China revenue change from Q2 to Q3 2025?"
    (ok,) = claims(judge, q, "It went from CNY 19.8m in Q2 to CNY 24.6m in Q3.", ["sales-008", "sales-009"])
    (swapped,) = claims(judge, q, "It fell from CNY 24.6 million in Q2 to CNY 19.8 million in Q3.",
                        ["sales-008", "sales-009"])
    assert ok.verdict == "supported", ok.reason
    # each figure is the evidence's, for the other quarter: v10 cannot call that a contradiction (never "supported")
    assert swapped.verdict == "unverified" and "another period" in swapped.reason


def test_an_unknown_unit_word_is_a_unit(judge):
    q = "LX-300 和 Tessary T300 的 AI 算力相比如何？"
    assert claims(judge, q, "LX-300 为 8 TOPS，比 T300 高。", ["prod-003", "sup-010"])[0].verdict == "unsupported"
    assert claims(judge, q, "LX-300 为 4 TOPS，T300 为 6 TOPS。", ["prod-003", "sup-010"])[0].verdict == "supported"


def test_half_a_million_is_a_derived_difference(judge):
    (c,) = claims(judge, "Compare overseas revenue in Q2 and Q3 2025.",
                  "It grew from USD 2.1 million in Q2 to USD 2.6 million in Q3, roughly half a million dollars more.",
                  ["sales-010", "sales-011"])
    assert c.verdict == "unverified" and "half a million dollars = 2.6e+06 - 2.1e+06" in c.reason, c.reason


# --- found on the paraphrase set's first test split (then used as development data) ---------------
@pytest.mark.parametrize("text, expected", [
    ("Team tenants can make 600 requests a minute.", [("number", 600.0, None)]),  # a rate, not "a minute"
    ("You can work remotely two days a week.", [("duration", 172800.0, "d")]),
    ("默认 90 秒，也就是一分半钟。", [("duration", 90.0, "s"), ("duration", 90.0, "min")]),
    ("事后 1 个工作日内补充说明", [("duration", 86400.0, "wd")]),
])
def test_rates_working_days_and_half_minutes(text, expected):
    from evalkit.text.quantities import find_quantities

    assert [(q.kind, q.value, q.unit) for q in find_quantities(text)] == expected


def test_a_working_day_is_not_24_hours(judge):
    q = "What is the maximum validity of temporary production environment access?"
    assert claims(judge, q, "Up to 24 hours per grant.", ["sec-008"])[0].verdict == "unsupported"


def test_degrees_and_glued_prepositions(judge):
    q = "LX-300 用于人数统计时推荐安装多高？"
    assert claims(judge, q, "建议装在 2.2 到 2.8 米高，镜头朝下倾斜 30 到 45 度。", ["prod-019"])[0].verdict == "supported"
    (c,) = claims(judge, "LX-300 的触摸屏是哪家供应商提供的？", "触摸屏 MS-7T 由澄屏光电（厦门）供应。",
                  ["prod-003", "sup-005"])
    assert c.verdict == "supported", c.reason


@pytest.mark.parametrize("answer, doc, verdict", [
    ("NPU 模型没能加载，模型文件的校验和对不上。", "prod-009", "supported"),    # 没能加载 = 加载失败
    ("要装 LanLink，旧的 SecureTunnel 已经不能用了。", "it-004", "supported"),  # 已停用
    ("36 months from the date of shipment, and it covers damage from lightning.", "prod-012", "unsupported"),
])
def test_words_that_negate_by_meaning(judge, answer, doc, verdict):
    (c,) = claims(judge, "?", answer, [doc])
    assert c.verdict == verdict, c.reason


@pytest.mark.parametrize("text, expected", [
    # judge v16 (found on the demo-document held_out split): a count "in a year" is a count per year, no duration
    ("The first 5 sick days in a year are paid at full salary.", [("number", 5.0, None)]),
    ("3 refunds in a month", [("number", 3.0, None)]),
])
def test_a_count_in_a_unit_of_time_is_a_rate(text, expected):
    assert [(a.kind, a.quantity.value, a.quantity.unit) for a in extract_atoms(text) if a.quantity] == expected
    # without a count before it, "in a year" is a time span
    assert [a.kind for a in extract_atoms("I will finish it in a year.")] == ["duration"]
