"""The offline judge on hand-written multi-document answers (tests/judges/data/judge_multidoc.jsonl):
focused regressions for what that set found, and the gate on its held-out split.

Every case here carries its own evidence (no corpus): a question, 1-3 passages and an answer,
as a RAG user would pass them to ``OfflineJudge.judge``.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalkit.judges.scoring import JudgeCase, load_cases, predict, report_rows
from evalkit.judges.quantities import find_quantities
from evalkit.judges.values import extract_atoms
from judging import verdicts


# --- negation ------------------------------------------------------------------------------------
DRUG = "截至2024年6月，该药物尚未获得国家药监局批准上市，目前处于三期临床试验阶段。"


def test_shang_wei_is_a_negation_cue(judge):
    # 尚未 ("not yet") was not a cue: an answer that drops it passed
    assert verdicts(judge, "该药物是否已获批上市？", "该药物已于2024年6月获得国家药监局批准上市。", DRUG) == ["unsupported"]
    assert verdicts(judge, "该药物是否已获批上市？", "截至2024年6月，该药物尚未获批上市。", DRUG) == ["supported"]


def test_the_cue_word_is_not_content_of_the_negated_clause(judge):
    # "longer" of "no longer" counted as a content word, so "still supports Android 9" overlapped too little
    ev = "Starting with version 6.0, released on 4 September 2024, the app no longer supports Android 9."
    assert verdicts(judge, "Does the app still support Android 9?", "Yes, version 6.0 still supports Android 9.",
                    ev) == ["unsupported"]


# --- numbers ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("claim, evidence", [
    ("约八成用户表示满意。", "调查显示，80.4% 的受访用户表示满意。"),           # 成 counts tenths
    ("Roughly 38% of revenue came from Europe.", "Europe accounted for 37.6% of revenue."),  # a hedged whole number
    ("一期投资约2千万元。", "一期投资 1,980 万元。"),                          # 千万 as one scale word
])
def test_hedged_and_rescaled_numbers_are_the_same_value(judge, claim, evidence):
    assert verdicts(judge, "?", claim, evidence) == ["supported"]


@pytest.mark.parametrize("claim, evidence", [
    ("约九成用户表示满意。", "调查显示，80.4% 的受访用户表示满意。"),
    ("Roughly 47% of revenue came from Europe.", "Europe accounted for 37.6% of revenue."),
    ("一期投资约3千万元。", "一期投资 1,980 万元。"),
])
def test_a_hedge_does_not_excuse_another_number(judge, claim, evidence):
    assert verdicts(judge, "?", claim, evidence) == ["unsupported"]


def test_and_or_join_a_range_only_when_ascending():
    # "21,000 or 25%" was read as a range of percentages (21,000%)
    assert [(q.value, q.unit) for q in find_quantities("an increase of 21,000 or 25%")] == [(21000, None), (25, "%")]
    assert [q.unit for q in find_quantities("5 or 6 days")] == ["d", "d"]


def test_a_count_of_units_is_not_a_year(judge):
    # 1800 was a year both in "1800 (seconds)" and in "1800 minutes", so the wrong unit passed
    assert [a.kind for a in extract_atoms("session_timeout: 1800 (seconds).") if a.kind != "code"] == ["number"]
    assert [a.kind for a in extract_atoms("after 1800 minutes")] == ["duration"]
    ev = "session_timeout: 1800 (seconds). Users are logged out after this period of inactivity."
    q = "How long is the session timeout?"
    assert verdicts(judge, q, "The session times out after 30 minutes of inactivity.", ev) == ["supported"]
    assert verdicts(judge, q, "The session times out after 1800 minutes of inactivity.", ev) == ["unsupported"]


# --- subjects across documents ---------------------------------------------------------------------
def test_a_relative_clause_is_an_aside_about_the_name_before_it(judge):
    # the 312 stores belong to Halvorsen Retail, not to the aside's year ("not with date 2021" before)
    q = "How many stores does the retailer that bought Fenwick's operate?"
    deal, stores = ("Fenwick's was bought by Halvorsen Retail in 2021.",
                    "Halvorsen Retail operates 312 stores across Scandinavia and employs 9,400 people.")
    assert verdicts(judge, q, "Halvorsen Retail, which bought Fenwick's in 2021, operates 312 stores.",
                    deal, stores) == ["supported"]
    assert verdicts(judge, q, "Halvorsen Retail, which bought Fenwick's in 2021, operates 321 stores.",
                    deal, stores) == ["unsupported"]


SALES = ("2024年第三季度华南区销售报告：华南区销售额为 2,240 万元，同比增长 8%。",
         "华北区第三季度销售额 1,980 万元，环比下降 3%。")


@pytest.mark.parametrize("answer, verdict", [
    ("华南区销售额为 2,240 万元，华北区为 1,980 万元，华南区更高。", "supported"),
    ("华南区 2,240 万元比华北区 1,980 万元高 260 万元。", "supported"),   # 比 between two values, and a derived gap
    ("华北区销售额为 2,240 万元，华南区为 1,980 万元。", "unsupported"),    # swapped: each name is in the question
])
def test_a_comparison_binds_the_names_the_question_gave(judge, answer, verdict):
    assert verdicts(judge, "2024年第三季度华南区和华北区哪个销售额更高？", answer, *SALES) == [verdict]


def test_one_name_from_the_question_is_context_in_a_multi_hop_answer(judge):
    # 成都 -> 二线城市 (one passage) -> 550 元 (another): a single name the question gave binds nothing
    tiers = "二线城市：杭州、南京、苏州、成都、武汉、西安。"
    caps = "住宿费标准：一线城市每晚 750 元，二线城市每晚 550 元，其他城市每晚 400 元。"
    assert verdicts(judge, "去成都出差，每晚住宿标准是多少？", "成都每晚住宿 550 元（二线城市）。", tiers, caps) == ["supported"]


def test_than_separates_the_two_sides_of_a_comparison(judge):
    q = "Which city had more visitors in 2023, Nara or Kobe?"
    ev = ("Nara welcomed 53.7 million visitors in 2023, according to the city tourism bureau.",
          "Kobe recorded 41.2 million tourist visits in 2023.")
    assert verdicts(judge, q, "In 2023 Nara had more visitors (53.7 million) than Kobe (41.2 million).", *ev) \
        == ["supported"]
    assert verdicts(judge, q, "In 2023 Kobe had more visitors (53.7 million) than Nara (41.2 million).", *ev) \
        == ["unsupported"]


# --- numbers an answer computes from the evidence ------------------------------------------------------
PROFIT = ("第二季度净利润 3,420 万元。", "第三季度净利润为 3,150 万元，主要受原材料涨价影响。")


@pytest.mark.parametrize("answer, verdict", [
    ("第三季度净利润比第二季度少 270 万元，下降约 7.9%。", "supported"),  # operands only in the evidence
    ("第三季度比第二季度少 370 万元。", "unsupported"),
    ("第三季度净利润比第二季度少 270 万元，下降约 9.7%。", "unsupported"),
])
def test_a_gap_of_two_evidence_amounts_is_derived(judge, answer, verdict):
    assert verdicts(judge, "第二季度和第三季度的净利润相差多少？", answer, *PROFIT) == [verdict]


def test_durations_and_temperatures_in_the_evidence_are_not_operands(judge):
    # 12 months = 36 - 24 months and 70°C = 60°C - (-10°C) are not what the answers meant
    ev = "Water damage is covered for 24 months. The extended plan covers 36 months. It works from -10°C to 60°C."
    assert verdicts(judge, "?", "Water damage is covered for 12 months.", ev) == ["unsupported"]
    assert verdicts(judge, "?", "It works from -10°C to 70°C.", ev) == ["unsupported"]


# --- the held-out split ------------------------------------------------------------------------------
DATA = Path(__file__).resolve().parent / "data" / "judge_multidoc.jsonl"


def _split(name: str) -> list[JudgeCase]:
    split = {json.loads(x)["id"]: json.loads(x)["split"] for x in DATA.read_text(encoding="utf-8").splitlines()}
    return [c for c in load_cases(DATA) if split[c.id] == name]


def test_the_case_file_is_well_formed():
    rows = [json.loads(x) for x in DATA.read_text(encoding="utf-8").splitlines()]
    assert len(rows) >= 200 and len({r["id"] for r in rows}) == len(rows)
    assert {r["split"] for r in rows} == {"dev", "test"}
    for s in ("dev", "test"):  # a scenario (its evidence) lives in one split only
        assert not {r["scenario"] for r in rows if r["split"] == s} & {r["scenario"] for r in rows if r["split"] != s}
    for lang in ("en", "zh"):
        assert sum(r["lang"] == lang for r in rows) >= 100


def test_held_out_split_meets_the_targets_reached(judge, capsys):
    """judge_multidoc's test split (55 zh, 59 en cases; never tuned on). Before this work (offline/v6)
    it had 6/56 false alarms (en 4/28, zh 2/28); now 4/56 (7.1%): the <= 5% target is NOT met on this
    split (dev: 1/51). Gated at what was reached; the remaining four are listed in docs/judges.md (Limits)."""
    rows = report_rows(predict(judge, _split("test")))
    with capsys.disabled():
        print("\njudge_multidoc test split, recall:", {k: round(v.recall or 0, 2) for k, v in rows.items()
                                                       if k.startswith("type=")})
    # the present-in-evidence swap is the documented blind spot: measured, not gated, and kept out
    # of the overall figures below
    preds = [p for p in predict(judge, _split("test")) if p.case.error_type != "entity_present"]
    overall = report_rows(preds)["overall"]
    assert overall.false_alarm <= 4 / 56 + 1e-9 and overall.precision >= 0.90
    assert overall.balanced_accuracy >= 0.95
    for lang in ("en", "zh"):
        assert report_rows(preds)[f"lang={lang}"].false_alarm <= 3 / 28 + 1e-9
    for t in ("changed_number", "changed_date", "entity_absent", "extra_sentence"):
        assert rows[f"type={t}"].recall >= 0.90, t
    assert rows["type=negation,lang=en"].recall >= 0.80 and rows["type=negation,lang=zh"].recall >= 0.70


def test_dev_split_meets_the_five_percent_target(judge):
    preds = [p for p in predict(judge, _split("dev")) if p.case.error_type != "entity_present"]
    overall = report_rows(preds)["overall"]
    assert overall.false_alarm <= 0.05 and overall.recall >= 0.95
