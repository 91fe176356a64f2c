"""Judge v11's positive evidence for unreached values: counter-statements, computing claims, counted dates,
weekdays and the answer's own arithmetic (evalkit.judges.counter, .calendar, .arithmetic).

Each mechanism is tested on wordings of its own (not any case set's): the case it decides, and the case
it must leave alone.
"""
from __future__ import annotations

from datetime import date

import pytest
from judging import judged, verdicts

from evalkit.judges.arithmetic import equations, wrong_equations
from evalkit.judges.calendar import counted_date, weekday_check, weekday_of_name
from evalkit.judges.counter import computes, counter_statement, finer_than_evidence, judge_unreached, significant_digits
from evalkit.text.dates import DateValue
from evalkit.text.values import extract_atoms


def _atom(text: str, value: str):
    return next(a for a in extract_atoms(text, entities=False) if a.text.strip() == value)


# --- computes ------------------------------------------------------------------------------------
@pytest.mark.parametrize("text", ["The two fees total $85.", "That leaves 12 months.", "约3.8万元，合计", "两项合计400元",
                                  "3 x 12 nights", "It comes to €588."])
def test_a_claim_that_computes(text):
    assert computes(text)


@pytest.mark.parametrize("text", ["The fee is $45.", "服务将在2026/1/24暂停。", "The warranty lasts 5 years.",
                                  "Refunds are issued 14 days after the request."])
def test_a_plain_claim(text):
    assert not computes(text)


# --- counter-statements ---------------------------------------------------------------------------
def test_the_evidence_states_another_value_for_the_same_thing():
    claim = "The application fee is $45."
    found = counter_statement(_atom(claim, "$45"), claim, ["Applicants pay an application fee of $40 at submission."])
    assert found is not None and found.value == "$40" and found.overlap >= 0.5


def test_a_limit_or_a_rate_is_no_counter_value():
    claim = "Ward 7 had 5.6 patients per nurse by day."
    assert counter_statement(_atom(claim, "5.6"), claim, ["Each nurse may care for at most 6 patients by day."]) is None
    claim = "Permits for the trip total $224 in fees."
    assert counter_statement(_atom(claim, "$224"), claim, ["A reservation fee of $8 per booking applies."]) is None


def test_unrelated_clauses_are_no_counter():
    claim = "The deposit is $900."
    assert counter_statement(_atom(claim, "$900"), claim, ["Parking costs $40 a month."]) is None


def test_an_unreached_value_is_unsupported_only_with_positive_evidence():
    ev = ["Library prep costs $38 per sample and a sequencing lane is $1,450."]
    plain = "The kit costs $75."
    assert judge_unreached(_atom(plain, "$75"), plain, ev) == (
        True, "stated plainly, and nothing in the evidence gives or derives it")
    total = "For 40 samples the total comes to about $5,870."
    wrong, why = judge_unreached(_atom(total, "$5,870"), total, ev)
    assert not wrong and "the claim computes" in why
    # an answer that computes elsewhere may state its result plainly
    assert not judge_unreached(_atom(plain, "$75"), plain, ev, computing=True)[0]
    # ... unless the claim is about something else than the evidence
    off = "Municipal water prices rose sharply across the region, averaging $75 per household."
    assert judge_unreached(_atom(off, "$75"), off, ev, computing=True)[0]


def test_judged_counter_statement_and_computation(judge):
    q = "How much is the application fee?"
    ev = ("Applicants pay an application fee of $40 at submission.",)
    ((verdict, reason),) = judged(judge, q, "The application fee is $45.", *ev)
    assert verdict == "unsupported" and "the evidence states $40" in reason, reason
    ev2 = ("Library prep costs $38 per sample.", "A sequencing lane is $1,450 and holds up to 16 samples.")
    ((verdict, reason),) = judged(judge, "What will 40 samples cost?", "The total comes to about $5,870.", *ev2)
    assert verdict == "unverified" and "the claim computes" in reason, reason


def test_a_question_that_asks_for_a_computation_makes_a_plain_value_a_computed_one(judge):
    """"How much will the whole order cost in total?" -> "You'll pay $312.": the answer states the result of a
    computation the question asked for; without such a question the same plain value is unsupported."""
    ev = ("Printing costs $0.12 per page.", "Binding is $4 per copy; orders of 20 copies or more get 10% off.")
    ((verdict, reason),) = judged(judge, "How much will 25 copies of a 100-page report cost in total?",
                                  "You'll pay $360.", *ev)
    assert verdict == "unverified" and "the claim computes" in reason, reason
    ((verdict, reason),) = judged(judge, "How much does binding cost?", "You'll pay $360.", *ev)
    assert verdict == "unsupported" and "stated plainly" in reason, reason


# --- a plain amount finer than the evidence's (v24) ---------------------------------------------------
@pytest.mark.parametrize("text, digits", [("$3,206.67", 6), ("264,000元", 3), ("7.82万元", 3), ("0.35元", 2), ("1,000", 1),
                                          ("$26.00", 2), ("£240.80", 4), ("105 km", 3), ("两千七百元", 0)])
def test_significant_digits_as_written(text, digits):
    assert significant_digits(text) == digits


def test_a_plain_amount_finer_than_any_in_the_evidence_is_computed():
    ev = ["Call-out is $95, then $38.50 per hour of labour.", "Parts are billed at cost; a filter cartridge is $46."]
    plain = "You owe $229.75."
    finest = finer_than_evidence(_atom(plain, "$229.75"), ev)
    assert finest is not None and finest.text.strip() == "$38.50"
    wrong, why = judge_unreached(_atom(plain, "$229.75"), plain, ev, computable=True)
    assert not wrong and "written more precisely than any value in its unit" in why and "$38.50" in why, why
    # v27: with nothing to compute from (no value of the user's in the question, none of its unit in the answer), a
    # lone precise figure is invented, not computed
    assert judge_unreached(_atom(plain, "$229.75"), plain, ev) == (
        True, "stated plainly, and nothing in the evidence gives or derives it")


@pytest.mark.parametrize("claim, value", [
    ("You owe $42.50.", "$42.50"),          # no finer than $38.50: a figure of the evidence's kind, mistyped or made up
    ("You owe $120.", "$120"),              # too coarse to tell a computation from a guess
    ("Your account number is 4417.", "4417"),  # no unit: an id, not an amount
    ("The repair took 135 minutes.", "135 minutes"),  # a duration is read as written
])
def test_amounts_that_stay_plain(claim, value):
    ev = ["Call-out is $95, then $38.50 per hour of labour.", "Parts are billed at cost; a filter cartridge is $46."]
    assert finer_than_evidence(_atom(claim, value), ev) is None
    assert judge_unreached(_atom(claim, value), claim, ev) == (
        True, "stated plainly, and nothing in the evidence gives or derives it")


def test_a_finer_amount_in_an_answer_that_computes_is_computed_despite_a_counter_value():
    """v26: "每箱9,931.6元" against "每箱180元" in an answer that adds up fees; a plain claim or a figure no finer than
    the evidence's keeps the counter-statement's verdict."""
    ev = ["装卸作业费每箱180元，超期堆存费每箱每天60元。", "铁路运费按里程计费，每箱每公里3.185元。"]
    claim = "铁路运费每箱9,931.6元。"
    wrong, why = judge_unreached(_atom(claim, "9,931.6元"), claim, ev, computing=True)
    assert not wrong and "the evidence states" in why and "computed from them" in why, why
    assert judge_unreached(_atom(claim, "9,931.6元"), claim, ev)[0]  # stated plainly, in an answer that computes nowhere
    coarse = "装卸作业费每箱200元。"
    assert judge_unreached(_atom(coarse, "200元"), coarse, ev, computing=True)[0]


def test_a_percentage_is_never_read_as_finer():
    """99.9% availability or 12.6% growth is quoted as written: a made-up share stays unsupported (v26)."""
    ev = ["可用性按自然月计算，结果以百分比表示，精确到1%。", "Online sales grew 15% in 2024."]
    assert finer_than_evidence(_atom("服务可用性承诺为99.9%。", "99.9%"), ev) is None
    assert finer_than_evidence(_atom("Sales grew 12.6%.", "12.6%"), ev) is None


def test_an_amount_in_another_unit_than_the_evidence_is_not_computed_from_it():
    ev = ["Call-out is $95, then $38.50 per hour of labour."]
    assert finer_than_evidence(_atom("You owe €229.75.", "€229.75"), ev) is None


def test_judged_plain_amount_finer_than_the_evidence(judge):
    """A correct total stated plainly ("你需要支付1,347.6元。") was unsupported until v23; a made-up figure written like
    the evidence's stays unsupported."""
    ev = ("租金每天85元，押金500元。", "超过7天的部分按8折计费，另收清洁费32元。")
    ((verdict, reason),) = judged(judge, "租19天要付多少？", "你需要支付1,347.6元。", *ev)
    assert verdict == "unverified" and "written more precisely" in reason, reason
    # v27: a lookup question gives nothing to compute from: the same figure is invented
    ((verdict, reason),) = judged(judge, "要付多少？", "你需要支付1,347.6元。", *ev)
    assert verdict == "unsupported" and "stated plainly" in reason, reason
    ((verdict, reason),) = judged(judge, "押金可以退多少？", "押金可退450元。", *ev)
    assert verdict == "unsupported" and "stated plainly" in reason, reason


# --- counted dates and weekdays --------------------------------------------------------------------
def test_a_date_counted_from_a_stated_date():
    nov2 = DateValue(2024, 11, 2)
    ninety = [(90 * 86400.0, "d")]
    assert counted_date(DateValue(2025, 1, 31), [nov2], ninety, [2024]) is not None
    assert counted_date(DateValue(2025, 2, 1), [nov2], ninety, [2024]) is not None  # counting the first day
    assert counted_date(DateValue(2025, 2, 9), [nov2], ninety, [2024]) is None
    # a year-less date takes a stated year; months count by the calendar
    assert counted_date(DateValue(None, 5, 3), [DateValue(2025, 2, 3)], [(3 * 30.44 * 86400, "mo")], [2025])


def test_short_durations_and_years_count_to_the_day():
    """Since v22 (until v21 neither counted): under a week, whole days, to the day; a year or more, whole years or
    months, to the day. Both only with ``near`` (the default here), which :func:`reach` tries only when no evidence
    sentence states another date for the claim's clause (tests/judges/test_reach.py)."""
    assert counted_date(DateValue(2024, 7, 12), [DateValue(2024, 7, 8)], [(4 * 86400.0, "d")], [2024]) \
        == "2024-07-12 = 2024-07-08 + 4 days"
    assert counted_date(DateValue(2024, 7, 13), [DateValue(2024, 7, 8)], [(4 * 86400.0, "d")], [2024]) is None
    assert counted_date(DateValue(2024, 7, 13), [DateValue(2024, 7, 8)], [(4.5 * 86400.0, "d")], [2024]) is None
    year = [(365.25 * 86400.0, "y")]
    assert counted_date(DateValue(2027, 6, 30), [DateValue(2026, 6, 30)], year, [2026]) == "2027-06-30 = 2026-06-30 + 1 year"
    assert counted_date(DateValue(2027, 7, 1), [DateValue(2026, 6, 30)], year, [2026]) is None
    assert counted_date(DateValue(2027, 6, 30), [DateValue(2026, 6, 30)], [(365 * 86400.0, "d")], [2026]) is None
    assert counted_date(DateValue(2027, 6, 30), [DateValue(2026, 6, 30)], year, [2026], near=False) is None
    assert counted_date(DateValue(2024, 7, 12), [DateValue(2024, 7, 8)], [(4 * 86400.0, "d")], [2024], near=False) is None


def test_a_short_duration_the_claim_writes_itself_counts():
    """"Samples reach the lab on Thursday 10 July; the panel (2 business days) is ready on Monday 14 July": the
    claim shows its working, so a short duration counts (as working days here); since v22 it does when only the
    evidence states it too, being whole days (until v21 it did not)."""
    thu, two_wd = DateValue(2025, 7, 10), (2 * 86400.0, "wd")
    how = counted_date(DateValue(2025, 7, 14), [thu], [two_wd], [2025], shown=[two_wd])
    assert how == "2025-07-14 = 2025-07-10 + 2 working days"
    assert counted_date(DateValue(2025, 7, 14), [thu], [two_wd], [2025]) == how
    assert counted_date(DateValue(2025, 7, 15), [thu], [two_wd], [2025], shown=[two_wd]) is None
    half = (1.5 * 86400.0, "d")  # 36 hours is no whole number of days: only when the claim writes it
    assert counted_date(DateValue(2025, 7, 11), [thu], [half], [2025]) is None


def test_dates_no_text_gives_a_year_for_are_counted_in_any_year():
    """"9月3日买的，30日内登记" -> 10月3日: no year anywhere; day arithmetic is that of a common (or leap) year;
    working days depend on the year and are not counted."""
    bought, thirty = DateValue(None, 9, 3), [(30 * 86400.0, "d")]
    assert counted_date(DateValue(None, 10, 3), [bought], thirty, []) == "10-03 = 09-03 + 30 days (±1)"
    assert counted_date(DateValue(None, 10, 9), [bought], thirty, []) is None
    # across the end of February: 2月20日 + 10 days is 3月2日 in a common year, 3月1日 in a leap year
    assert counted_date(DateValue(None, 3, 2), [DateValue(None, 2, 20)], [(10 * 86400.0, "d")], []) is not None
    assert counted_date(DateValue(None, 3, 1), [DateValue(None, 2, 20)], [(10 * 86400.0, "d")], []) is not None
    assert counted_date(DateValue(None, 10, 15), [bought], [(30 * 86400.0, "wd")], []) is None


def test_working_days_skip_weekends():
    # Friday 6 June 2025 + 5 working days = Friday 13 June (counted since v22: whole days)
    assert counted_date(DateValue(2025, 6, 13), [DateValue(2025, 6, 6)], [(5 * 86400.0, "wd")], [2025]) \
        == "2025-06-13 = 2025-06-06 + 5 working days"
    assert counted_date(DateValue(2025, 6, 17), [DateValue(2025, 6, 6)], [(7 * 86400.0, "wd")], [2025]) is not None


def test_weekday_of_a_date():
    assert weekday_of_name("Monday") == 0 and weekday_of_name("周日") == 6 and weekday_of_name("Wed.") == 2
    assert date(2024, 6, 3).weekday() == 0
    claim = "From Monday 3 June 2024 the lane is closed."
    monday = next(a for a in extract_atoms(claim) if a.text.strip() == "Monday")
    assert weekday_check(monday, claim, [2024])[0] is True
    wrong = claim.replace("Monday", "Tuesday")
    tuesday = next(a for a in extract_atoms(wrong) if a.text.strip() == "Tuesday")
    assert weekday_check(tuesday, wrong, [2024])[0] is False


def test_judged_deadline_is_unverified_and_a_wrong_one_is_not_supported(judge):
    q = "By when must she appeal?"
    ev = ("The assessment notice was mailed on 3 April 2025.", "An appeal must be filed within 45 days of the mailing date.")
    ((verdict, reason),) = judged(judge, q, "She must file her appeal by 18 May 2025.", *ev)
    assert verdict == "unverified" and "2025-05-18 = 2025-04-03 + 45 days" in reason, reason
    assert verdicts(judge, q, "She must file her appeal by 28 May 2025.", *ev) != ["supported"]


# --- the answer's own arithmetic -------------------------------------------------------------------
def test_equations_are_read_and_checked():
    got = equations("6 people × 3 nights × $12 = $216; 税额4,600×13%×70%＝418.6元")
    assert [(round(e.computed, 6), e.written, e.wrong) for e in got] == [(216.0, 216.0, False), (418.6, 418.6, False)]
    assert [e.text for e in wrong_equations("40 × $38 = $1,530")] == ["40 × $38 = $1,530"]
    assert not wrong_equations("about 81% (58 / 72 = 0.806)")
    assert not wrong_equations("Deposit: 30% × €4,500 = €1.35k")  # a scale suffix is read
    assert equations("Deposit: 30% × €4,500 = €1.35k")[0].computed == pytest.approx(1350)


@pytest.mark.parametrize("text", ["3,900 parts × 6 s = 390 minutes", "six weeks × 5 days × 4 lessons = 120 lessons",
                                  "50＋90,000×2.5%＋60,000×2%＝50＋2,250＋1,200", "2026/1/24 = the day"])
def test_what_is_not_read_as_a_whole_equation(text):
    assert not wrong_equations(text)


def test_judged_wrong_arithmetic_is_unsupported(judge):
    q = "What does prep cost for 40 samples?"
    ev = ("Library prep costs $38 per sample.",)
    ((verdict, reason),) = judged(judge, q, "Prep is 40 × $38 = $1,530.", *ev)
    assert verdict == "unsupported" and "its own arithmetic is wrong" in reason, reason
    ((verdict, _),) = judged(judge, q, "Prep is 40 × $38 = $1,520.", *ev)
    assert verdict == "unverified"


def test_a_small_count_of_the_answers_own_points_is_no_invented_figure():
    ev = ["The ETC card's bank account can be changed in the app, or at the issuing bank's branch."]
    for claim, count in (("There are two ways to do it:", "two"), ("Two things that may help:", "Two"),
                         ("两种方式都可以：", "两"), ("You have three options here.", "three")):
        wrong, why = judge_unreached(_atom(claim, count), claim, ev)
        assert not wrong and "a small count of the points the answer names" in why, claim
    # a count of things in the world stays a figure: an invented "three availability zones" is unsupported
    for claim, count in (("Orders are replicated in three availability zones.", "three"), ("数据在三个可用区复制。", "三"),
                         ("There are four ways to do it.", "four")):
        assert judge_unreached(_atom(claim, count), claim, ev)[0], claim


@pytest.mark.parametrize("text", [
    # judge v16 (found on held_out sets after their measurement): how answers write correct working
    "base $900 plus 14 miles × $18 = $252, so $1,152",  # the result of the last step only
    "Accuracy: 1 − 840/42,000 = 98.0%",                  # a Unicode minus sign
    "$9,800 + 20% = $11,760",                            # a percentage of the amount added
    "$100 - 10% = $90",
    "The zones 1-3 pass is $152.",                       # a range in a label, read with "is"
    # judge v25 (found on held_out W after its measurement)
    "课程费：3200元×9折＝2880元",                           # a discount in 折: 9折 is 90%
    "Pickup: 2 June 2025 + 3 weeks = 23 June 2025",      # a date counted forward, not a sum of 2025 and 3
    "2025年6月2日＋21天＝2025年6月23日",
])
def test_correct_working_in_the_ways_answers_write_it_is_no_wrong_arithmetic(text):
    assert wrong_equations(text) == []


@pytest.mark.parametrize("text", [
    "1 − 840/42,000 = 97.0%",   # a percentage result is read to its own last digit (0.1 of a percent)
    "$9,800 + 20% = $11,000",
    "$100 + $50 = $50",         # a last step that is no computation proves nothing
    "5-2 = 4",
    "1/3 = 34%",
    "3200元×9折＝2800元",        # v25: 折 read as a discount, and checked
    "2025 - 2019 = 7 years",    # bare years are numbers: their difference is checked
])
def test_wrong_working_in_those_forms_is_still_wrong(text):
    assert len(wrong_equations(text)) == 1
