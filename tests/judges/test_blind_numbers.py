"""Numbers, units and derived values the blind multi-document set (judge_multidoc_blind.jsonl) found
the offline judge misread: compound durations, mass conversions, list markers, shares of amounts,
fraction words, counts of listed items, bounds ("不到一小时", "四亿多元") and gaps between dates.

Each mechanism is tested on wordings of its own (not the set's), with a correct answer and a
near miss (a wrong conversion, count, bound or gap). Since judge v10 a value the answer computes
is never ``supported``: the correct answer must be ``unverified`` with the derivation named in its
reason; the near miss must be ``unsupported``, or ``unverified`` where a derivation fits it too
(commented), never ``supported``.
"""
from __future__ import annotations

import pytest
from judging import judged, read, verdicts


# --- reading -------------------------------------------------------------------------------------
def test_compound_durations_are_one_value():
    assert read("up to 2 hours 15 minutes") == [("duration", 8100.0, "h")]
    assert read("about 3 h 30 min") == [("duration", 12600.0, "h")]
    assert read("全程1小时20分钟") == [("duration", 4800.0, "h")]
    # two durations side by side stay two ("45 minutes, 30 minutes less")
    assert len(read("45 minutes, 30 minutes less than the other")) == 2


def test_masses_convert():
    assert read("0.5 g") == read("500 mg") == [("number", 0.5, "g")]
    assert read("2 kg") == [("number", 2000.0, "g")]
    assert read("5G network") == [("number", 5.0, None)]  # not grams


def test_list_markers_are_not_values():
    assert read("Send (1) the form and (2) a copy of your ID.") == []
    assert read("1. Fill in the form\n2. Pay the fee") == []
    assert read("rooms (3) in total") == [("number", 3.0, None)]  # a lone number in brackets is a value


def test_fraction_words_are_shares():
    assert read("a third of the staff") == [("number", 33.333333, "%")]
    assert read("three-quarters") == [("number", 75.0, "%")]
    assert read("五分之二的用户") == [("number", 40.0, "%")]


# --- judging -------------------------------------------------------------------------------------
KETTLE = ("The K2 kettle boils 1.7 litres in 4 minutes.", "The K1 kettle takes 135 minutes to recharge its base.",
          "The K3 base recharges in 90 minutes.")


def test_compound_duration_and_difference(judge):
    q = "How long do the K1 and K3 bases take to recharge?"
    ok = "The K1 base needs 2 hours 15 minutes, 45 minutes more than the K3's 90 minutes."
    ((verdict, reason),) = judged(judge, q, ok, *KETTLE[1:])  # 2 h 15 min = 135 minutes, stated
    assert verdict == "unverified" and "45 minutes = 8,100 - 5,400" in reason, reason
    assert verdicts(judge, q, ok.replace("45 minutes more", "55 minutes more"), *KETTLE[1:]) == ["unsupported"]
    assert verdicts(judge, q, ok.replace("2 hours 15", "2 hours 25"), *KETTLE[1:]) == ["unsupported"]


DOSE = "Take one 250 mg capsule every 6 hours. The maximum daily dose is 1,000 mg."


def test_converted_mass_and_count_of_tablets(judge):
    q = "What is the daily maximum?"
    ((verdict, reason),) = judged(judge, q, "At most 1 g a day, i.e. four 250 mg capsules.", DOSE)
    assert verdict == "unverified" and "four = 1 / 0.25" in reason, reason  # 1 g = 1,000 mg is stated
    # a wrong conversion, but "at most 1.5 g" is a bound the stated 1,000 mg satisfies: v10 cannot call that a
    # contradiction (never "supported")
    ((verdict, reason),) = judged(judge, q, "At most 1.5 g a day.", DOSE)
    assert verdict == "unverified" and "the stated 1,000 mg satisfies the bound 1.5 g" in reason, reason
    assert verdicts(judge, q, "At most 1 g a day, i.e. five 250 mg capsules.", DOSE) == ["unsupported"]


def test_count_times_amount_from_the_evidence(judge):
    leaflet = "成人一次2粒（每粒0.3克），一日2次，每日不超过4粒。"
    ((verdict, reason),) = judged(judge, "每天最多吃多少？", "每日最多4粒，即1.2克。", leaflet)
    assert verdict == "unverified" and "1.2克 = 0.3 x 4" in reason, reason
    assert verdicts(judge, "每天最多吃多少？", "每日最多4粒，即1.6克。", leaflet) == ["unsupported"]


def test_share_of_an_amount(judge):
    report = "In 2024, Asia accounted for 24% of Corvel's revenue of $8.0 billion."
    q = "How much revenue came from Asia?"
    ((verdict, reason),) = judged(judge, q, "Asia brought in 24% of revenue (about $1.9 billion of $8.0 billion).",
                                  report)
    assert verdict == "unverified" and "$1.9 billion = 8e+09 x 24%" in reason, reason
    assert verdicts(judge, q, "Asia brought in 24% of revenue (about $2.6 billion of $8.0 billion).", report) == [
        "unsupported"]


def test_hedged_fraction_word(judge):
    report = "In 2024, Asia accounted for 24% of Corvel's revenue of $8.0 billion."
    q = "What share of revenue came from Asia?"
    assert verdicts(judge, q, "Nearly a quarter of Corvel's revenue came from Asia (24%).", report) == ["supported"]
    assert verdicts(judge, q, "Nearly a third of Corvel's revenue came from Asia (24%).", report) == ["unsupported"]


def test_count_of_listed_items(judge):
    passages = ("The tour starts in Lyon on 3 May.", "It then visits Dijon on 5 May.", "The tour ends in Metz on 8 May.")
    q = "Where does the tour go?"
    ok = "The tour visits three cities: Lyon (3 May), Dijon (5 May) and Metz (8 May)."
    ((verdict, reason),) = judged(judge, q, ok, *passages)
    assert verdict == "unverified" and "three counts what the claim or the question lists" in reason, reason
    assert verdicts(judge, q, ok.replace("three", "four"), *passages) == ["unsupported"]


def test_list_markers_in_an_answer(judge):
    notice = "Applicants must bring a passport photo and a utility bill from the last two months."
    ok = "Bring (1) a passport photo and (2) a utility bill from the last two months."
    assert verdicts(judge, "What must applicants bring?", ok, notice) == ["supported"]
    assert verdicts(judge, "What must applicants bring?", ok.replace("two months", "six months"), notice) == [
        "unsupported"]


REVENUE = ("甲公司2024年营业收入为41.3亿元。", "乙公司2024年营业收入为35.6亿元。")


@pytest.mark.xfail(strict=True, reason="v10 false alarm: readings.interval reads 五亿多 as 5亿-6亿 only when a stated "
                   "value lies there; the gap 5.7亿 is computed, not stated, so it falls back to 五亿 rounded "
                   "(4.5亿-5.5亿) and the correct gap is 'not in evidence'")
def test_more_than_in_chinese_amounts_is_unverified_with_its_derivation(judge):
    ((verdict, reason),) = judged(judge, "甲公司营收比乙公司高多少？", "甲公司营收比乙公司高五亿多元。", *REVENUE)  # 5.7亿
    assert verdict == "unverified" and "= 4.13e+09 - 3.56e+09" in reason, reason


def test_a_wrong_more_than_in_chinese_amounts_is_never_supported(judge):
    ((verdict, reason),) = judged(judge, "甲公司营收比乙公司高多少？", "甲公司营收比乙公司高六亿多元。", *REVENUE)
    # the same fallback reads 六亿多 as 六亿 rounded (5.5亿-6.5亿), which the gap 5.7亿 fits: v10 cannot call
    # the wrong 六亿多 a contradiction (see the xfail above); never "supported"
    assert verdict == "unverified" and "六亿多元 = 4.13e+09 - 3.56e+09" in reason, reason


def test_bounds_a_grounded_value_satisfies(judge):
    notice = "该线路全程最快运行时间为52分钟。"
    q = "全程要多久？"
    ((verdict, reason),) = judged(judge, q, "全程最快52分钟，不到一小时。", notice)
    assert verdict == "unverified" and "the stated 52分钟 satisfies the bound 一小时" in reason, reason
    assert verdicts(judge, q, "全程最快52分钟，不到半小时。", notice) == ["unsupported"]
    en = "The fastest trip takes 52 minutes."
    ((verdict, reason),) = judged(judge, "How long is the trip?",
                                  "The fastest trip takes 52 minutes, less than an hour.", en)
    assert verdict == "unverified" and "the stated 52 minutes satisfies the bound an hour" in reason, reason
    assert verdicts(judge, "How long is the trip?", "The fastest trip takes 52 minutes, over an hour.", en) == [
        "unsupported"]


def test_duration_between_two_dates(judge):
    passages = ("展会于3月2日在苏州开幕。", "展会第二站3月16日在无锡举行。")
    q = "展会在哪些城市举办？"
    ((verdict, reason),) = judged(judge, q, "展会3月2日在苏州开幕，两周后（3月16日）移至无锡。", *passages)
    assert verdict == "unverified" and "两周 = the days from 3/2 to 3/16" in reason, reason
    assert verdicts(judge, q, "展会3月2日在苏州开幕，一周后（3月16日）移至无锡。", *passages) == ["unsupported"]


def test_a_bound_another_subjects_value_satisfies_is_unverified(judge):
    ev = ("The S5 runs for 50 minutes.", "The S3 runs for 90 minutes.")
    (s5, (verdict, reason)) = judged(judge, "q", "The S5 runs for 50 minutes. The S3 runs for less than an hour.", *ev)
    assert s5[0] == "supported"
    # the 50 minutes that satisfy "less than an hour" are the S5's, not the S3's: reach does not bind a bound
    # to its subject, so v10 cannot call it a contradiction (the S3's 90 minutes are); never "supported"
    assert verdict == "unverified" and "the stated 50 minutes satisfies the bound an hour" in reason, reason
