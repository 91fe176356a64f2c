"""Values the second blind multi-document set showed the offline judge misread or could not compute:
share words (千分之五, a quarter of an hour, 半价), cents, clock arithmetic, gaps between evidence
dates, rates times quantities, totals, shares of a claim's amount, zero fees and two-step results.

Each mechanism is tested on wordings of its own (not the set's), with a correct answer that must
pass and a near miss (a wrong total, product, time or gap) that must still be flagged.
"""
from __future__ import annotations

import pytest

from judging import read, verdicts


# --- reading -------------------------------------------------------------------------------------
def test_share_words():
    assert read("按合同金额的千分之三收取") == [("number", 0.3, "%")]
    assert read("万分之五") == [("number", 0.05, "%")]
    assert read("the walk takes a quarter of an hour") == [("duration", 900.0, "h")]
    assert read("约三分之二小时") == [("duration", 2400.0, "h")]
    assert read("学生票半价") == [("number", 50.0, "%")]
    assert read("children ride at half price") == [("number", 50.0, "%")]


def test_cents_are_hundredths_of_a_dollar():
    assert read("a 35-cent stamp, then 40 cents") == [("number", 0.35, "usd"), ("number", 0.4, "usd")]
    assert read("12¢ a minute") == [("number", 0.12, "usd")]


def test_an_amount_a_year_is_a_rate_not_a_duration():
    assert read("Membership: $2.4k a year.") == [("number", 2400.0, "usd")]


# --- judged --------------------------------------------------------------------------------------
TRAM = ("The first tram leaves Northgate at 05:50 and reaches Pier Street at 06:14.",
        "The ferry leaves Pier Street every 30 minutes from 06:30; the crossing takes 25 minutes.")


def test_arrival_time_is_a_departure_plus_a_ride(judge):
    q = "When is the earliest I can cross on the ferry from Northgate?"
    assert verdicts(judge, q, "Catch the 06:30 ferry; after the 25-minute crossing you land at 06:55.", *TRAM) \
        == ["supported"]
    assert verdicts(judge, q, "Catch the 06:30 ferry; after the 25-minute crossing you land at 07:05.", *TRAM) \
        == ["unsupported"]
    # earlier, not later: a time is not a departure minus a ride
    assert verdicts(judge, q, "Catch the 06:30 ferry; after the 25-minute crossing you land at 06:05.", *TRAM) \
        == ["unsupported"]


def test_duration_is_the_length_of_a_range(judge):
    q = "When is the pharmacy open on Sundays?"
    ev = "The pharmacy is open Monday to Saturday 8:30-19:00 and Sunday 9:00-12:00."
    # the range in the evidence, or the two times in the claim
    weekend = "What are the pharmacy's opening hours at the weekend?"
    assert verdicts(judge, weekend, "On Sunday the pharmacy is open for three hours.", ev) == ["supported"]
    assert verdicts(judge, weekend, "On Sunday the pharmacy is open for four hours.", ev) == ["unsupported"]
    assert verdicts(judge, q, "Sunday 9:00-12:00, a three-hour window.", ev) == ["supported"]
    assert verdicts(judge, q, "Sunday 9:00-12:00, a two-hour window.", ev) == ["unsupported"]


def test_days_between_two_dates_of_the_evidence(judge):
    q = "How long after the outage was the patch released?"
    ev = ("Incident report: the outage began on 2024-03-03.", "Release notes: patch 7.1 shipped on 2024-03-24.")
    assert verdicts(judge, q, "Patch 7.1 shipped 21 days after the outage.", *ev) == ["supported"]
    assert verdicts(judge, q, "Patch 7.1 shipped 23 days after the outage.", *ev) == ["unsupported"]


def test_rate_times_quantity(judge):
    q = "寄一件3公斤的包裹，运费多少？"
    ev = "同城快递运价为每公斤4.5元，次日送达。"
    assert verdicts(judge, q, "按3公斤计，3公斤×4.5元＝13.5元，次日送达。", ev) == ["supported"]
    assert verdicts(judge, q, "按3公斤计，3公斤×4.5元＝15元，次日送达。", ev) == ["unsupported"]
    # the rate only in the evidence: the claim's quantity times it, exactly
    assert verdicts(judge, q, "按3公斤计，运费13.5元，次日送达。", ev) == ["supported"]
    assert verdicts(judge, q, "按3公斤计，运费14元，次日送达。", ev) == ["unsupported"]


def test_total_of_two_evidence_amounts_needs_a_total_word_and_a_unit(judge):
    q = "两项服务一共要付多少钱？"
    ev = ("上门安装费为每次280元。", "旧机回收服务收费120元。")
    assert verdicts(judge, q, "安装和回收两项合计400元。", *ev) == ["supported"]
    assert verdicts(judge, q, "安装和回收两项合计420元。", *ev) == ["unsupported"]


def test_share_word_of_the_claims_own_amount(judge):
    q = "How many of the 240 seats can be booked in advance?"
    ev = ("The hall has 240 seats.", "Up to a quarter of a venue's seats may be reserved ahead of the event.")
    assert verdicts(judge, q, "At most 60 of the 240 seats can be booked ahead.", *ev) == ["supported"]
    assert verdicts(judge, q, "At most 80 of the 240 seats can be booked ahead.", *ev) == ["unsupported"]


def test_half_price_of_a_stated_fare(judge):
    q = "学生乘坐观光船要多少钱？"
    ev = "观光船票价80元，学生凭学生证享受半价。"
    assert verdicts(judge, q, "学生凭学生证半价，票价80元的一半即40元。", ev) == ["supported"]
    assert verdicts(judge, q, "学生凭学生证半价，票价80元的一半即45元。", ev) == ["unsupported"]


WAIVED = ("Checked bag fee: $35 per bag.", "Gold members have the checked bag fee waived.")


def test_a_zero_the_claim_does_not_call_free_or_waived_is_a_number_like_any_other(judge):
    q = "What does a Gold member pay for checked bags?"
    assert verdicts(judge, q, "Gold members pay $0 for checked bags.", *WAIVED) == ["unsupported"]


@pytest.mark.xfail(strict=True, reason="known false alarm: the $0 is derived (free_zero), but the polarity step "
                   "reads 'pay $0' as a plain clause against 'the fee waived' and calls it a flip")
def test_zero_for_a_waived_fee(judge):
    q = "What does a Gold member pay for checked bags?"
    assert verdicts(judge, q, "Gold members pay $0 for checked bags, since the fee is waived.", *WAIVED) == ["supported"]


def test_two_steps_within_a_claim(judge):
    q = "这片果园今年比去年多收了多少苹果？"
    ev = ("果园种植面积为300亩，去年亩产800公斤。", "今年亩产提高到900公斤，种植面积不变。")
    ok = "面积300亩不变，亩产由800公斤增至900公斤，总产量由24万公斤增至27万公斤，增加3万公斤。"
    assert verdicts(judge, q, ok, *ev) == ["supported"]
    assert verdicts(judge, q, ok.replace("增加3万公斤", "增加4万公斤"), *ev) == ["unsupported"]
    # a wrong first step is not rescued by the second
    assert verdicts(judge, q, ok.replace("由24万公斤", "由23万公斤").replace("增加3万公斤", "增加4万公斤"), *ev) \
        == ["unsupported"]
    # a bare count is never a step: "3-4 on aggregate" is not 3 + 1
    match = ("First leg: United won 2-1.", "Second leg: the teams drew 1-1.")
    assert verdicts(judge, "What was the aggregate score?", "United won 3-4 on aggregate.", *match) == ["unsupported"]


def test_a_bare_number_repeats_a_converted_one_as_written(judge):
    q = "Which barley line yielded more in the trial?"
    ev = "In the trial, barley line K2 yielded 6.3 tonnes per hectare and line K5 yielded 5.9 tonnes per hectare."
    assert verdicts(judge, q, "K2 yielded more: 6.3 versus 5.9 for K5.", ev) == ["supported"]
    assert verdicts(judge, q, "K2 yielded more: 6.8 versus 5.9 for K5.", ev) == ["unsupported"]


def test_total_of_two_counts_needs_the_two_parts_named(judge):
    q = "两个校区一共有多少名学生？"
    ev = ("东校区现有学生1,240名。", "西校区现有学生960名。")
    assert verdicts(judge, q, "两个校区学生总数为2,200名。", *ev) == ["supported"]
    assert verdicts(judge, q, "两个校区学生总数为2,300名。", *ev) == ["unsupported"]
    # a part listed after the total is not itself a total
    assert verdicts(judge, q, "两个校区学生总数为2,200名（1,240名＋961名）。", *ev) == ["unsupported"]


def test_half_price_named_in_the_claim_needs_no_full_price(judge):
    q = "学生乘坐观光船要多少钱？"
    ev = "观光船票价80元，学生凭学生证享受半价。"
    assert verdicts(judge, q, "学生凭学生证半价，只需40元。", ev) == ["supported"]
    assert verdicts(judge, q, "学生凭学生证半价，只需45元。", ev) == ["unsupported"]


def test_a_phase_number_is_not_a_count(judge):
    q = "二期的均价是多少？"
    ev = "一期均价为每平方米1.9万元。二期均价为每平方米2.05万元。"
    assert verdicts(judge, q, "二期均价为每平方米20500元。", ev) == ["supported"]
    assert verdicts(judge, q, "二期均价为每平方米41000元。", ev) == ["unsupported"]
