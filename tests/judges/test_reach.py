"""evalkit.judges.reach: how a value an answer states could follow from the evidence, one
hand-made case per derivation of the module docstring, and values no derivation reaches.

A reached value makes its claim ``unverified`` (the reason names the derivation); an absent
one (``None``) is the positive evidence an ``unsupported`` verdict needs. Each case asserts
the exact outcome: the derivation's wording, or None.
"""
from __future__ import annotations

import pytest

from evalkit.judges.grounding import analyse
from evalkit.judges.reach import MAX_COUNT, reach
from evalkit.text.values import extract_atoms


def how(claim: str, target: str, *evidence: str, question: str = "") -> str | None:
    """What :func:`reach` says of the atom written ``target`` in ``claim``, as the offline judge calls it:
    evidence atoms without names, texts = passages + question, operands = the claim's other atoms."""
    atoms = analyse(claim).atoms
    (t,) = [a for a in atoms if a.text.strip() == target]
    stated = [a for e in evidence for a in extract_atoms(e, entities=False)]
    asked = list(extract_atoms(question, entities=False)) if question else []
    return reach(t, claim, stated, [*evidence, question], [*atoms, *asked], question)


# --- 1. presence with another subject ---------------------------------------------------------------
def test_a_value_stated_with_another_subject_is_present():
    got = how("The Basic plan has 25 seats.", "25", "The Team plan has 25 seats.")
    assert got == "25 is stated in the evidence ('25'), but not with its subject"


def test_a_number_without_a_unit_is_present_in_any_unit():
    assert how("It allows 500 rooms.", "500", "The attachment limit is 500 MB.") \
        == "500 is stated in the evidence ('500 MB'), but not with its subject"
    # a unit the claim gives must be the evidence's: 500 MB is not 500 seconds (nothing else reaches it)
    assert how("The session lasts 500 seconds.", "500 seconds", "The attachment limit is 500 MB.") is None


# --- 2. a narrow stated range --------------------------------------------------------------------------
@pytest.mark.parametrize("claim, target, evidence, reached", [
    ("Delivery takes 4 days.", "4 days", "Delivery takes 3-5 days.", "4 days lies in the stated range 3-5"),
    ("每批5至10件，本批7件。", "7", "每批5至10件。", "7 lies in the stated range 5-10"),
    # a year is a date: its parts may sit inside a stated range of years
    ("The survey ran in 2021.", "2021", "The survey ran 2020–2022.",
     "the parts of 2021 are stated in the evidence (another format, range or subject)"),
    # a wide range says nothing of a value inside it
    ("The timeout is 1,800.", "1,800", "Allowed values: 0-3,600.", None),
    ("It weighs 300 g.", "300 g", "Parcels of 100-900 g.", None),
])
def test_only_a_narrow_range_reaches_a_value_inside_it(claim, target, evidence, reached):
    assert how(claim, target, evidence) == reached


# --- 3. conversions ----------------------------------------------------------------------------------
def test_a_conversion_needs_the_other_unit_named_in_the_evidence():
    assert how("The trail is about 5 km long.", "5 km", "The trail is 3.1 miles long.") \
        == "5 km converts from 3.1 (mile -> km)"
    assert how("The trail is about 5 km long.", "5 km", "Trail length: 3.1.") is None
    # 22 lb is 9.98 kg: within "about 10 kg", not within an unhedged "10 kg" (read to the gram)
    assert how("The case weighs about 10 kg.", "10 kg", "The case weighs 22 lbs.") \
        == "10 kg converts from 22 (lb -> kg)"
    assert how("The case weighs 10 kg.", "10 kg", "The case weighs 22 lbs.") is None
    assert how("Set the oven to 180°C.", "180°C", "Bake at 356°F.") == "180°C converts from 356 (°C/°F)"


# --- 4. one typed operation on two stated values ------------------------------------------------------
@pytest.mark.parametrize("claim, target, evidence, reached", [
    ("安装和回收两项合计400元。", "400元", ("上门安装费为每次280元。", "旧机回收服务收费120元。"), "400元 = 280 + 120"),
    ("The K3 needs 45 minutes less.", "45 minutes",
     ("The K1 takes 135 minutes to recharge.", "The K3 recharges in 90 minutes."), "45 minutes = 8,100 - 5,400"),
    ("按3公斤计，运费13.5元。", "13.5元", ("运价为每公斤4.5元。",), "13.5元 = 4.5 x 3"),  # the claim's own count
    ("At most 60 seats can be booked ahead.", "60", ("The hall has 240 seats.", "Up to 25% may be booked ahead."),
     "60 = 240 x 25%"),
    ("The charge rose 15%.", "15%", ("In 2023 the charge was 20 cents per kWh.", "In 2024 it is 23 cents per kWh."),
     "15% = (0.23 - 0.2) / 0.2"),
])
def test_one_operation_on_two_stated_values(claim, target, evidence, reached):
    assert how(claim, target, *evidence) == reached


def test_a_bare_count_of_the_evidence_multiplies_from_three_up():
    # 4 only in the evidence: a bare count from 3 up times an amount is tried (40 台 x 3.2万元)
    assert how("每日最多1.2克。", "1.2克", "每粒0.3克，每日不超过4粒。") == "1.2克 = 0.3 x 4"
    # a bare 2 only in the evidence is not: doubling fits too much by chance
    assert how("每日最多1.2克。", "1.2克", "每粒0.6克，每日不超过2粒。") is None
    # the claim writes the count itself: its own arithmetic shows the operands, a 2 included
    assert how("每日最多2粒，即1.2克。", "1.2克", "每粒0.6克，每日不超过2粒。") == "1.2克 = 0.6 x 2"


def test_the_sum_of_all_stated_values_in_the_targets_unit():
    ev = "Stage one costs $120, stage two $80 and stage three $55."
    assert how("The three stages cost $255 in all.", "$255", ev) == "$255 = the sum of the stated values in its unit"
    assert how("The three stages cost $265 in all.", "$265", ev) is None


# --- 6. zeros, bounds, date gaps ---------------------------------------------------------------------
def test_a_zero_may_be_stated_in_words():
    assert how("Gold members pay $0.", "$0", "The fee is waived for Gold members.") \
        == "$0 is a zero, which the evidence may state in words (free, waived, none)"


def test_a_bound_a_stated_value_satisfies():
    assert how("全程最快52分钟，不到一小时。", "一小时", "该线路全程最快运行时间为52分钟。") \
        == "the stated 52分钟 satisfies the bound 一小时"
    # a bound no stated value satisfies restates its own number, which is stated nowhere
    assert how("The trip takes less than half an hour.", "half an hour", "The fastest trip takes 52 minutes.") is None


def test_a_duration_between_two_stated_dates():
    ev = ("Incident report: the outage began on 2024-03-03.", "Release notes: patch 7.1 shipped on 2024-03-24.")
    assert how("The patch shipped 21 days after the outage.", "21 days", *ev) == "21 days = the days from 3/3 to 3/24"
    assert how("The patch shipped 23 days after the outage.", "23 days", *ev) is None
    assert how("The firm is 5 years old.", "5 years", "Founded in 2019.", "Annual report 2024.") \
        == "5 years = the years from 2019 to 2024"


def test_a_date_counted_from_a_stated_date_by_whole_years_or_whole_days():
    """v22: a year or more counts in whole years or months, to the day; a duration under a week when it is whole days
    (48 hours, 2 business days), to the day. Before, both left the date absent: unsupported."""
    ev = ("Warranty: full coverage continues until 10 years after the original installation date.",
          "Invoice: re-roof completed 14 August 2019.")
    assert how("Full coverage lasts until 14 August 2029.", "14 August 2029", *ev) == "2029-08-14 = 2019-08-14 + 10 years"
    for wrong in ("15 August 2029", "14 August 2028"):  # a day or a year off is no anniversary
        assert how(f"Full coverage lasts until {wrong}.", wrong, *ev) is None
    assert how("Credits are valid until 6 June 2026.", "6 June 2026",
               "All credits are valid for 12 months from the course's final scheduled day.",
               "Student record: Day Skipper booked 2-6 June 2025.") == "2026-06-06 = 2025-06-06 + 1 year"
    zh = ("保修期内发生渗漏，施工方应在接到报修通知后48小时内到场。", "物业公告：2025年7月2日上午10时接1801室业主报修。")
    assert how("施工方最晚7月4日到场。", "7月4日", *zh) == "2025-07-04 = 2025-07-02 + 2 days"
    assert how("施工方最晚7月5日到场。", "7月5日", *zh) is None  # no slack under a week
    asked = "If the office receives them on Monday 9 June 2025, when will they be done?"
    fast = "Expedited processing is completed within 2 business days of receipt."
    assert how("They should be ready by Wed, June 11, 2025.", "June 11, 2025", fast, question=asked) \
        == "2025-06-11 = 2025-06-09 + 2 days"
    assert how("They should be ready by Thursday, June 12, 2025.", "June 12, 2025", fast, question=asked) is None
    # a date the evidence states for the claim's clause is not overruled by a count that fits by chance
    term = "The support contract runs until 2026/06/30 and renews automatically for 12 months."
    assert how("It runs until June 30, 2027.", "June 30, 2027", term) is None
    # the cost: a right answer in the clause's own words is not rescued either (then unsupported, as until v21)
    assert how("After the renewal the contract lasts until June 30, 2027.", "June 30, 2027", term) is None


# --- 7. counts of listed things, clock times --------------------------------------------------------
def test_a_count_of_what_the_claim_lists():
    ev = ("The tour starts in Lyon.", "It then visits Dijon.", "The tour ends in Metz.")
    assert how("The tour visits three cities: Lyon, Dijon and Metz.", "three", *ev) \
        == "three counts what the claim or the question lists"
    assert how("The tour visits four cities: Lyon, Dijon and Metz.", "four", *ev) is None
    # or what the question lists
    q = "Do I need my passport, a photo and a bank statement?"
    assert how("You need three documents.", "three", "Bring ID.", question=q) \
        == "three counts what the claim or the question lists"
    assert how("You need four documents.", "four", "Bring ID.", question=q) is None


@pytest.mark.parametrize("n", [MAX_COUNT, MAX_COUNT + 1])
def test_a_count_is_a_small_whole_number(n):
    listed = "、".join("甲乙丙丁戊己庚辛壬癸子丑"[:n])  # n things, listed by the claim itself
    expected = f"{n} counts what the claim or the question lists" if n <= MAX_COUNT else None
    assert how(f"共{n}项：{listed}。", str(n), "无关。") == expected


def test_a_clock_time_is_a_stated_time_plus_a_stated_duration():
    ev = "The ferry leaves at 06:30; the crossing takes 25 minutes."
    ok = "Catch the 06:30 ferry; after the 25-minute crossing you land at 06:55."
    assert how(ok, "06:55", ev) == "06:55 = 390 min + 25 min"
    assert how(ok.replace("06:55", "07:05"), "07:05", ev) is None
    # minus is tried too: an earlier time fits by the same arithmetic
    assert how(ok.replace("06:55", "06:05"), "06:05", ev) == "06:05 = 390 min - 25 min"
    # the answer must write one of the operands: two values of the evidence alone are not combined
    assert how("After the crossing you land at 06:55.", "06:55", ev) is None


# --- dates ---------------------------------------------------------------------------------------------
def test_the_parts_of_a_date_are_stated_in_another_format():
    ev = "The contract was signed on 2024-03-15."
    assert how("It was signed in March 2024.", "March 2024", ev) \
        == "the parts of March 2024 are stated in the evidence (another format, range or subject)"
    assert how("It was signed in Q1 2024.", "Q1 2024", ev) \
        == "the parts of Q1 2024 are stated in the evidence (another format, range or subject)"
    assert how("It was signed in April 2024.", "April 2024", ev) is None


# --- absent values: the positive evidence of 'unsupported' --------------------------------------------
def test_a_made_up_number_is_absent():
    assert how("The Pro plan costs $73 a month.", "$73", "The Pro plan costs $49 per month.") is None


def test_a_made_up_name_is_absent():
    ev = "Payroll questions go to Maria Gomez in the finance department."
    assert how("Payroll questions go to Peter Zhang.", "Peter Zhang", ev) is None
    assert how("请联系王小明。", "王小明", "工资问题请联系财务部张伟。") is None
    # a word of the name is in the evidence: another spelling or form of it may be meant
    assert how("Payroll questions go to Maria Gomes.", "Maria Gomes", ev) == "'maria' of Maria Gomes is in the evidence"
    # a Chinese name: all but two of its characters, in a row (another transliteration)
    assert how("史蒂夫负责此事。", "史蒂夫", "此事由斯蒂夫负责。") == "'蒂夫' of 史蒂夫 is in the evidence"


def test_a_changed_code_is_absent():
    assert how("Order the LX-300 module.", "LX-300", "The LX-200 module ships in May.") is None


# --- labels, phrases with numbers, quoted wordings, counted weekdays (judge v17) -----------------------
def test_a_phrase_of_words_and_numbers_is_reached_by_its_numbers_unless_the_evidence_has_its_sibling():
    ev = "Homes built before 1950 carry a $75 surcharge."
    assert how("It carries the $75 pre-1950 surcharge.", "pre-1950", ev) \
        == "the numbers of pre-1950 are stated in the evidence"
    assert how("It carries the $75 pre-1960 surcharge.", "pre-1960", ev) is None  # 1960 is stated nowhere
    # the evidence names the same phrase with another number: another value, not a derivation
    assert how("The cap for tier-2 cities is CNY 600.", "tier-2", "The tier-1 cap is CNY 600; 2 nights max.") is None
    # an identifier (capitals, or letters and digits in one part) is stated as it is, or absent
    assert how("Order the LX-300 module.", "LX-300", "The LX-200 module ships in 300 units.") is None


def test_one_capital_letter_is_a_label_not_a_name():
    assert how("Option B: carnet insurance at 1.6%.", "B", "Alternatively, insure the carnet at 1.6%.") \
        == "B is one letter: too short to be looked for as a name"


def test_a_quoted_wording_with_figures_is_no_name():
    ev = "持有7天以上（含）、不满365天的，费率0.50%。"
    assert how("落在“7天以上、不满365天”这一档。", "7天以上、不满365天", ev) \
        == "“7天以上、不满365天” is quoted wording with figures, which are checked as values"


def test_a_weekday_counted_from_the_question_s_day():
    q = "If I place a rush order on Tuesday at 2 pm, when can I collect it?"
    ev = "Orders received after 12:00 count as received the next working day. Rush jobs are ready the following working day."
    assert how("It will be ready on Thursday.", "Thursday", ev, question=q) \
        == "Thursday is a day counted from the question's day or date; no passage names a weekday"
    # a passage that names the days states which hold: a day it does not name is absent
    assert how("It will be ready on Thursday.", "Thursday", ev + " Collection is on Fridays only.", question=q) is None
    # nothing to count from
    assert how("It will be ready on Thursday.", "Thursday", ev, question="When can I collect a rush order?") is None


def test_minutes_written_m_and_a_value_written_inside_a_model_code():
    ev = "An optional interval for downsampling (1m, 5m, 1h, 1d)."
    assert how("Downsampling: 1 minute, 5 minutes or 1 hour.", "5 minutes", ev) \
        == "5 minutes is stated as 5m (m: minutes, or metres)"
    assert how("Downsampling every 7 minutes.", "7 minutes", ev) is None
    ev = "Rev B units ship with the HN-60W power adapter."
    assert how("They come with the 60 W HN-60W adapter.", "60 W", ev) == "60 W is written inside HN-60W in the evidence"
    assert how("They come with a 65 W adapter.", "65 W", ev) is None


def test_the_multiplier_of_a_stated_percentage():
    ev = "Groups of 6 or more players get 15% off. Each room takes 4 to 8 players."
    assert how("15% off: $34 × 0.85 = $28.90 per player.", "0.85", ev) \
        == "0.85 is the multiplier of the stated 15% (as a share, 1 minus or 1 plus it)"
    assert how("Rush adds 40%: £78 × 1.4 = £109.20.", "1.4", "Rush orders carry a 40% surcharge.") \
        == "1.4 is the multiplier of the stated 40% (as a share, 1 minus or 1 plus it)"
    assert how("15% off: $34 × 0.75 = $25.50 per player.", "0.75", ev) is None
