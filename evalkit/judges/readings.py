"""How a number an answer writes is read: its rounding, a hedge ("about", 约) and a bound ("under an hour", 以上).

What it is for: :mod:`evalkit.judges.reach` compares a value it derives with the values a
claim's number allows; "约 15%" allows more than "15.2%", "不到一小时" allows 30 to 60
minutes. :func:`interval` says which.
"""
from __future__ import annotations

import re

from evalkit.text.quantities import Quantity

__all__ = ["interval"]

_HEDGE_BEFORE = re.compile(r"(?:about|around|roughly|approximately|approx\.?|nearly|almost|some|~|约|大约|大概|近|将近|接近)"
                           r"\s*(?:[A-Z]{3}\s?|[$¥€£])?$", re.IGNORECASE)
_HEDGE_AFTER = re.compile(r"^\s*(?:左右|上下)")
_UNIT_BEFORE = r"\s*(?:[A-Z]{3}\s?|[$¥€£])?$"
# bounds: the value is at most / at least the number ("不到一小时", "less than an hour", "over 50 minutes")
_AT_MOST = re.compile(r"(?:(?<!no )less than|(?<!no )fewer than|under|below|no more than|at most|不到|不足|少于|低于|未满|不超过)"
                      + _UNIT_BEFORE, re.IGNORECASE)
_AT_LEAST = re.compile(r"(?:no less than|no fewer than|(?<!no )more than|over|above|at least|超过|逾|多于|高于|不少于)" + _UNIT_BEFORE, re.IGNORECASE)
_NEARLY = re.compile(r"(?:nearly|almost|近|将近|接近)" + _UNIT_BEFORE, re.IGNORECASE)
_AT_MOST_AFTER = re.compile(r"^\s*(?:以内|以下|之内)")
_AT_LEAST_AFTER = re.compile(r"^\s*以上")


def interval(t: Quantity, text: str, start: int, end: int) -> tuple[float, float, str]:
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
