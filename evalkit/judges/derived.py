"""Derived numbers: a value an answer computes from values it states (differences, sums, changes).

What it is for: comparison answers state two grounded values and what follows from them
("从每晚 600 元提高到 750 元，提高了 150 元", "up CNY 4.8 million (about 24%)"). The computed
value is in no passage, yet it is supported when the arithmetic holds. :func:`derivation`
checks a number against, for every pair ``a, b`` of grounded quantities in compatible units:

- the difference ``|a - b|`` and the sum ``a + b`` (same unit as the number);
- the change ``|a - b| / b`` and ``|a - b| / a`` as a percentage, and ``a / b`` as a
  percentage (when the number is a percentage and ``a, b`` are not);
- the ratio ``a / b`` (a number without unit: "2 倍", "3 times");
- the sum of all grounded quantities in the number's unit ("合计").

Tolerance: the number's own rounding (half its last written digit: ``7.9%`` for 7.895%);
a hedged number ("约", "about", "roughly", "左右") may be off by 5% or half a unit of its
last digit, whichever is larger. A wrong computation ("下降 300 万元" for 3,420 - 3,150)
stays unsupported.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from itertools import permutations

from evalkit.judges.quantities import Quantity
from evalkit.judges.values import Atom

__all__ = ["derivation"]

_HEDGE_BEFORE = re.compile(r"(?:about|around|roughly|approximately|approx\.?|nearly|almost|some|~|约|大约|大概|近|将近|接近)"
                           r"\s*(?:[A-Z]{3}\s?|[$¥€£])?$", re.IGNORECASE)
_HEDGE_AFTER = re.compile(r"^\s*(?:左右|上下)")
# units whose evidence gaps are not what an answer computes: the ends of a range (-10°C ~ 60°C),
# percentages (a change of a share is in points); durations are left out too (36 - 24 months)
_NO_GAP = frozenset({None, "c", "deg", "%"})


def _same_unit(a: Quantity, b: Quantity) -> bool:
    if a.kind != b.kind:
        return False
    return a.kind == "duration" or a.unit == b.unit or a.unit is None or b.unit is None


def _close(target: float, value: float, step: float, hedged: bool) -> bool:
    tol = max(step / 2, 1e-9 * max(1.0, abs(value)))
    if hedged:
        tol = max(tol, 0.05 * abs(value), 0.5 * (step or 1.0))
    return abs(target - value) <= tol + 1e-12


def _fmt(q: Quantity) -> str:
    return q.text.strip()


def derivation(target: Atom, operands: Sequence[Atom], text: str = "", *, stated: bool = False) -> str | None:
    """How ``target`` (a number of a claim in ``text``) follows from ``operands``, or None.

    ``operands`` are atoms whose quantities the evidence grounds; the result names the
    arithmetic, e.g. ``"270 万元 = 3,420 万元 - 3,150 万元"``. ``stated=True``: the operands
    are the evidence's own quantities, which the answer need not repeat ("第三季度比第二季度少
    270 万元" against two reports); then only a difference or a percentage change of two
    numbers in one explicit unit counts (money, units such as TOPS or mAh; not bare counts,
    durations, temperatures or percentages), and the target must have a unit too: what a
    comparison answer computes, nothing looser.
    """
    t = target.quantity
    if t is None or target.kind not in ("number", "duration") or (stated and (target.kind != "number" or not t.unit)):
        return None
    hedged = bool(_HEDGE_BEFORE.search(text[:target.start]) or _HEDGE_AFTER.match(text[target.end:]))
    step = t.step or 0.0
    qs = [a.quantity for a in operands if a.quantity is not None and a.kind in ("number", "duration")
          and a.quantity is not t and (not stated or (a.kind == "number" and a.quantity.unit not in _NO_GAP))]
    pct = t.kind == "number" and t.unit == "%"
    for a, b in permutations(qs, 2):
        if not _same_unit(a, b) or (stated and (a.unit != b.unit or a.unit == "%")):
            continue
        if stated:
            if pct and b.value and _close(t.value, abs(a.value - b.value) / b.value * 100, step, hedged):
                return f"{_fmt(t)} = |{_fmt(a)} - {_fmt(b)}| / {_fmt(b)} (both in the evidence)"
            if not pct and a.unit == t.unit and a.value > b.value and _close(t.value, a.value - b.value, step, hedged):
                return f"{_fmt(t)} = {_fmt(a)} - {_fmt(b)} (both in the evidence)"
            continue
        if _same_unit(a, t) and not (pct and a.unit != "%"):
            if a.value > b.value and _close(t.value, a.value - b.value, step, hedged):
                return f"{_fmt(t)} = {_fmt(a)} - {_fmt(b)}"
            if _close(t.value, a.value + b.value, step, hedged) and a.value >= b.value:
                return f"{_fmt(t)} = {_fmt(a)} + {_fmt(b)}"
        if pct and (a.unit != "%" or b.unit != "%") and b.value:
            if _close(t.value, abs(a.value - b.value) / b.value * 100, step, hedged):
                return f"{_fmt(t)} = |{_fmt(a)} - {_fmt(b)}| / {_fmt(b)}"
            if _close(t.value, a.value / b.value * 100, step, hedged):
                return f"{_fmt(t)} = {_fmt(a)} / {_fmt(b)}"
        if t.kind == "number" and t.unit is None and b.value and a.value > b.value and a.unit == b.unit:
            if _close(t.value, a.value / b.value, step, hedged):
                return f"{_fmt(t)} = {_fmt(a)} / {_fmt(b)}"
    same = [q for q in qs if _same_unit(q, t) and not (pct and q.unit != "%")]
    if not stated and len(same) >= 3 and _close(t.value, sum(q.value for q in same), step, hedged):
        return f"{_fmt(t)} = " + " + ".join(_fmt(q) for q in same)
    return None
