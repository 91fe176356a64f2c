"""Dates as values, in the formats people write: ISO, slashes, Chinese, English, quarters.

What it is for: ``2026-01-01``, ``2026/1/1``, ``2026年1月1日``, ``January 1, 2026``,
``1 Jan 2026`` and ``2026年元旦`` are one date; ``Q3 2025``, ``third quarter of 2025`` and
``2025年第三季度`` one quarter; ``FY2023``, ``FY23`` and ``2023财年`` the year 2023; ``每月 18 日`` and ``the 18th of each month`` a day of the month. A :class:`DateValue` keeps only the parts the text gave
(``December`` has a month, no year), and a claim's date is supported by an evidence date
that agrees on every part the claim gives (see :func:`date_supported`).
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, replace

from evalkit.text.memo import enabled
from evalkit.text.quantities import CN_NUM, parse_cn_number

__all__ = ["DateMention", "DateValue", "date_supported", "find_dates", "one_year", "with_year"]

MONTHS = {"january": 1, "jan": 1, "february": 2, "feb": 2, "march": 3, "mar": 3, "april": 4, "apr": 4,
          "may": 5, "june": 6, "jun": 6, "july": 7, "jul": 7, "august": 8, "aug": 8, "september": 9,
          "sep": 9, "sept": 9, "october": 10, "oct": 10, "november": 11, "nov": 11, "december": 12, "dec": 12}
_ORD = {"first": 1, "second": 2, "third": 3, "fourth": 4, "1st": 1, "2nd": 2, "3rd": 3, "4th": 4,
        "一": 1, "二": 2, "三": 3, "四": 4, "1": 1, "2": 2, "3": 3, "4": 4}
_HOLIDAYS = {"元旦": (1, 1), "国庆节": (10, 1), "国庆": (10, 1), "劳动节": (5, 1), "五一": (5, 1),
             "圣诞节": (12, 25), "new year's day": (1, 1), "christmas day": (12, 25), "christmas": (12, 25)}


@dataclass(frozen=True)
class DateValue:
    """A date with only the parts the text gave; ``quarter`` for "Q3 2025"-style mentions."""

    year: int | None = None
    month: int | None = None
    day: int | None = None
    quarter: int | None = None

    def __str__(self) -> str:
        if self.quarter:
            return f"{self.year or '?'}-Q{self.quarter}"
        if self.day and not self.month and not self.year:
            return f"day {self.day}"
        parts = [f"{self.year:04d}" if self.year else "????"]
        if self.month:
            parts.append(f"{self.month:02d}")
        if self.day:
            parts.append(f"{self.day:02d}")
        return "-".join(parts)


@dataclass(frozen=True)
class DateMention:
    """One date found in a text: its readings (``1/2/2026`` has two), the text and its span."""

    values: tuple[DateValue, ...]
    text: str
    start: int
    end: int


_MON = r"(?P<mon>" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"
_MON2 = _MON.replace("?P<mon>", "?P<mon2>")
_D = r"(?P<d>\d{1,2})(?:st|nd|rd|th)?"
_D2 = r"(?P<d2>\d{1,2})(?:st|nd|rd|th)?"
_Y = r"(?P<y>1[5-9]\d{2}|20\d{2})"
_CNY = r"(?P<y>\d{4}|[零〇○一二三四五六七八九]{4})"
_CNM = rf"(?P<mon>\d{{1,2}}|[{CN_NUM}]{{1,3}})"
_CND = rf"(?P<d>\d{{1,2}}|[{CN_NUM}]{{1,3}})"
_CND2 = _CND.replace("?P<d>", "?P<d2>")
_CN_TO = r"(?:至|到|-|–|~|～|—)"
_NB = r"(?<![A-Za-z0-9])"  # no ASCII letter or digit before (CJK characters are fine)
_NA = r"(?![A-Za-z0-9])"

_PATTERNS: list[re.Pattern[str]] = [re.compile(p, re.IGNORECASE) for p in (
    # Chinese: 2026年1月1日 / 一九九七年七月一日 / 2026年1月 / 12月20日 / 2026年元旦
    # and a range of days: 4月19日至20日, 4月19—20日 (the first day's 日 may be left out)
    rf"(?:{_CNY}\s*年\s*)?{_CNM}\s*月\s*{_CND}\s*(?:日|号|(?={_CN_TO}\s*[\d{CN_NUM}]{{1,3}}\s*(?:日|号)))"
    rf"(?:\s*{_CN_TO}\s*{_CND2}\s*(?:日|号))?",
    rf"{_CNY}\s*年\s*(?P<hol>元旦|国庆节|国庆|劳动节|五一|圣诞节)",
    # a day of the month: 每月 18 日, 次月 5 号, 首月的 20 日, 18 号 (not 5 日内, a duration, nor 3 号楼)
    rf"(?:每个?月的?|当月|次月|本月|下个?月|上个?月|首月的?|末月的?)\s*(?P<d>\d{{1,2}}|[{CN_NUM}]{{1,3}})\s*(?:日|号)(?!\s*(?:内|之内|以内))",
    rf"(?<![\d{CN_NUM}月.])(?P<d>\d{{1,2}})\s*号(?![楼线门院室座车口位码])",
    # not 下一季度 / 上一季度 (the next or last quarter, no quarter of the year)
    rf"(?<![下上])(?:{_CNY}\s*年\s*)?(?:第\s*)?(?P<q>[一二三四1-4])\s*季度",
    rf"{_CNY}\s*年\s*(?:Q|q)(?P<q>[1-4])",
    rf"{_CNY}\s*年\s*{_CNM}\s*月(?!\s*\d)",
    # a range of months: 4 到 6 月, 4—6 月 (each end is a month)
    rf"(?<![\d{CN_NUM}]){_CNM}\s*(?:月\s*)?(?:到|至|-|–|~|～|—)\s*(?P<mon2>\d{{1,2}}|[{CN_NUM}]{{1,3}})\s*月(?![份\d])",
    rf"(?<!个)(?<![{CN_NUM}\d]){_CNM}\s*月(?![份\d])",
    # ISO-like: 2026-01-01, 2026/1/1, 2026.1.1
    rf"{_NB}{_Y}(?P<sep>[-/.])(?P<mon>\d{{1,2}})(?P=sep)(?P<d>\d{{1,2}}){_NA}",
    # ambiguous numeric: 1/2/2026 (month/day or day/month)
    rf"{_NB}(?P<a>\d{{1,2}})[/.](?P<b>\d{{1,2}})[/.]{_Y}{_NA}",
    # ranges: 12 to 14 January 2026 / the 25th to the 27th of January / January 12-14, 2026
    rf"{_NB}(?:the\s+)?{_D}\s*(?:-|–|to|and)\s*(?:the\s+)?{_D2}\s+(?:of\s+)?{_MON}(?:,?\s+{_Y})?{_NA}",
    rf"{_NB}{_MON}\s+{_D}\s*(?:-|–|to|and)\s*{_D2}(?:,?\s+{_Y})?{_NA}",
    # the 18th of each month / by the 5th
    rf"{_NB}(?:the\s+)?{_D.replace('(?:st|nd|rd|th)?', '(?:st|nd|rd|th)')}\s+(?:day\s+)?of\s+(?:each|every|the|the\s+following|the\s+next)\s+month{_NA}",
    rf"(?:(?<=\bon )|(?<=\bby )|(?<=\bbefore )|(?<=\bafter )|(?<=\buntil ))the\s+"
    rf"{_D.replace('(?:st|nd|rd|th)?', '(?:st|nd|rd|th)')}{_NA}(?!\s+(?:of\s+)?{_MON2})",
    # 1 March 2026 / 1st of March, 2026 / March 1, 2026 / March 1st 2026
    rf"{_NB}{_D}\s+(?:of\s+)?{_MON}(?:,?\s+{_Y})?{_NA}",
    rf"{_NB}{_MON}\s+{_D}(?:,?\s+{_Y})?{_NA}",
    rf"{_NB}{_MON}(?:\s+of)?,?\s+{_Y}{_NA}",
    # quarters: Q3 2025 / 2025 Q3 / Q3 FY2025 / third quarter of 2025 / the third quarter
    rf"{_NB}{_Y}\s+Q(?P<q>[1-4]){_NA}",
    rf"{_NB}Q(?P<q>[1-4])(?:\s+(?:of\s+)?(?:FY\s?)?{_Y})?{_NA}",
    rf"{_NB}(?P<q>first|second|third|fourth|1st|2nd|3rd|4th)\s+quarter(?:\s+of)?(?:\s+(?:FY\s?)?{_Y})?{_NA}",
    rf"{_NB}(?P<hol>new year's day|christmas day|christmas)(?:,?\s+{_Y})?{_NA}",
    # a bare month name (capitalised; not "May", which is also a verb)
    r"(?<![A-Za-z])(?P<mon>January|February|March|April|June|July|August|September|October|November|December)(?![A-Za-z])",
    # a fiscal year is a year, not a code: FY2023, FY 2023, FY23, 2023财年, 2023财年度
    rf"{_NB}FY\s?'?(?P<fy>\d{{2}}|1[5-9]\d{{2}}|20\d{{2}}){_NA}",
    rf"{_CNY}\s*财年度?",
    # a year: 2025年, 二〇二一年, in 2025 (not 2,025 or 2025.5 or 2025 units)
    rf"{_CNY}\s*年(?!\s*(?:\d|[{CN_NUM}]))",
    rf"(?<![A-Za-z0-9,.$¥€£-]){_Y}(?!\d|,\d|\.\d|\s?(?:%|percent|[A-Za-z]*[Hh]ours?|units?|km|mAh|metres?|meters?|m\b|USD|元|万|亿)"
    # a count of units is not a year: 1800 seconds, 2000 MB, "1800 (seconds)" in a config table
    r"|\s?[（(]?\s?(?:milliseconds?|ms|seconds?|secs?|minutes?|mins?|days?|weeks?|months?|years?|[KMGT]B|毫秒|秒|分钟|小时|天)(?![A-Za-z])"
    # nor a number before a Chinese word other than 年 (1500公斤, 2000台, 1800套): a Chinese year says 年
    r"|\s?(?!年)[\u4e00-\u9fff])",
)]


def _num(s: str | None) -> int | None:
    if not s:
        return None
    if s.isdigit():
        return int(s)
    v = parse_cn_number(s)
    return int(v) if v is not None else None


def _group(m: re.Match[str], name: str) -> str | None:
    return m.group(name) if name in m.re.groupindex else None


def _month(s: str | None) -> int | None:
    if s is None:
        return None
    return MONTHS.get(s.lower().rstrip(".")) or _num(s)


def _fiscal_year(s: str) -> int:
    """The year of "FY2023" or "FY23" (a two-digit fiscal year is of this century)."""
    return int(s) + 2000 if len(s) == 2 else int(s)


def _values(m: re.Match[str]) -> list[DateValue]:
    y = _num(_group(m, "y"))
    if _group(m, "fy"):
        y = _fiscal_year(m.group("fy"))
    if _group(m, "hol"):
        hol_mo, hol_d = _HOLIDAYS[m.group("hol").lower()]
        return [DateValue(y, hol_mo, hol_d)]
    if _group(m, "q"):
        return [DateValue(y, quarter=_ORD[m.group("q").lower()])]
    if _group(m, "a"):
        a, b = int(m.group("a")), int(m.group("b"))
        reads = {(a, b), (b, a)}
        return [DateValue(y, mo, d) for mo, d in sorted(reads) if 1 <= mo <= 12 and 1 <= d <= 31]
    mo, d = _month(_group(m, "mon")), _num(_group(m, "d"))
    out = [DateValue(y, mo, d)]
    if _group(m, "d2"):
        out.append(DateValue(y, mo, _num(m.group("d2"))))
    if _group(m, "mon2"):
        out.append(DateValue(y, _month(m.group("mon2"))))
    return out


def _valid(v: DateValue) -> bool:
    return (v.month is None or 1 <= v.month <= 12) and (v.day is None or 1 <= v.day <= 31) and (
        v.year is None or 1000 <= v.year <= 2999)


# What every pattern of _PATTERNS spells, whatever else it needs: a digit (\\d, as in the patterns), 年 月 日 号 or
# 季, or an English quarter, holiday or full month name (with the patterns' flag, so the same letters match). A text
# with none of them has no date and skips the 27 scans (a passage of words, most of the judge's evidence).
_NEEDS = re.compile(r"\d|[年月日号季]|quarter|christmas|new year's day|"
                    r"january|february|march|april|june|july|august|september|october|november|december",
                    re.IGNORECASE)


def find_dates(text: str) -> list[DateMention]:
    """All dates of ``text``, longest patterns first; a range yields one mention per end."""
    if enabled() and not _NEEDS.search(text):
        return []
    taken = [False] * len(text)
    out: list[DateMention] = []
    for pat in _PATTERNS:
        for m in pat.finditer(text):
            if any(taken[m.start():m.end()]):
                continue
            values = [v for v in _values(m) if _valid(v)]
            if not values or all(v == DateValue() for v in values):
                continue
            for i in range(m.start(), m.end()):
                taken[i] = True
            if len(values) == 2 and (_group(m, "d2") or _group(m, "mon2")):  # a range: two dates
                out += [DateMention((v,), m.group(0), m.start(), m.end()) for v in values]
            else:
                out.append(DateMention(tuple(values), m.group(0), m.start(), m.end()))
    return sorted(out, key=lambda d: (d.start, d.end))


def date_supported(claim: DateValue, evidence: DateValue) -> bool:
    """Whether ``evidence`` states the claimed date: every part the claim gives agrees.

    A claimed quarter is supported by an evidence date whose month lies in it; a claimed
    day or month is not supported by a mention that lacks it (2026 does not state 2026-03-01);
    a day of every month (每月 20 日) only by another day of every month (not by 12 月 20 日).
    """
    if claim.day is not None and claim.month is None and claim.year is None and claim.quarter is None:
        return evidence.month is None and evidence.day == claim.day  # 每月 20 日 is not 12 月 20 日
    if claim.year is not None and claim.year != evidence.year:
        return False
    if claim.quarter is not None:
        if evidence.quarter is not None:
            return evidence.quarter == claim.quarter
        return evidence.month is not None and (evidence.month - 1) // 3 + 1 == claim.quarter
    if claim.month is not None and claim.month != evidence.month:
        return False
    return claim.day is None or claim.day == evidence.day


def one_year(values: Iterable[DateValue]) -> int | None:
    """The one year ``values`` name (None when they name none, or several): a passage's year."""
    years = {v.year for v in values if v.year}
    return years.pop() if len(years) == 1 else None


def with_year(values: tuple[DateValue, ...], year: int) -> tuple[DateValue, ...]:
    """``values`` plus each year-less day or month (4月12日) read in ``year``.

    A passage states its year once ("2025年江南茶文化节首站于4月12日在湖州开幕"): an answer
    that writes the full date (2025年4月12日) states what the passage does. The year-less
    reading stays, so a claimed other year (2024年4月12日) is still not supported.
    """
    return values + tuple(replace(v, year=year) for v in values if v.year is None and v.month is not None)
