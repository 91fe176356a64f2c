"""Derived numbers: a value an answer computes from values it states (differences, sums, changes).

What it is for: comparison answers state two grounded values and what follows from them
("从每晚 600 元提高到 750 元，提高了 150 元", "up CNY 4.8 million (about 24%)"). The computed
value is in no passage, yet it is supported when the arithmetic holds. :func:`derivation`
checks a number against, for every pair ``a, b`` of grounded quantities in compatible units:

- the difference ``|a - b|`` and the sum ``a + b`` (same unit as the number);
- the change ``|a - b| / b`` and ``|a - b| / a`` as a percentage, and ``a / b`` as a
  percentage (when the number is a percentage and ``a, b`` are not);
- the ratio ``a / b`` (a number without unit: "2 倍", "3 times");
- the sum of all grounded quantities in the number's unit ("合计");
- a share of an amount: ``38% x $5.0 billion`` for "about $1.9 billion"; a count times an
  amount: ``4 x 0.25 克`` for "1 克";
- a bound or approximation a grounded value satisfies: "不到一小时" (58 minutes), "nearly
  two-fifths" (38%), "四亿多元" (4.5亿: at least 4亿, under 5亿) - the target is read as an
  interval (:func:`_interval`) and the arithmetic above must land in it;
- the count of the items the claim lists after it ("three cities: A, B and C");
- the gap between the claim's dates around it ("开幕（4月12日），一周后移至宜兴（4月19日）"), in
  either order;
- clock arithmetic, gaps between evidence dates, rates times quantities, named totals, share
  words of the claim's amount and zero fees: see :mod:`evalkit.judges.computed`;
- two steps at most: a value of the same claim that follows in one step is an operand too.

Tolerance: the number's own rounding (half its last written digit: ``7.9%`` for 7.895%);
a hedged number ("约", "about", "roughly", "左右") may be off by 5% or half a unit of its
last digit, whichever is larger. A wrong computation ("下降 300 万元" for 3,420 - 3,150)
stays unsupported.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from datetime import date
from itertools import permutations

from evalkit.judges.computed import clock, evidence_date_gap, evidence_share, evidence_total, free_zero, rate_times
from evalkit.judges.dates import find_dates
from evalkit.judges.quantities import SECONDS, Quantity, find_quantities, quantities_match
from evalkit.judges.values import Atom, extract_atoms

__all__ = ["derivation"]

_HEDGE_BEFORE = re.compile(r"(?:about|around|roughly|approximately|approx\.?|nearly|almost|some|~|约|大约|大概|近|将近|接近)"
                           r"\s*(?:[A-Z]{3}\s?|[$¥€£])?$", re.IGNORECASE)
_HEDGE_AFTER = re.compile(r"^\s*(?:左右|上下)")
_UNIT_BEFORE = r"\s*(?:[A-Z]{3}\s?|[$¥€£])?$"
# bounds: the value is at most / at least the number ("不到一小时", "less than an hour", "over 50 minutes")
_AT_MOST = re.compile(r"(?:less than|fewer than|under|below|no more than|at most|不到|不足|少于|低于|未满|不超过)"
                      + _UNIT_BEFORE, re.IGNORECASE)
_AT_LEAST = re.compile(r"(?:more than|over|above|at least|超过|逾|多于|高于|不少于)" + _UNIT_BEFORE, re.IGNORECASE)
_NEARLY = re.compile(r"(?:nearly|almost|近|将近|接近)" + _UNIT_BEFORE, re.IGNORECASE)
_AT_MOST_AFTER = re.compile(r"^\s*(?:以内|以下|之内)")
_AT_LEAST_AFTER = re.compile(r"^\s*以上")
# units whose evidence gaps are not what an answer computes: the ends of a range (-10°C ~ 60°C),
# percentages (a change of a share is in points); durations are left out too (36 - 24 months)
_NO_GAP = frozenset({None, "c", "deg", "%"})


def _same_unit(a: Quantity, b: Quantity) -> bool:
    if a.kind != b.kind:
        return False
    return a.kind == "duration" or a.unit == b.unit or a.unit is None or b.unit is None


def _fmt(q: Quantity) -> str:
    return q.text.strip()


def _interval(t: Quantity, text: str, start: int, end: int) -> tuple[float, float, str]:
    """The values the number ``t`` (at ``text[start:end]``) allows, and how it reads them.

    Readings: "at most" / "at least" (wide), "place" (四亿多), "nearly", "rounded" (a value,
    hedged or not; a hedged fraction word reads as "nearly").

    A bound is not a value: "不到一小时" allows 30 to 60 minutes, "over 50" 50 to 100 (a bound
    that far from the value would not be written), "四亿多" 4亿 up to 5亿 (its last digit's
    place), "nearly 40" 5% below it up to it; a fraction word ("nearly two-fifths") is as
    coarse as its denominator. Otherwise: the number's rounding, and 5% more when hedged ("约", "about").
    """
    v, before, after = t.value, text[:start], text[end:]
    place = (t.step or 1.0) * (t.value / t.raw if t.raw else 1.0)  # the step in the value's unit
    fraction = t.unit == "%" and bool(re.search(r"分之|[a-z]-?(?:third|quarter|fourth|fifth|sixth|seventh|eighth|"
                                                r"ninth|tenth)", t.text, re.IGNORECASE))
    if _AT_MOST.search(before) or _AT_MOST_AFTER.match(after):
        return v / 2, v, "at most"
    if re.search(r"[多余]", t.text) or re.match(r"\s*[多余]", after):
        return v, v + place - 1e-9 * abs(v), "place"  # 四亿多元, 四十余人
    if _AT_LEAST.search(before) or _AT_LEAST_AFTER.match(after):
        return v, 2 * v, "at least"
    if _NEARLY.search(before):
        return v - (place / 2 if fraction else 0.05 * abs(v)), v, "nearly"
    hedged = bool(_HEDGE_BEFORE.search(before) or _HEDGE_AFTER.match(after))
    tol = max(t.step / 2, 1e-9 * max(1.0, abs(v)))
    if hedged:
        tol = max(tol, 0.05 * abs(v), 0.5 * (t.step or 1.0), place / 2 if fraction else 0.0)
    return v - tol - 1e-12, v + tol + 1e-12, "nearly" if hedged and fraction else "rounded"


# a list the claim introduces with a colon: "three cities: Tromsø (...), Bodø (...) and Narvik (...)"
_LIST_INTRO = re.compile(r"^(?:\s*[A-Za-z-]+){0,3}\s*[:：]|^[^\s，。；：:,]{0,4}[:：]")
_LIST_SEP = re.compile(r"\s*(?:,|;|，|；|、|\band\b|\bor\b|以及|及|和|与)\s*")
_PARENS = re.compile(r"\([^()]*\)|（[^（）]*）")


def _listed_count(t: Quantity, text: str, end: int) -> str | None:
    """The count ``t`` when it is the number of items the claim lists right after it, or None."""
    intro = _LIST_INTRO.match(text[end:])
    if t.kind != "number" or t.unit is not None or not intro or t.value != int(t.value) or t.value < 2:
        return None
    listed = re.split(r"[.。!?！？]\s*$|[.。](?:\s|$)", _PARENS.sub("", text[end + intro.end():]))[0]
    items = [x for x in _LIST_SEP.split(listed) if x.strip(" \t\"'“”")]
    return f"{_fmt(t)} = the {len(items)} items listed" if len(items) == t.value else None


def _date_gap(t: Quantity, text: str, start: int, end: int) -> str | None:
    """The duration ``t`` when it is the gap between the claim's dates before and after it, or None.

    "先在湖州开幕（4月12日），一周后移至宜兴（4月19日）": 19 - 12 = 7 days; the dates themselves
    are checked as atoms. A date without a year is taken in the other's year.
    """
    if t.kind != "duration":
        return None
    dates = [d for d in find_dates(text) if len(d.values) == 1 and d.values[0].month and d.values[0].day]
    before = [d.values[0] for d in dates if d.end <= start]
    after = [d.values[0] for d in dates if d.start >= end]
    if not before or not after:
        return None
    a, b = before[-1], after[0]
    year_a, year_b = a.year or b.year or 2001, b.year or a.year or 2001
    # either order: "released 2 June 2024, 19 days after 2.4.0 came out on 14 May 2024"
    days = abs((date(year_b, b.month, b.day) - date(year_a, a.month, a.day)).days)
    if days > 0 and abs(days * 86400 - t.value) <= max(0.03 * t.value, SECONDS["d"] / 2):
        return f"{_fmt(t)} = {a} to {b}"
    return None


def _bounded(t: Quantity, text: str, operands: Sequence[Atom], fits: Callable[[float], bool]) -> str | None:
    """The bound ``t`` when a value of this claim that ``operands`` state satisfies it, or None.

    "最快运行时间为58分钟，不到一小时", "nearly two-fifths (38%)": the claim's own value, which is
    checked as an atom of its own; another sentence's value is about something else.
    """
    stated = [a.quantity for a in operands if a.quantity is not None and a.kind in ("number", "duration")]
    for q in find_quantities(text):
        if (q.start, q.text) == (t.start, t.text) or q.kind != t.kind or (q.kind == "number" and q.unit != t.unit):
            continue
        if fits(q.value) and any(quantities_match(q, e) for e in stated):
            return f"{_fmt(t)} bounds {_fmt(q)}"
    return None


def _ordinal(text: str, q: Quantity) -> bool:
    """Whether ``q`` numbers a phase, tier or rank rather than counts ("二期64400元", "第一档", "No. 2")."""
    return bool(re.search(r"(?:第|No\.?\s?|#)$", text[:q.start]) or re.match(r"[期档级代号届]", text[q.end:q.end + 1]))


def _count_times(t: Quantity, counts: Sequence[Quantity], amounts: Sequence[Quantity],
                 fits: Callable[[float], bool]) -> str | None:
    """``t`` as a whole count (2 or more, no unit) times an amount in ``t``'s unit, or None."""
    for c in counts:
        if c.kind != "number" or c.unit is not None or c.value != int(c.value) or c.value < 2:
            continue
        for b in amounts:
            if b.kind == t.kind and b.unit == t.unit and fits(c.value * b.value):
                return f"{_fmt(t)} = {_fmt(c)} x {_fmt(b)}"
    return None


def derivation(target: Atom, operands: Sequence[Atom], text: str = "", *, stated: bool = False) -> str | None:
    """How ``target`` (a number of a claim in ``text``) follows from ``operands``, or None.

    One operation (:func:`_derive`), or two: a value of the same claim that itself follows from
    ``operands`` in one operation is an operand too ("总产量由6万吨增至6.6万吨，增加0.6万吨", with
    6万吨 = 12万亩 x 500公斤); never more, so that a wrong number rarely fits by chance.
    """
    how = _derive(target, operands, text, stated)
    if how or stated or not text:
        return how
    # amounts in a unit only: a chain of bare counts or clock times fits a wrong number too easily
    # ("3-4 on aggregate": 4 = 3 + 1; "the 7:10 train": 06:55 + 15 minutes)
    if target.quantity is None or target.kind == "time" or (target.kind == "number" and not target.quantity.unit):
        return None
    others = [a for a in extract_atoms(text, entities=False) if a.quantity is not None and a.start != target.start
              and a.kind in ("number", "duration") and (a.kind == "duration" or a.quantity.unit)
              and not any(o.quantity is not None and quantities_match(a.quantity, o.quantity) for o in operands)]
    # exact values only: a bound ("at least 120") says too little to compute with
    derived = [a for a in others if _interval(a.quantity, text, a.start, a.end)[2] == "rounded"
               and _derive(a, operands, text, False)]
    if derived and (how := _derive(target, list(operands) + derived, text, False)):
        return f"{how} (with {', '.join(_fmt(a.quantity) for a in derived)} derived)"
    return None


def _from_evidence(t: Quantity, text: str, evidence: Sequence[Atom], fits: Callable[[float], bool],
                   reading: str) -> str | None:
    """``t`` computed from the evidence's own values: few candidates, each fitted to ``t``'s rounding.

    A share word times the claim's amount (also for a bound: the cap itself); for a plain value,
    the length of a time range, days between two full dates, a named total, and the claim's
    quantity times a rate only the evidence states ("按500公斤计，铁路快运600元").
    """
    if how := evidence_share(t, text, evidence):
        return how
    if reading != "rounded":
        return None
    rates = [a.quantity for a in evidence if a.kind == "number" and a.quantity is not None]
    return (clock(t, evidence, fits, stated=True) or evidence_date_gap(t, evidence, fits)
            or evidence_total(t, text, evidence, fits) or rate_times(t, text, rates, fits))


def _derive(target: Atom, operands: Sequence[Atom], text: str, stated: bool) -> str | None:
    """How ``target`` (a number of a claim in ``text``) follows from ``operands`` in one operation, or None.

    ``operands`` are atoms whose quantities the evidence grounds; the result names the
    arithmetic, e.g. ``"270 万元 = 3,420 万元 - 3,150 万元"``. ``stated=True``: the operands
    are the evidence's own quantities, which the answer need not repeat ("第三季度比第二季度少
    270 万元" against two reports); then only a difference or a percentage change of two
    numbers in one explicit unit counts (money, units such as TOPS or mAh; not bare counts,
    durations, temperatures or percentages), and the target must have a unit too: what a
    comparison answer computes, nothing looser.
    """
    t = target.quantity
    if t is None or target.kind not in ("number", "duration", "time"):
        return None
    lo, hi, reading = _interval(t, text, target.start, target.end)

    def fits(x: float) -> bool:
        return lo <= x <= hi

    if reading != "rounded" and t.kind != "time" and (how := _bounded(t, text, operands, fits)):
        return how
    how = _from_evidence(t, text, operands, fits, reading) if stated else free_zero(t, text) or clock(t, operands, fits)
    if how or t.kind == "time":
        return how
    if stated and (target.kind != "number" or not t.unit or reading.startswith("at ")):
        return None  # a wide bound ("超过 5,000 元") would fit some gap of two unrelated evidence numbers

    qs = [a.quantity for a in operands if a.quantity is not None and a.kind in ("number", "duration")
          and a.quantity is not t and (not stated or (a.kind == "number" and a.quantity.unit not in _NO_GAP))]
    pct = t.kind == "number" and t.unit == "%"
    if not stated and (how := _listed_count(t, text, target.end) or _date_gap(t, text, target.start, target.end)):
        return how
    # a count the claim states times an amount: "每日最多 4 片，即 1 克" (0.25 克 a tablet, in the evidence);
    # with the amount from the evidence only, the count must be right before the number ("4 片，即")
    counts = qs if not stated else [q for q in find_quantities(text[:target.start])
                                    if len(text[q.end:target.start].strip()) <= 8 and not _ordinal(text, q)]
    if t.unit and (how := _count_times(t, counts, qs, fits)):
        return how
    if not stated and (how := rate_times(t, text, qs, fits)):
        return how
    for a, b in permutations(qs, 2):
        if not stated and not pct and a.unit == "%" and b.unit == t.unit and b.kind == t.kind and fits(a.value * b.value / 100):
            return f"{_fmt(t)} = {_fmt(a)} x {_fmt(b)}"  # "about $1.9 billion of $5.0 billion" (38%)
        if not _same_unit(a, b) or (stated and (a.unit != b.unit or a.unit == "%")):
            continue
        if stated:
            if pct and b.value and fits(abs(a.value - b.value) / b.value * 100):
                return f"{_fmt(t)} = |{_fmt(a)} - {_fmt(b)}| / {_fmt(b)} (both in the evidence)"
            if not pct and a.unit == t.unit and a.value > b.value and fits(a.value - b.value):
                return f"{_fmt(t)} = {_fmt(a)} - {_fmt(b)} (both in the evidence)"
            continue
        if _same_unit(a, t) and not (pct and a.unit != "%"):
            if a.value > b.value and fits(a.value - b.value):
                return f"{_fmt(t)} = {_fmt(a)} - {_fmt(b)}"
            if fits(a.value + b.value) and a.value >= b.value:
                return f"{_fmt(t)} = {_fmt(a)} + {_fmt(b)}"
        if pct and (a.unit != "%" or b.unit != "%") and b.value:
            if fits(abs(a.value - b.value) / b.value * 100):
                return f"{_fmt(t)} = |{_fmt(a)} - {_fmt(b)}| / {_fmt(b)}"
            if fits(a.value / b.value * 100):
                return f"{_fmt(t)} = {_fmt(a)} / {_fmt(b)}"
        if t.kind == "number" and t.unit is None and b.value and a.value > b.value and a.unit == b.unit:
            if fits(a.value / b.value):
                return f"{_fmt(t)} = {_fmt(a)} / {_fmt(b)}"
    same = [q for q in qs if _same_unit(q, t) and not (pct and q.unit != "%")]
    if not stated and len(same) >= 3 and fits(sum(q.value for q in same)):
        return f"{_fmt(t)} = " + " + ".join(_fmt(q) for q in same)
    return None
