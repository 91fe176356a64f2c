"""Computed values beyond differences and shares: clock arithmetic, date gaps, rates, totals, zero fees.

What it is for: :func:`evalkit.judges.derived.derivation` asks these rules when a number of a
claim is in no passage. Each names the arithmetic it found, or returns None:

- :func:`clock`: a time the claim reaches by adding a duration to a time it states ("the 06:40
  shuttle ... the 15-minute ride ... at 06:55"), or a duration between two times it states;
  a duration that is the length of a time range the evidence gives ("8:00-10:00": two hours);
- :func:`evidence_date_gap`: a number of days between two full dates of the evidence ("19
  days after 2.4.0" for 2024-05-14 and 2024-06-02);
- :func:`rate_times`: a quantity the claim states (in any unit, the question's "500 公斤"
  too) times a rate in the target's unit the claim or only the evidence states
  ("500公斤×1.2元＝600元", "按500公斤计，铁路快运600元");
- :func:`evidence_total`: a total ("合计", "in total") of two evidence amounts of one unit
  ("两项合计 1,250 元" for 800 元 and 450 元); of two bare counts only when the claim names two
  parts ("两期住宅总量为780套"): otherwise they fit too often by chance;
- :func:`evidence_share`: a share word the evidence states of an amount the evidence and the claim
  state (or any amount, when the claim names the share word too: "老人半价为30元"), exactly ("at most 60 of the 180 credits" for "up to one third of" 180: the cap itself);
- :func:`free_zero`: a zero amount of a claim that itself says the fee is waived or free.

Bounds, against wrong numbers matching by chance: one operation each, with operands the claim
states and the evidence grounds (a rate's other factor may be the question's), except the date
gap, range length, total, share word and rate, whose operands are (partly) evidence values and
which need a fit to the number's own rounding (a total also needs a totalling word next to it).
"""
from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from datetime import date
from itertools import combinations, permutations

from evalkit.judges.quantities import CURRENCIES, SECONDS, Quantity, find_quantities, quantities_match
from evalkit.judges.values import Atom

__all__ = ["clock", "evidence_date_gap", "evidence_share", "evidence_total", "free_zero", "rate_times"]

Fits = Callable[[float], bool]
_DAY = 720  # clock times are minutes modulo 12 hours


def _q(atoms: Sequence[Atom], kind: str) -> list[Quantity]:
    return [a.quantity for a in atoms if a.kind == kind and a.quantity is not None]


def clock(t: Quantity, operands: Sequence[Atom], fits: Fits, *, stated: bool = False) -> str | None:
    """``t`` as a time plus a duration, or a duration between two times (see the module docstring).

    ``stated``: the operands are evidence atoms; then only a duration that is the length of a
    range ("8:00-10:00", adjacent times) counts.
    """
    times = _q(operands, "time")
    if t.kind == "time" and not stated:
        for a in times:
            for d in _q(operands, "duration"):
                minutes = d.value / 60
                # later only: an arrival after a ride; "5:55" is not "6:10 minus a quarter of an hour" by chance
                if 0 < minutes < _DAY and minutes == int(minutes) and (a.value + minutes) % _DAY == t.value:
                    return f"{t.text.strip()} = {a.text.strip()} + {d.text.strip()}"
        return None
    if t.kind != "duration" or t.value > _DAY * 60:
        return None
    if stated:  # a range: two times with at most a dash or "to" between them
        atoms = [a for a in operands if a.kind == "time" and a.quantity is not None]
        pairs = [(a.quantity, b.quantity) for a, b in zip(atoms, atoms[1:]) if 0 <= b.start - a.end <= 4]
    else:
        pairs = list(permutations(times, 2))
    for a, b in pairs:
        gap = (b.value - a.value) % _DAY
        if gap and fits(gap * 60):
            return f"{t.text.strip()} = {a.text.strip()} to {b.text.strip()}"
    return None


def evidence_date_gap(t: Quantity, operands: Sequence[Atom], fits: Fits) -> str | None:
    """``t`` (a number of days) as the gap between two full dates of the evidence ``operands``."""
    if t.kind != "duration" or t.unit != "d":
        return None
    days = {date(v.year, v.month, v.day): a.text.strip() for a in operands if a.kind == "date" and len(a.dates) == 1
            for v in a.dates if v.year and v.month and v.day}
    for x, y in combinations(sorted(days), 2):
        if fits((y - x).days * SECONDS["d"]):
            return f"{t.text.strip()} = {days[x]} to {days[y]} (both in the evidence)"
    return None


def rate_times(t: Quantity, text: str, rates: Sequence[Quantity], fits: Fits) -> str | None:
    """``t`` as a quantity of the claim, in its own unit as written, times a grounded rate in ``t``'s unit.

    "500公斤×1.2元＝600元" (1.2 元 a kilogram), "前200度按0.5元计100元": the factor has a unit of
    its own (not a percentage, not money), so it is the amount the rate is per.
    """
    if t.kind != "number" or not t.unit or t.unit == "%":
        return None
    for a in find_quantities(text):
        if a.start == t.start or a.kind != "number" or a.raw is None or a.unit in (None, "%", t.unit) \
                or a.unit in CURRENCIES:
            continue
        for b in rates:
            if b.kind == "number" and b.unit == t.unit and b is not t and fits(a.raw * b.value):
                return f"{t.text.strip()} = {a.text.strip()} x {b.text.strip()}"
    return None


# a total the claim names next to the number: "两期住宅总量为780套", "一共 12 人", "Aggregate: Harbor City 3"
_TOTAL = re.compile(r"(?:总量|总数|总计|合计|共计|一共|总共|累计|\btotal(?:s|led)?\b|\baggregate\b|\bcombined\b)"
                    r"[^。.;；!?！？]{0,16}$", re.IGNORECASE)


# a bare count is a total of two parts only when the claim names the two: "两期住宅总量为780套", "both schools"
_TWO_PARTS = re.compile(r"两[^\d\s，。；、]{0,2}|二者|\bboth\b|\bthe two\b", re.IGNORECASE)


def evidence_total(t: Quantity, text: str, operands: Sequence[Atom], fits: Fits) -> str | None:
    """``t`` as the sum of two evidence numbers of its unit, when the claim calls it a total."""
    before = text[max(0, t.start - 24):t.start]
    total = _TOTAL.search(before)
    if t.kind != "number" or t.unit == "%" or not total or re.search(r"\d", total.group(0)):
        return None  # the total is the first number after the word, not a part listed after it
    if t.unit is None and not _TWO_PARTS.search(before):
        return None  # bare counts: "总共有13个车站" would fit 10 + 三 of two unrelated evidence numbers
    qs = [q for q in _q(operands, "number") if q.unit == t.unit and (q.unit or (q.value == int(q.value) and q.value > 1))]
    for a, b in combinations(qs, 2):
        if a.value > 0 and b.value > 0 and fits(a.value + b.value):
            return f"{t.text.strip()} = {a.text.strip()} + {b.text.strip()} (both in the evidence)"
    return None


def evidence_share(t: Quantity, text: str, operands: Sequence[Atom]) -> str | None:
    """``t`` as exactly a share word of the evidence times an amount the evidence and the claim state.

    Exact (to ``t``'s rounding), also for a bound: "at most 60" is the cap "one third of 180"
    in "at most 60 of the 180 credits". The amount must be the claim's own: "超过 5,000 元"
    is not 50% of some 10,000 元 the evidence gives for something else.
    """
    if t.kind != "number" or t.unit == "%":
        return None
    tol = max(t.step / 2, 1e-6 * max(1.0, abs(t.value)))
    qs = _q(operands, "number")
    own = [q for q in find_quantities(text) if q.start != t.start]
    # a share written in words (one third, 三分之一, 半价): "3.5亿元" is not 12.4% of 28.1亿元 by chance
    for p in (q for q in qs if q.unit == "%" and 0 < q.value < 100 and not re.search(r"\d", q.text)):
        # the claim's amount, or any amount when the claim names the share itself ("老人半价为30元")
        named = any(o.unit == "%" and o.value == p.value and not re.search(r"\d", o.text) for o in own)
        for b in (q for q in qs if q.unit == t.unit and q.value > t.value
                  and (named or any(quantities_match(o, q) for o in own))):
            if abs(p.value * b.value / 100 - t.value) <= tol:
                return f"{t.text.strip()} = {p.text.strip()} x {b.text.strip()} (both in the evidence)"
    return None


_FREE = re.compile(r"\bfree\b|\bwaived?\b|\bwaiver\b|\bno (?:fee|charge)\b|免费|免收|不收费|无需支付|不收取", re.IGNORECASE)


def free_zero(t: Quantity, text: str) -> str | None:
    """A zero amount (``$0``, ``0元``) of a claim that itself says the fee is waived or free.

    The waiver is the claim's wording, checked against the evidence like its other words;
    the zero only restates it.
    """
    free = _FREE.search(text)
    if t.kind == "number" and t.value == 0 and t.unit in CURRENCIES and free:
        return f"{t.text.strip()} = free ({free.group(0)})"
    return None
