"""evalkit.judges.chains: two operations on three stated values, recomputed by brute force.

The search is vectorised (numpy intervals per second operation); the reference here tries every
ordered choice of three operands and both operations with plain Python floats and the same unit
rules, so a bug in the intervals (a sign, a division by a negative, a missed ``c - (a op b)``) shows
as a disagreement on random operand sets. Then the judge's use of it: where the answer computes,
or (judge v23) in a plain claim whose answer states an operand of its unit, when few values as
precise as it near it fit too (:func:`nearby_fits`, recomputed with the brute force); never for a
small bare count, never ``supported``.
"""
from __future__ import annotations

import itertools
import random

import pytest

from evalkit.judges.chains import NEARBY, nearby_fits, two_steps
from evalkit.judges.grounding import analyse
from evalkit.judges.offline import OfflineJudge
from evalkit.judges.reach import reach
from evalkit.text.values import extract_atoms


def _unit(op: str, ua: str | None, ub: str | None) -> str | None | bool:
    """The unit rules of the module docstring, written out case by case."""
    if op in ("+", "-"):
        return ua if ua == ub else False
    if op == "x":
        if ua is not None and ub is not None:
            return False
        return ua if ua is not None else ub
    if ua == ub:  # "/"
        return None
    return ua if ub is None else False


def _apply(op: str, x: float, y: float) -> float | None:
    if op == "/":
        return x / y if y else None
    return {"+": x + y, "-": x - y, "x": x * y}[op]


def brute(lo: float, hi: float, unit: str | None, operands: list[tuple[float, str | None]]) -> bool:
    """Whether any (a op b) op c or c - (a op b) of three operands (a and b different values) lands in
    [lo, hi] in ``unit``."""
    ops = [o for o in operands if o[0] not in (0.0, 1.0)]
    for (a, ua), (b, ub) in itertools.permutations(ops, 2):
        if a == b and ua == ub:
            continue
        for op in ("+", "-", "x", "/"):
            us = _unit(op, ua, ub)
            s = _apply(op, a, b)
            if us is False or s is None:
                continue
            for c, uc in ops:
                for op2 in ("+", "-", "x", "/", "from"):
                    if _unit("-" if op2 == "from" else op2, us, uc) != unit:
                        continue
                    if op2 == "/" and not c > 0:
                        continue
                    r = c - s if op2 == "from" else _apply(op2, s, c)
                    if r is not None and lo <= r <= hi:
                        return True
    return False


def test_an_answer_total_of_a_product_and_a_stated_amount_is_found_and_named():
    ops = [(40.0, None, "40"), (38.0, "usd", "$38"), (4350.0, "usd", "$4,350"), (16.0, None, "16")]
    assert two_steps(5869.5, 5870.5, [1.0], "usd", ops) == "(40 x $38) + $4,350"
    assert two_steps(5999.5, 6000.5, [1.0], "usd", ops) is None  # no three of them make 6,000


def test_units_must_fit_like_an_accountants():
    # dollars times dollars, a percentage plus a count: no derivation
    assert two_steps(9.59, 9.61, [1.0], "%", [(-2.0, None, "-2"), (6.8, "%", "6.8%"), (2.0, None, "2")]) is None
    dollars = [(4.0, "usd", "$4"), (20.0, "usd", "$20"), (3.0, "usd", "$3")]
    assert two_steps(80.0, 80.0, [1.0], "usd", dollars) is None  # 20 x 4 would be dollars squared
    assert two_steps(15.0, 15.0, [1.0], "usd", dollars) in ("($20 / $4) x $3", "($3 / $4) x $20")  # a bare ratio
    # a share of a difference keeps the unit: (500 - 100) x 0.2 = 80 dollars
    assert two_steps(79.99, 80.01, [1.0], "usd", [(500.0, "usd", "$500"), (100.0, "usd", "$100"),
                                                   (0.2, None, "20%")]) == "($500 - $100) x 20%"


def test_a_third_value_less_the_first_step():
    # 1,000 - (3 x 150) = 550: c - (a op b)
    got = two_steps(549.5, 550.5, [1.0], "cny", [(3.0, None, "3"), (150.0, "cny", "150元"), (1000.0, "cny", "1,000元")])
    assert got == "1,000元 - (3 x 150元)"


def test_zeros_and_ones_are_no_operands():
    assert two_steps(6.99, 7.01, [1.0], None, [(1.0, None, "1"), (3.0, None, "3"), (4.0, None, "4")]) is None


def test_the_vectorised_search_agrees_with_brute_force_on_random_operands():
    rng = random.Random(31)
    units = [None, "usd", "%"]
    agree = found = 0
    for _ in range(400):
        ops = [(float(rng.choice([rng.randint(2, 60), round(rng.uniform(0.1, 500), 2)])), rng.choice(units))
               for _ in range(rng.randint(3, 6))]
        unit = rng.choice(units)
        if rng.random() < 0.5:  # a target some three of them make, half the time
            (a, ua), (b, ub), (c, _) = rng.sample(ops, 3)
            target = (a + b) * c if rng.random() < 0.5 else (a - b) - c
        else:
            target = round(rng.uniform(-100, 5000), 2)
        lo, hi = target - 0.005, target + 0.005
        fast = two_steps(lo, hi, [1.0], unit, [(v, u, f"{v}{u or ''}") for v, u in ops]) is not None
        slow = brute(lo, hi, unit, ops)
        agree += fast == slow
        found += slow
    assert agree == 400
    assert 10 <= found <= 390  # both outcomes were exercised


def _how(claim: str, target: str, *evidence: str, question: str = "", computed: bool = True) -> str | None:
    atoms = analyse(claim).atoms
    (t,) = [a for a in atoms if a.text.strip() == target]
    stated = [a for e in evidence for a in extract_atoms(e, entities=False)]
    return reach(t, claim, stated, [*evidence, question], list(atoms), question, computed=computed)


GENOMICS = ("Whole-exome library preparation is $38 per sample and a sequencing lane is $1,450.",
            "Each lane holds up to 16 exome samples.")


def test_reach_uses_two_steps_only_where_the_answer_computes():
    claim = "Expect about $5,870 in total for the 40 samples with 3 lanes."
    got = _how(claim, "$5,870", *GENOMICS)
    assert got is not None and "two steps" in got, got
    assert _how(claim, "$5,870", *GENOMICS, computed=False) is None


def test_a_small_bare_count_is_not_reached_in_two_steps():
    # (5 + 13) - 2 = 16 fits by chance; a count under 100 without a unit is left to the other rules
    claim = "序列号共 16 位，前 5 位是型号。"
    assert _how(claim, "16", "型号代码 13 位，校验码 2 位。") is None


@pytest.fixture(scope="module")
def judge() -> OfflineJudge:
    return OfflineJudge()


def test_a_two_step_total_is_unverified_never_supported(judge):
    q = "We want whole-exome sequencing for 40 samples. What will it cost?"
    ev = [("price-list", "Library preparation is $38 per sample."),
          ("quote", "Sequencing is billed as a flat $4,350 for a three-lane run.")]
    right = judge.judge(q, "Library preparation for 40 samples plus the flat sequencing run comes to $5,870 in total.", ev)
    wrong = judge.judge(q, "Library preparation for 40 samples plus the flat sequencing run comes to $5,910 in total.", ev)
    total_right = [c for c in right.claims if "5,870" in c.claim]
    assert total_right and all(c.verdict == "unverified" and "two steps" in c.reason for c in total_right), right
    assert all(c.verdict != "supported" for c in wrong.claims if "5,910" in c.claim), wrong


def test_a_plain_short_answer_with_a_wrong_figure_stays_unsupported(judge):
    # no word or sign of a computation: the two-step search is not tried, the value is absent
    q = "How much is a sequencing lane?"
    ev = [("price-list", GENOMICS[0]), ("faq", GENOMICS[1])]
    (c,) = judge.judge(q, "A sequencing lane is $1,475.", ev).claims
    assert c.verdict == "unsupported", c


def test_the_share_of_nearby_values_the_search_fits_agrees_with_brute_force():
    rng = random.Random(23)
    for _ in range(60):
        ops = [(float(rng.choice([rng.randint(2, 60), rng.randint(100, 900) * 10])), rng.choice([None, "usd"]))
               for _ in range(rng.randint(3, 5))]
        target, spacing = float(rng.randint(50, 600) * 10), 10.0
        shifts = [k * spacing for k in range(-NEARBY, NEARBY + 1) if k]
        slow = sum(brute(target - 0.5 + d, target + 0.5 + d, "usd", ops) for d in shifts) / len(shifts)
        fast = nearby_fits(target - 0.5, target + 0.5, spacing, [1.0], "usd", [(v, u, str(v)) for v, u in ops])
        assert fast == pytest.approx(slow), (ops, target)
    # shifts below zero are not tried: of 30 +- 8 x 10 only the eight above it and 10 and 20 below it
    assert nearby_fits(29.5, 30.5, 10.0, [1.0], "usd", [(2.0, None, "2"), (5.0, "usd", "$5"), (3.0, None, "3")]) \
        == pytest.approx(sum(brute(29.5 + d, 30.5 + d, "usd", [(2.0, None), (5.0, "usd"), (3.0, None)])
                             for d in (-20, -10, 10, 20, 30, 40, 50, 60, 70, 80)) / 10)


CAMP = ("Summer camp fee: $4,980 per child, including meals and transport.",
        "Early-bird offer: $300 off for registrations before 1 July. Group offer: a further $200 off per child "
        "when three pupils from one school register together.")
CAMP_ZH = ("研学营收费标准：每人4,980元，含食宿和交通。", "7月1日前报名享早鸟优惠，每人减300元；同校3人及以上同报，每人再减200元。")


@pytest.mark.parametrize("claim, target, evidence", [
    ("With the $300 early-bird reduction and the $200 group reduction, each child pays $4,480.", "$4,480", CAMP),
    ("早鸟优惠减300元，同校同报再减200元，每人实缴4,480元。", "4,480元", CAMP_ZH)])
def test_a_plain_result_is_reached_in_two_steps_when_the_answer_states_its_operands_and_the_fit_is_specific(
        claim, target, evidence):
    got = _how(claim, target, *evidence, computed=False)
    assert got is not None and "specific fit: 0%" in got and "4,980 - (200 + 300)" in got, got


def test_a_plain_result_without_an_operand_a_round_one_or_a_countered_one_stays_absent():
    # the lone figure of a short answer: nothing shows the answer worked from stated values
    assert _how("Each child pays $4,480.", "$4,480", *CAMP, computed=False) is None
    # a round small figure: two steps reach $20 from small prices, and most of $10, $30, ... $100 as well
    small = [(5.0, "usd", "$5"), (3.0, "usd", "$3"), (12.0, "usd", "$12"), (4.0, None, "4"), (6.0, None, "6"),
             (2.0, None, "2")]
    assert two_steps(19.5, 20.5, [1.0], "usd", small) is not None
    assert nearby_fits(19.5, 20.5, 10.0, [1.0], "usd", small) == pytest.approx(14 / 18)
    # the evidence states another value for what the claim's clause says: that is the verdict's evidence
    # (the cost: a right result written in the words of the clause that states the price before reductions)
    fee = ("The summer camp fee is $4,980, meals and transport included.", CAMP[1])
    claim = "With the $300 and $200 reductions, the summer camp fee is $4,480."
    assert _how(claim, "$4,480", *fee, computed=False) is None
    assert _how(claim, "$4,480", *fee, computed=True) is not None  # a computing answer: two steps, as before


def test_a_fit_less_specific_than_the_bound_is_no_derivation(monkeypatch):
    import evalkit.judges.reach as reach_module
    prices = ("Tickets are $12 for adults, $7 for children and $5 for seniors.",
              "Parking is $3 a car; a guided tour adds $9 per group and a locker $2.")
    claim = "With $12 for each adult and $3 for parking, the bill is $30."
    got = _how(claim, "$30", *prices, computed=False)
    assert got is not None and "20% of the values as precise near it fit too" in got, got  # $10 ... $110 by 10
    monkeypatch.setattr(reach_module, "MAX_CHANCE", 0.15)
    assert _how(claim, "$30", *prices, computed=False) is None


def test_the_judge_reads_such_a_plain_result_as_unverified_and_a_wrong_one_as_unsupported(judge):
    q = "My daughter registered on 20 June with two classmates. What do we pay?"
    ev = [("camp", CAMP[0]), ("offers", CAMP[1])]
    lead = "With the $300 early-bird reduction and the $200 group reduction, each child pays "
    (right,) = judge.judge(q, lead + "$4,480.", ev).claims
    (wrong,) = judge.judge(q, lead + "$4,490.", ev).claims
    assert right.verdict == "unverified" and "specific fit" in right.reason, right
    assert wrong.verdict == "unsupported" and "stated plainly" in wrong.reason, wrong
