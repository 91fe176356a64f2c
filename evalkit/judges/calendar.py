"""Dates an answer counts itself: a stated date plus or minus a stated duration, and the weekday of a date.

What it is for: :mod:`evalkit.judges.reach` derives values an answer may have computed. Deadlines
are the commonest computed dates ("She has until 18 May 2025 (45 days after the 3 April
mailing)", "终止自通知之日起90天后生效"): no passage states the day, but a stated date and a
stated duration give it. A date so reached is ``unverified`` (the reason names the sum), never
``supported``: a planted date that happens to fit a sum of stated values must not be vouched for.

- :func:`counted_date`: a full date (day and month; the year its own, or one the evidence or
  answer states) that is a stated full date plus or minus a stated duration of at least
  :data:`MIN_DAYS` days, in days, weeks or months (from 30 days on, one day either way: counts
  that include the first day, "within 30 days"). A shorter duration counts, to the day, when the claim
  writes it itself ("HbA1c (1 business day) should be ready on Wednesday 27 May"), or when it is a
  whole number of days ("48小时内到场" from 7月2日: 7月4日; "2 business days" from Monday 9 June). A
  year or more counts in whole years or months, to the day ("full coverage until 10 years after the
  14 August 2019 installation": 14 August 2029). These two (``near``) fit a planted date a few days
  off or a year off by chance, so they count only where no evidence sentence states another date for
  what the claim's clause says ("runs until 2026/06/30 and renews for 12 months" keeps "It runs until
  June 30, 2027" unsupported).
  Working days are counted as calendar days plus the weekends they span, when that fits. When no
  year is stated anywhere ("3月18日买的，30日内上牌"), days are counted in a common and in a leap year
  (month and day arithmetic is the same in any year but for 29 February); working days, which
  depend on the year, are then not counted.
- :func:`weekday_check`: a weekday name in a claim ("Monday 3 June", "3月11日（星期二）") is
  the weekday of the full date it stands with: right, it is derived; wrong, the claim is
  wrong (positive evidence); with no full date, it cannot be checked.
- :func:`counted_weekday`: a weekday with no full date beside it, in an answer to a question that
  gives a day or a date ("If I order on Tuesday after 2 pm ...": "ready on Thursday"), where the
  evidence names no weekday of its own: a day counted from the user's, not checkable.
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from datetime import date, timedelta

from evalkit.text.dates import DateValue, find_dates
from evalkit.text.values import Atom

__all__ = ["WEEKDAYS", "counted_date", "counted_weekday", "weekday_check", "weekday_of_name"]

_DAY = 86400.0
MIN_DAYS = 7  # a shorter duration counts only when it is whole days or the claim writes it (and then to the day)
REFERENCE_YEARS = (2023, 2024)  # a common and a leap year, for dates no text gives a year
_MONTH_DAYS = 30.44
WEEKDAYS = {**{n: i for i, n in enumerate(("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"))},
            **{n: i for i, n in enumerate(("mon", "tue", "wed", "thu", "fri", "sat", "sun"))},
            "tues": 1, "thur": 3, "thurs": 3,
            **{f"{p}{d}": i for p in ("星期", "周", "礼拜") for i, d in enumerate("一二三四五六日")},
            "星期天": 6, "礼拜天": 6, "周天": 6}


def weekday_of_name(name: str) -> int | None:
    """0 (Monday) to 6 (Sunday) for a weekday name ("Monday", "Wed", 星期二, 周日), else None."""
    return WEEKDAYS.get(name.strip().strip(".").lower())


def _full_dates(values: Iterable[DateValue], years: Sequence[int]) -> list[date]:
    out = []
    for v in values:
        if v.month and v.day:
            for y in ([v.year] if v.year else years):
                try:
                    out.append(date(y, v.month, v.day))
                except ValueError:
                    continue
    return sorted(set(out))


def _add_months(d: date, months: int) -> date | None:
    y, m = divmod(d.month - 1 + months, 12)
    try:
        return date(d.year + y, m + 1, d.day)
    except ValueError:
        return None


def _working(d: date, days: int, sign: int) -> date:
    out, left = d, days
    while left:
        out += timedelta(days=sign)
        if out.weekday() < 5:
            left -= 1
    return out


def _anniversary(goals: Sequence[date], start: date, months: int) -> str | None:
    """A goal that is ``start`` plus or minus a whole number of months, to the day ("10 years after the 14 August 2019
    installation": 14 August 2029)."""
    for sign in (1, -1):
        end = _add_months(start, sign * months)
        if end is not None and end in goals:
            n, word = (months // 12, "year") if months % 12 == 0 else (months, "month")
            span = f"{n} {word}{'' if n == 1 else 's'}"
            return f"{end.isoformat()} = {start.isoformat()} {'+' if sign > 0 else '-'} {span}"
    return None


def counted_date(target: DateValue, stated: Sequence[DateValue], durations: Sequence[tuple[float, str]],
                 years: Sequence[int], shown: Sequence[tuple[float, str]] = (), *, near: bool = True) -> str | None:
    """How ``target`` is a stated date plus or minus a stated duration (``(seconds, unit code)``), or None.

    ``shown``: the durations the claim itself writes, which count however short they are. ``near``: also a
    duration under a week that the evidence alone states, and whole years or months of a year or more: the
    counts a planted date (a few days off, another year) fits by chance, which a caller tries only when no
    evidence sentence states another date for the claim's clause (:func:`evalkit.judges.reach.reach`).
    """
    if not years:  # the reason gives months and days only: the year was not stated
        return next((how.replace(f"{y}-", "") for y in REFERENCE_YEARS if (how := counted_date(target, stated, [
            d for d in durations if d[1] != "wd"], [y], [d for d in shown if d[1] != "wd"], near=near))), None)
    goals = _full_dates([target], years)
    starts = _full_dates(stated, years)
    if not goals or not starts:
        return None
    for start in starts:
        for seconds, unit in list(durations) + [d for d in shown if d not in durations]:
            days = seconds / _DAY
            if days >= 365:
                if near and unit in ("y", "mo") and (how := _anniversary(goals, start, round(days / _MONTH_DAYS))):
                    return how
                continue
            whole = near and abs(days - round(days)) < 1e-9
            if days < 1 or (days < MIN_DAYS and (seconds, unit) not in shown and not whole):
                continue
            slack = 1 if days >= 30 else 0
            for sign in (1, -1):
                ends = [(start + timedelta(days=sign * round(days)), "days")]
                if unit == "mo" or abs(days / _MONTH_DAYS - round(days / _MONTH_DAYS)) < 0.02:
                    month_end = _add_months(start, sign * round(days / _MONTH_DAYS))
                    if month_end is not None:
                        ends.append((month_end, "days"))
                if unit == "wd":
                    ends.append((_working(start, round(days), sign), "working days"))
                for end, counted in ends:
                    for goal in goals:
                        if abs((goal - end).days) <= slack:
                            word = "+" if sign > 0 else "-"
                            return f"{goal.isoformat()} = {start.isoformat()} {word} {round(days)} {counted}" + (
                                " (±1)" if slack else "")
    return None


def weekday_check(target: Atom, claim_text: str, years: Sequence[int]) -> tuple[bool, str] | None:
    """For a weekday name in a claim: ``(True, how)`` when it is the weekday of the full date beside it,
    ``(False, why)`` when it is not, ``None`` when the name is no weekday or no full date stands with it."""
    wanted = weekday_of_name(target.text)
    if wanted is None:
        return None
    near = [m for m in find_dates(claim_text) if abs(m.start - target.end) <= 20 or abs(target.start - m.end) <= 20]
    days = _full_dates((v for m in near for v in m.values), years)
    if not days:
        return None
    if any(d.weekday() == wanted for d in days):
        return True, f"{target.text.strip()} is the weekday of {days[0].isoformat()}"
    return False, f"{target.text.strip()} is not the weekday of {', '.join(d.isoformat() for d in days)}"


_NAMED_DAY = re.compile(r"\b(?:mon|tues|wednes|thurs|fri|satur|sun)days?\b|(?:星期|礼拜|周)[一二三四五六日天]", re.IGNORECASE)


def counted_weekday(target: Atom, passages: Sequence[str], question: str) -> str | None:
    """How a weekday name with no full date beside it may have been counted: from the day or date the
    question gives, when no passage names a weekday (a passage that does states the days that hold);
    None otherwise."""
    if weekday_of_name(target.text) is None or any(_NAMED_DAY.search(p) for p in passages):
        return None
    given = _NAMED_DAY.search(question) or next(iter(find_dates(question)), None)
    if given is None:
        return None
    return f"{target.text.strip()} is a day counted from the question's day or date; no passage names a weekday"
