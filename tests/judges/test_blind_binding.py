"""The offline judge on dates, codes and the binding of values to their subjects, as answers
that combine documents write them (the causes of false alarms on the blind multi-document
set): fiscal years, ordinal and day-first dates, a passage's year carried to its days, day
ranges, quoted spans, demonyms, parenthetical asides and an event's date in another clause.
Each correct wording must pass; a near miss (another year, day, value or name) must not."""
from __future__ import annotations

from judging import verdicts_with_reasons as verdicts

from evalkit.text.dates import find_dates
from evalkit.text.values import extract_atoms, name_forms


def supported(judge, question, answer, evidence):
    return all(v == "supported" for v, _ in verdicts(judge, question, answer, evidence))


# --- fiscal years ----------------------------------------------------------------------------------
def test_a_fiscal_year_is_a_year_not_a_code():
    for text in ("FY2024", "FY 2024", "FY24", "2024财年", "2024财年度"):
        (a,) = [a for a in extract_atoms(f"Sales in {text} were strong") if a.kind != "entity"] \
            if not text.startswith("2") else [a for a in extract_atoms(f"{text}销售强劲") if a.kind == "date"]
        assert a.kind == "date" and a.dates[0].year == 2024, text
    assert [a.kind for a in extract_atoms("error FY2024X")] == ["code"]  # a code that merely starts with FY


def test_fiscal_year_answers_match_fiscal_year_evidence(judge):
    ev = [("ar", "Brightwater Ltd reported revenue of $850 million for fiscal year 2024.")]
    q = "What was Brightwater's revenue?"
    assert supported(judge, q, "Brightwater earned $850 million in FY2024.", ev)
    assert supported(judge, q, "Brightwater earned $850 million in FY24.", ev)
    assert not supported(judge, q, "Brightwater earned $850 million in FY2023.", ev)
    assert not supported(judge, q, "Brightwater earned $950 million in FY2024.", ev)


# --- day-first and ordinal dates, day ranges ---------------------------------------------------------
def test_ordinal_and_day_first_dates(judge):
    ev = [("p1", "The fair opens in Ghent on 14 March 2026."),
          ("p2", "It then moves to Liège for sessions from 18 to 20 March 2026.")]
    q = "Where and when is the fair held?"
    ok = "It opens in Ghent on 14/03/2026 and runs in Liège from the 18th to the 20th of March."
    assert supported(judge, q, ok, ev)
    assert not supported(judge, q, ok.replace("the 20th", "the 21st"), ev)
    assert not supported(judge, q, ok.replace("14/03/2026", "15/03/2026"), ev)


def test_a_chinese_day_range_may_leave_out_the_first_day_mark():
    got = [str(v) for d in find_dates("2026年5月8—9日") for v in d.values]
    assert got == ["2026-05-08", "2026-05-09"]
    got = [str(v) for d in find_dates("5月8日至9日") for v in d.values]
    assert got == ["????-05-08", "????-05-09"]


def test_a_passage_year_carries_to_its_days(judge):
    ev = [("n1", "2026年春季书展首站于5月8日在扬州开幕。"), ("n2", "2026年春季书展第二站将于5月15日至16日在镇江举行。")]
    q = "2026年春季书展在哪些城市举办？"
    assert supported(judge, q, "2026年5月8日扬州开幕，2026年5月15—16日镇江站。", ev)
    assert not supported(judge, q, "2025年5月8日扬州开幕，2026年5月15—16日镇江站。", ev)
    assert not supported(judge, q, "2026年5月8日扬州开幕，2026年5月15—17日镇江站。", ev)
    # two years in a passage: none carries
    ev2 = [("n1", "书展2025年在苏州举办，2026年首站于5月8日在扬州开幕。")]
    assert not supported(judge, q, "2025年5月8日扬州开幕。", ev2)


# --- quoted spans, demonyms --------------------------------------------------------------------------
def test_a_quoted_span_is_found_in_the_evidence_text(judge):
    ev = [("hr", "员工累计工作已满5年不满15年的，每年可享受带薪病假12天。")]
    q = "工龄7年有几天带薪病假？"
    assert supported(judge, q, "工龄7年属于“满5年不满15年”这一档，每年有12天带薪病假。", ev)
    assert not supported(judge, q, "工龄7年属于“满5年不满20年”这一档，每年有12天带薪病假。", ev)


def test_a_demonym_states_its_place():
    assert "european" in name_forms("europe") and "china" in name_forms("chinese")
    assert "german" in name_forms("germany") and "italian" in name_forms("italy")
    assert "market" not in name_forms("mark")


def test_demonym_evidence_binds_the_value_to_the_place(judge):
    ev = [("seg", "In 2024, Asia accounted for 27% of Corvan Foods' net sales."),
          ("pr", "Asian sales rose 9% year over year in 2024.")]
    q = "Which region gave Corvan Foods the most sales in 2024, and how did sales there change?"
    ok = "Corvan Foods made 27% of its 2024 sales in Asia, where sales were up 9% year on year."
    assert supported(judge, q, ok, ev)
    assert not supported(judge, q, ok.replace("9%", "11%"), ev)
    assert not supported(judge, q, "Africa made up 27% of Corvan Foods' 2024 sales.", ev)


# --- asides and clauses ------------------------------------------------------------------------------
def test_a_parenthetical_aside_is_not_the_subject_of_the_values_outside_it(judge):
    ev = [("about", "Fernhill was founded in 2009 by Tomas Lind, who served as its CTO until 2016."),
          ("bio", "Tomas Lind earned a degree in physics from Uppsala University in 2001.")]
    q = "Where did the founder of Fernhill study?"
    ok = "Tomas Lind (Fernhill founder, CTO until 2016) holds a 2001 physics degree from Uppsala University."
    assert supported(judge, q, ok, ev)
    assert not supported(judge, q, ok.replace("2001", "2003"), ev)
    assert not supported(judge, q, ok.replace("Uppsala", "Lund"), ev)
    zh = [("gg", "远航物流于2024年3月发布公告，董事会选举林若溪为公司总经理。"),
          ("jl", "林若溪曾任海川快运运营总监，负责华东区域业务长达八年。")]
    q = "远航物流现任总经理此前在哪家公司任职？"
    assert supported(judge, q, "林若溪（2024年3月出任远航物流总经理）曾在海川快运任运营总监，负责华东区域业务八年。", zh)
    assert not supported(judge, q, "林若溪（2024年3月出任远航物流总经理）曾在海川快运任运营总监，负责华东区域业务九年。", zh)


def test_an_event_day_does_not_bind_the_next_clause(judge):
    ev = [("news", "江宁至溧水城际铁路（简称“宁溧城际”）于2025年6月30日正式开通运营，全长72公里。"),
          ("gg", "开通初期，宁溧城际每日开行列车18对，两地间最快运行时间为31分钟。")]
    q = "宁溧城际什么时候开通？最快要多长时间？"
    assert supported(judge, q, "宁溧城际于2025年6月30日开通，两地最快31分钟可达。", ev)
    assert supported(judge, q, "2025年6月30日开通，全长72公里，最快运行时间31分钟，每天开行18对列车。", ev)
    assert not supported(judge, q, "宁溧城际于2025年6月20日开通，两地最快31分钟可达。", ev)
    assert not supported(judge, q, "宁溧城际于2025年6月30日开通，两地最快35分钟可达。", ev)


def test_a_clause_that_only_sets_a_time_still_binds_the_next_one(judge):
    ev = [("q2", "截至2025年6月30日，青松银行不良贷款率为1.21%。"),
          ("q1", "截至2025年3月31日，青松银行不良贷款率为1.35%。")]
    q = "青松银行的不良贷款率是多少？"
    assert supported(judge, q, "截至2025年6月30日，青松银行不良贷款率为1.21%。", ev)
    assert not supported(judge, q, "截至2025年6月30日，不良贷款率为1.35%。", ev)


def test_a_name_that_qualifies_an_appositive_is_not_the_subject_of_its_values(judge):
    ev = [("prod", "The K7 drill is manufactured by Ardent Tools."),
          ("corp-1", "Ardent Tools is a subsidiary of Morrow Holdings, which bought it in 2018."),
          ("corp-2", "Ardent Tools employs 840 people at its plant in Leeds.")]
    q = "How many people work for the maker of the K7 drill?"
    ok = "The K7 is made by Ardent Tools, a Morrow Holdings subsidiary with 840 employees."
    assert supported(judge, q, ok, ev)
    assert not supported(judge, q, ok.replace("840", "480"), ev)
    assert not supported(judge, q, ok.replace("Morrow Holdings", "Kessel Group"), ev)
