"""The offline judge on hand-written multi-document answers (tests/judges/data/judge_multidoc.jsonl):
focused regressions for what that set found, and the gate on its held-out split.

Every case here carries its own evidence (no corpus): a question, 1-3 passages and an answer,
as a RAG user would pass them to ``OfflineJudge.judge``.
"""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from judging import judged, outcome, verdicts

from evalkit.judges.scoring import JudgeCase, load_cases, predict, report_rows
from evalkit.text.quantities import find_quantities
from evalkit.text.values import extract_atoms

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
    # the unit of 1800 is in brackets, "(seconds)", which the reader does not attach to it: a bare 1800, so v10
    # cannot tell 1800 minutes from 1800 of another unit and does not call it wrong; never "supported"
    ((verdict, reason),) = judged(judge, q, "The session times out after 1800 minutes of inactivity.", ev)
    assert verdict == "unverified" and reason == \
        "derived, not stated: 1800 minutes is stated in the evidence as 1,800, without its unit", reason


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


@pytest.mark.parametrize("answer, verdict, why", [
    ("华南区销售额为 2,240 万元，华北区为 1,980 万元，华南区更高。", "supported", "grounded"),
    # 比 between two values, and a computed gap: unverified, with its derivation
    ("华南区 2,240 万元比华北区 1,980 万元高 260 万元。", "unverified", "260 万元 = 2.24e+07 - 1.98e+07"),
    # swapped: each name is in the question, and each value is the evidence's for the other region, so v10
    # cannot call it a contradiction (never "supported")
    ("华北区销售额为 2,240 万元，华南区为 1,980 万元。", "unverified",
     "1,980 万元 is in the evidence (doc-2) but not with entity '华南区'"),
])
def test_a_comparison_binds_the_names_the_question_gave(judge, answer, verdict, why):
    ((got, reason),) = judged(judge, "2024年第三季度华南区和华北区哪个销售额更高？", answer, *SALES)
    assert got == verdict and why in reason, reason


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
    # swapped: each figure is the evidence's for the other city; v10-v14 could not call it a contradiction (it was
    # unverified); v15 reads the question's choice, which the evidence's figures decide for Nara (judges/choices.py)
    ((verdict, reason),) = judged(judge, q, "In 2023 Kobe had more visitors (53.7 million) than Nara (41.2 million).",
                                  *ev)
    assert verdict == "unsupported" and reason == ("the evidence decides the choice against it: Nara 53.7 million, "
                                                   "Kobe 41.2 million, so the answer is Nara")


# --- numbers an answer computes from the evidence ------------------------------------------------------
PROFIT = ("第二季度净利润 3,420 万元。", "第三季度净利润为 3,150 万元，主要受原材料涨价影响。")


@pytest.mark.parametrize("answer, verdict, why", [
    # operands only in the evidence: unverified, with the derivation (each value of the answer is an operand of
    # the other's: 270 万元 is 7.9% of 3,420 万元)
    ("第三季度净利润比第二季度少 270 万元，下降约 7.9%。", "unverified",
     "270 万元 = 3.42e+07 x 7.9%; 7.9% = 2.7e+06 / 3.42e+07 as a percentage"),
    ("第三季度比第二季度少 370 万元。", "unsupported", "number 370 万元 not in evidence"),
    ("第三季度净利润比第二季度少 270 万元，下降约 9.7%。", "unsupported", "number 9.7% not in evidence"),
])
def test_a_gap_of_two_evidence_amounts_is_derived(judge, answer, verdict, why):
    ((got, reason),) = judged(judge, "第二季度和第三季度的净利润相差多少？", answer, *PROFIT)
    assert got == verdict and why in reason, reason


def test_a_wrong_duration_a_difference_fits_is_unverified_a_wrong_temperature_is_not(judge):
    # 12 months = 36 - 24 months is not what the answer meant, but v10 takes two values of the evidence in the
    # target's unit as operands of a difference: it cannot call this wrong value a contradiction (never
    # "supported")
    ev = "Water damage is covered for 24 months. The extended plan covers 36 months. It works from -10°C to 60°C."
    ((verdict, reason),) = judged(judge, "?", "Water damage is covered for 12 months.", ev)
    assert verdict == "unverified" and "12 months = 9.46728e+07 - 6.31152e+07" in reason, reason
    # temperatures are never operands (60°C - (-10°C) is no temperature): 70°C is absent
    ((verdict, reason),) = judged(judge, "?", "It works from -10°C to 70°C.", ev)
    assert verdict == "unsupported" and "number 70°C not in evidence" in reason, reason


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


def _tally(preds) -> Counter:
    """(error type, or "correct", and the answer's outcome: see ``judging.outcome``) -> number of cases."""
    return Counter((p.case.error_type or "correct", outcome(p.result)) for p in preds)


def _passed(tally: Counter, error_type: str) -> int:
    """Planted errors of one type the judge let through (supported, or nothing checkable)."""
    return tally[error_type, "supported"] + tally[error_type, "not_checkable"]


# per error type: (at least this many unsupported, at most this many passed); the others are unverified.
# What v10 reached; entity_present (the present-in-evidence swap) is the documented blind spot: measured, not gated
TEST_REACHED = {"changed_number": (25, 0), "changed_date": (9, 0), "entity_absent": (4, 0), "extra_sentence": (3, 0),
                "negation": (3, 0)}
DEV_REACHED = {"changed_number": (20, 0), "changed_date": (5, 0), "entity_absent": (4, 1), "negation": (6, 0)}


def test_held_out_split_meets_the_targets_reached(judge, capsys):
    """judge_multidoc's test split (55 zh, 59 en cases; never tuned on). False alarms: 6/56 before this work
    (offline/v6), 4/56 with v9; v10 marks none of the 56 correct answers unsupported (2 unverified). Of the 54
    planted errors (the 4 present-in-evidence swaps left out) v10 calls 44 unsupported and 10 unverified (6 made-up
    names a word of which the evidence states, zh-suppliers-2's one-character name too short to look for,
    en-carryover-2's negation with no negated counterpart in the evidence, 2 claims of low coverage): none passes. Gated at what v10 reached."""
    preds = predict(judge, _split("test"))
    rows, tally = report_rows(preds), _tally(preds)
    with capsys.disabled():
        print("\njudge_multidoc test split, recall:", {k: round(v.recall or 0, 2) for k, v in rows.items()
                                                       if k.startswith("type=")}, "outcomes:", dict(sorted(tally.items())))
    assert sum(n for (t, _), n in tally.items() if t == "correct") == 56
    assert sum(n for (t, _), n in tally.items() if t not in ("correct", "entity_present")) == 54
    assert tally["correct", "unsupported"] == 0 and tally["correct", "unverified"] <= 2
    assert sum(n for (t, v), n in tally.items() if t not in ("correct", "entity_present") and v == "unverified") <= 10
    for t, (unsupported, passed) in TEST_REACHED.items():
        assert tally[t, "unsupported"] >= unsupported and _passed(tally, t) <= passed, (t, tally)


def test_dev_split_meets_the_five_percent_false_alarm_target(judge):
    """The dev split: no correct answer unsupported (target: at most 5%), 5 of 51 unverified. The recall target
    (0.95) is no longer met: of 46 planted errors (swaps left out) v10 calls 35 unsupported and 10 unverified (5
    made-up names a word of which the evidence states; 4 changed numbers: a unit against a bare number the evidence
    states, en-timeout-2, en-attach-2, zh-attach-2, and zh-stores-2's 9% = 15% - 6%; en-bridge-2's negation with no
    negated counterpart), and lets one through (zh-x9-3, a name v9 missed too)."""
    tally = _tally(predict(judge, _split("dev")))
    assert sum(n for (t, _), n in tally.items() if t == "correct") == 51
    assert tally["correct", "unsupported"] == 0  # the target allows 2 (5%)
    assert tally["correct", "unverified"] <= 5
    assert sum(n for (t, v), n in tally.items() if t not in ("correct", "entity_present") and v == "unverified") <= 10
    for t, (unsupported, passed) in DEV_REACHED.items():
        assert tally[t, "unsupported"] >= unsupported and _passed(tally, t) <= passed, (t, tally)
