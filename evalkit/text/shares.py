"""Shares written as words: two-fifths, 三分之一, 千分之五, half price (半价), a quarter of an hour.

What it is for: :mod:`evalkit.text.quantities` reads a share as a percentage as coarse as its
denominator ("two-fifths" 40%, step 20 points; "千分之五" 0.5%), so that "0.5%" is supported
by "千分之五" and "30 元" can be derived as a 半价 of "60 元"; a share of a time unit is a
duration ("a quarter of an hour" 15 minutes, "四分之三小时" 45 minutes).
"""
from __future__ import annotations

import re

from evalkit.text.numerals import EN_WORDS, parse_cn_number
from evalkit.text.units import DURATION_UNITS, SECONDS, unit_alternation, unit_of

__all__ = ["HALF_PRICE", "share_at"]

_DENOMINATORS = {"third": 3, "quarter": 4, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7, "eighth": 8,
                 "ninth": 9, "tenth": 10}
# "two-fifths", "a third of", "三分之一", "千分之五" (a rate per thousand, as in contracts)
_FRACTION = re.compile(
    r"(?P<num>one|two|three|four|five|six|seven|eight|nine|a)(?:-|\s+(?=\w+\s+of\b))(?P<den>"
    + "|".join(_DENOMINATORS) + r")s?(?![A-Za-z])"
    r"|(?P<cden>[二三四五六七八九十百千万])分之(?P<cnum>[一二两三四五六七八九十]{1,3})",
    re.IGNORECASE)
# a share of a time unit: "a quarter of an hour", "四分之三小时", "三分之一个小时"
_OF_UNIT = re.compile(r"(?:\s+of\s+an?\s+|个)?(?:" + unit_alternation(DURATION_UNITS) + r")(?![A-Za-z])",
                      re.IGNORECASE)
# half price: what a reduced ticket costs, a share of the full price ("凭身份证享受半价优惠", "half-price entry")
HALF_PRICE = re.compile(r"半价|half[- ]price|half the (?:full |regular )?(?:price|fare|fee)", re.IGNORECASE)


def share_at(text: str, start: int) -> tuple[str, float, int, str, float] | None:
    """The share word at ``start`` as ``(kind, value, end, unit, step)``, or None.

    A plain share is a number in "%" (its step: one part of the denominator); followed by a
    time unit it is a duration in seconds ("a quarter of an hour": 900, unit "h").
    """
    m = _FRACTION.match(text, start)
    if m is None:
        return None
    if m.group("den"):
        num = 1.0 if m.group("num").lower() == "a" else float(EN_WORDS[m.group("num").lower()])
        den = float(_DENOMINATORS[m.group("den").lower()])
    else:
        cden = m.group("cden")
        den = float({"百": 100, "千": 1000, "万": 10_000}.get(cden) or parse_cn_number(cden) or 1)
        num = float(parse_cn_number(m.group("cnum")) or 0)
    if not 0 < num < den:
        return None
    unit = _OF_UNIT.match(text, m.end())
    code = unit_of(unit, DURATION_UNITS) if unit else None
    if unit and code in SECONDS and code not in ("wd", "mo", "y"):  # a code comes from a unit
        return "duration", num / den * SECONDS[code], unit.end(), code, 0.0
    return "number", 100 * num / den, m.end(), "%", 100 / den
