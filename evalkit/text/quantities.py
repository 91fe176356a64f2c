"""Numbers as values: Arabic with separators, Chinese numerals, English number words, scale
words, percentages, currencies, units, durations and clock times.

What it is for: a judge must see that ``5,000``, ``5000``, ``5 000``, ``五千`` and ``5k``
are one value, that ``3.6亿元`` equals ``36000万元``, ``百分之十八`` equals ``18%``, ``八成``
equals ``80%``, ``300 秒`` equals ``5 分钟`` and ``half an hour`` equals ``30 minutes``, and
that ``99.9%`` is not ``99.95%``. :func:`find_quantities` returns every quantity of a text
with its span, so callers can mask it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from evalkit.text.numerals import CN_NUM, EN_WORDS, en_number, parse_cn_number
from evalkit.text.shares import HALF_PRICE, share_at
from evalkit.text.units import (
    CURRENCIES,
    CURRENCY_PREFIX,
    CURRENCY_SUFFIX,
    DURATION_UNITS,
    OTHER_UNITS,
    SCALE_SUFFIX,
    SECONDS,
    TO_BASE,
    implied_units,
    unit_alternation,
    unit_of,
)
from evalkit.text.wordlists import alternation

__all__ = ["CN_NUM", "CURRENCIES", "EN_WORDS", "Quantity", "bare_number_states", "find_quantities", "find_times",
           "implied_units", "parse_cn_number", "quantities_match"]

_HEDGE = re.compile(r"(?:about|around|roughly|approximately|approx\.?|nearly|almost|some|over|more than|"
                    r"less than|under|约|大约|大概|近|将近|超过|逾|接近|上下)\s*$", re.IGNORECASE)

_ARABIC = r"(?:\d{1,3}(?:(?:,|\u00a0|\u202f| )\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)"
_CN_RUN = rf"[{CN_NUM}]+(?:点[零〇一二三四五六七八九]+)?"
_EN_RUN = (r"(?:(?:" + "|".join(sorted(EN_WORDS, key=len, reverse=True)) + r")(?:[- ](?:one|two|three|four|five|six|"
           r"seven|eight|nine))?(?:\s+(?:hundred|thousand|million|billion)(?:\s+(?:and\s+)?(?:" +
           "|".join(sorted(EN_WORDS, key=len, reverse=True)) + r"))?)*)")


@dataclass(frozen=True)
class Quantity:
    """One quantity found in a text: value in base units, kind, unit, rounding step, span."""

    kind: str               # "number" | "duration" | "time"
    value: float            # number: the scaled value; duration: seconds; time: minutes of the day
    text: str               # as written
    start: int
    end: int
    unit: str | None = None  # "%", "usd", "km", ... (numbers); the duration unit code (durations)
    raw: float | None = None  # the number as written before unit conversion (for loose matching)
    step: float = 0.0        # rounding step: the claim may be this coarse (0 = exact)



_UNIT_AFTER = re.compile(r"(?:\s?|-(?=[A-Za-z]{2}))(?:" + unit_alternation(DURATION_UNITS + OTHER_UNITS) + r")(?![A-Za-z])")
_CUR_AFTER = re.compile(r"(?:\s?|-(?=cent))(?:" + unit_alternation(CURRENCY_SUFFIX) + r")(?![A-Za-z])")
_CUR_BEFORE = re.compile(r"(?:" + unit_alternation(CURRENCY_PREFIX) + r")\s?$")
_SCALE_AFTER = re.compile(r"\s?(?:" + unit_alternation(SCALE_SUFFIX) + r")(?![A-Za-z])")
_NUMBER = re.compile(
    rf"(?P<pct>百分之(?P<pctnum>{_CN_RUN}|{_ARABIC}))"
    rf"|(?:(?<![A-Za-z0-9.,\-/:])(?P<neg>[-−])|(?<![A-Za-z0-9.,/:])(?<![A-Za-z_]-)(?<!^-)(?<![\s(（~～]-))(?P<ar>{_ARABIC})(?![0-9])(?!\.\d)"
    rf"|(?P<cn>{_CN_RUN})|(?P<halfzh>半)(?=个?(?:小时|钟头|天|日|年|月|周|星期))"
    rf"|(?<![A-Za-z])(?P<en>{_EN_RUN}|half|a|an)(?![A-Za-z])", re.IGNORECASE)
_RATE_BEFORE = re.compile(r"(?:\d[kKmMbB]?|[$¥€£%¢]|\b(?:USD|CNY|RMB|EUR|GBP|dollars?|euros?|yuan|cents?|once|twice|thrice|times|per)"
                          r")\s*$", re.IGNORECASE)
_COUNT_BEFORE = re.compile(r"(?:\d|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|twelve|twenty|thirty|"
                           r"hundred|thousand))\s+[A-Za-z-]+(?:\s+[A-Za-z-]+)?\s+(?:in\s+)?$", re.IGNORECASE)  # "600 requests ",
# "5 sick days in " (a year): a count per a unit of time
_MONEY_SCALE = re.compile(r"\s?(m|b)(?![A-Za-z])")  # $48.2m, $1.2b
_CN_MEASURE = re.compile(r"(?:个|多|余)?(?:" + alternation("zh_measure_words") + ")")  # 台, 家, 小时: data/
_CN_NOT_NUMBER = re.compile(r"^(?:" + alternation("zh_not_numbers") + ")")  # 一个, 十分, 万一: data/
_CHENG_WORD = re.compile(r"成(?:为|功|本|立|果|员|都|绩|熟|交|长|年|就|品|型|像|分|效|批|套|行|形|全|人|语)")
_HALF = re.compile(r"\s*(?:and\s+a\s+half|半)")
# "from 19.8 to 24.6 million", "2.2 到 2.8 米": the second number's scale and unit are the first's too
_RANGE_NEXT = re.compile(rf"\s*(?:to|-|–|~|～|and|or|至|到)\s*(?=(?:US\$|\$|¥|￥|€|£)?{_ARABIC})", re.IGNORECASE)
# a unit evalkit does not know, written as a capitalised token after the number: 4 TOPS, 30 FPS, 100 Mbps
_UNIT_WORD = re.compile(r"\s?(?P<uw>[A-Z]{2,6}s?|[MGKT]bps|fps|dBm?|lux|nits?)(?![A-Za-z])")


def _range_ok(first: float, sep: re.Match[str], text: str) -> bool:
    """Whether ``first`` and the number after ``sep`` read as one range sharing its scale and unit.

    "to", "-", "至" always join a range; "and" / "or" only an ascending pair ("5 or 6 days",
    "19.8 and 24.6 million"): "an increase of 21,000 or 25%" states a count and a percentage.
    """
    if not re.fullmatch(r"\s*(?:and|or)\s*", sep.group(0), re.IGNORECASE):
        return True
    m = re.match(rf"(?:US\$|\$|¥|￥|€|£)?({_ARABIC})", text[sep.end():])
    return m is not None and abs(first) <= float(re.sub(r"[^\d.]", "", m.group(1)) or 0)


def _list_marker(text: str, start: int, end: int, written: str) -> bool:
    """Whether the integer ``written`` at ``text[start:end]`` numbers a list item rather than states a value.

    Markers: "1." / "2)" / "3、" opening a line, and "(1) ... (2) ..." / "（1）…（2）…" when the
    neighbouring marker of the same series is there too (a lone "(3)" may be a value).
    """
    if not written.isdigit() or not 0 < int(written) <= 20:
        return False
    if re.search(r"(?:^|\n)[ \t]*$", text[:start]) and re.match(r"[.)）]\s|、", text[end:end + 2]):
        return True
    close = {"(": ")", "（": "）"}.get(text[start - 1:start]) if start else None
    if close is None or text[end:end + 1] != close:
        return False
    n, opening = int(written), text[start - 1]
    return f"{opening}{n - 1}{close}" in text[:start] or f"{opening}{n + 1}{close}" in text[end:]


def _compound_durations(text: str, found: list[Quantity]) -> list[Quantity]:
    """``found`` with "1 hour 10 minutes", "3 h 30 min", "1小时10分钟" read as one duration (70 minutes).

    Only a larger unit directly followed (or after "and", 零) by a smaller one that does not fill it.
    """
    out: list[Quantity] = []
    for q in found:
        p = out[-1] if out else None
        if (p is not None and p.kind == q.kind == "duration" and p.unit in SECONDS and q.unit in SECONDS
                and "wd" not in (p.unit, q.unit) and SECONDS[q.unit] < SECONDS[p.unit] and q.value < SECONDS[p.unit]
                and re.fullmatch(r"\s*(?:and\s+|零)?", text[p.end:q.start])):
            raw = (p.raw or 0.0) + q.value / SECONDS[p.unit]
            out[-1] = Quantity("duration", p.value + q.value, text[p.start:q.end], p.start, q.end, p.unit, raw)
            continue
        out.append(q)
    return out


def _duration_or_other(value: float, unit: object, kind_code: str | None) -> tuple[str, float, str | None]:
    if kind_code in SECONDS:
        return "duration", value * SECONDS[kind_code], kind_code
    return "number", value, unit if isinstance(unit, str) else None


def _scale_of(m: re.Match[str]) -> float:
    """The factor of the scale word ``_SCALE_AFTER`` matched (one of its groups always took part)."""
    scale = unit_of(m, SCALE_SUFFIX)
    if scale is None:
        raise ValueError(f"no scale word in {m.group(0)!r}")
    return float(scale)


def find_quantities(text: str) -> list[Quantity]:
    """All numbers, durations and percentages in ``text`` (clock times: see :func:`find_times`)."""
    out: list[Quantity] = []
    consumed = 0
    for m in _NUMBER.finditer(text):
        start, end = m.start(), m.end()
        if start < consumed:
            continue  # inside a quantity already read (the 亿 of 3.6亿, the "an hour" of "half an hour")
        unit: str | None = None
        if m.group("pct"):
            n = m.group("pctnum")
            v = parse_cn_number(n) if re.match(f"[{CN_NUM}]", n) else float(re.sub(r"[,\s\u00a0\u202f]", "", n))
            if v is not None:
                out.append(Quantity("number", v, m.group(0), start, end, "%", v))
            continue
        fm = re.match(rf"([{CN_NUM}]{{1,3}}|\d{{1,3}})分半钟?", text[start:start + 8])
        if fm and not m.group("pct"):  # 一分半钟 = 90 秒
            n = fm.group(1)
            v = float(n) if n.isdigit() else parse_cn_number(n)
            if v is not None:
                q_end = start + fm.end()
                out.append(Quantity("duration", (v + 0.5) * 60, text[start:q_end], start, q_end, "min", v + 0.5))
                consumed = q_end
                continue
        share = None if m.group("ar") else share_at(text, start)
        if share is not None:  # two-fifths, 千分之五, a quarter of an hour
            kind, value, end, unit, step = share
            out.append(Quantity(kind, value, text[start:end], start, end, unit, value if kind == "number" else None, step))
            consumed = end
            continue
        if m.group("ar"):
            if _list_marker(text, start, end, m.group("ar")):
                continue  # "(1) proof of address and (2) ...": a list marker, not a value
            digits = re.sub(r"[,\s\u00a0\u202f]", "", m.group("ar"))
            value = float(digits)
            decimals = len(digits.split(".")[1]) if "." in digits else 0
            if m.group("neg") or re.search(r"零下\s*$", text[:start]):  # -20°C, 零下 20 度
                value = -value
        elif m.group("halfzh"):
            value, decimals = 0.5, 0
        elif m.group("cn"):
            s = m.group("cn")
            rest = text[end:end + 4]
            if s == "一" and text[end:end + 1] == "次" and re.search(r"每\s*\S{0,4}\d", text[max(0, start - 12):start]):
                continue  # 每 5 分钟同步一次: the interval carries the frequency, "一次" is "once"
            if _CN_NOT_NUMBER.match(text[start:start + 2]) or not (
                _CN_MEASURE.match(rest) or text[start - 1:start] == "第" or any(c in "十百千万亿" for c in s)):
                continue
            if rest.startswith("点") and not re.match(r"[钟整半]", rest[1:2]):
                continue  # 这一点 / 两点 (a clock time) are not quantities
            v = parse_cn_number(s)
            if v is None:
                continue
            value, decimals = v, len(s.partition("点")[2])
        else:
            w = m.group("en").lower()
            if w in ("a", "an", "half"):
                if w != "half" and (_RATE_BEFORE.search(text[:start]) or _COUNT_BEFORE.search(text[:start])):
                    continue  # "$49 a month", "twice a day", "600 requests a minute": a rate, not a duration
                nxt = _UNIT_AFTER.match(text, end)
                big = re.match(r"\s+an?(?=\s+(?:million|billion|thousand|trillion)\b)", text[end:], re.IGNORECASE)
                if w == "half" and big:  # half a million: the scale word follows
                    value, decimals, end = 0.5, 0, end + big.end()
                elif w == "half" and re.match(r"\s+an?\s", text[end:end + 4]) and (a := re.match(r"\s+an?", text[end:])):
                    nxt = _UNIT_AFTER.match(text, end + len(a.group(0)))
                if not big and (not nxt or unit_of(nxt, DURATION_UNITS + OTHER_UNITS) not in SECONDS):
                    continue
                if not big:
                    value, decimals = (0.5 if w == "half" else 1.0), 0
                    if w == "half" and nxt is not None:  # always, past the check above
                        end = nxt.start()
            else:
                if w == "one" and not (_UNIT_AFTER.match(text, end) or _SCALE_AFTER.match(text, end)
                                       or text[end:end + 1] == "-"):
                    continue  # "a new one", "one of": a pronoun, not a number
                v = en_number(w)
                if v is None:
                    continue
                value, decimals = v, 0
        step = 10.0 ** -decimals if decimals else 0.0
        if value <= 10 and text[end:end + 1] == "成" and not _CHENG_WORD.match(text, end):
            # 成 counts tenths: "八成" (80%) is itself rounded to one 成, i.e. 10 points
            out.append(Quantity("number", value * 10, text[start:end + 1], start, end + 1, "%", value * 10,
                                step * 10 if decimals else 10.0))
            consumed = end + 1
            continue
        # scale words: 3.6亿, 48.2 million, 340k, 五千万
        money = _CUR_BEFORE.search(text[:start]) is not None
        sm = _SCALE_AFTER.match(text, end) or (_MONEY_SCALE.match(text, end) if money else None)
        if sm and (money or sm.group(0).strip() not in ("B", "M")):  # "5 M" alone: not a scale
            scale = _scale_of(sm) if sm.re is _SCALE_AFTER else {"m": 1e6, "b": 1e9}[sm.group(1)]
            value, step, end = value * scale, (step or 1.0) * scale, sm.end()
        cb = _CUR_BEFORE.search(text[:start]) if m.group("ar") else None
        if cb:
            unit, start = str(unit_of(cb, CURRENCY_PREFIX)), cb.start()
        # 四亿多元: "more than 4亿", the currency after 多 / 余
        ca = _CUR_AFTER.match(text, end) or (_CUR_AFTER.match(text, end + 1) if text[end:end + 1] in "多余" else None)
        kind, raw, qv = "number", value, value
        if ca:
            unit, end = str(unit_of(ca, CURRENCY_SUFFIX)), ca.end()
            if unit == "cent":  # "20.0 cents" is $0.20 (a tariff in cents, an answer in dollars)
                unit, qv, step = "usd", value / 100, step / 100
        else:
            um = _UNIT_AFTER.match(text, end)
            if um and not (um.group(0).strip() == "m" and unit):
                code = unit_of(um, DURATION_UNITS + OTHER_UNITS)
                if code == "y" and um.group(0).strip() == "年" and 1000 <= value <= 2999 and not decimals:
                    continue  # 2025年 is a year (dates handle it)
                if code == "d" and um.group(0).strip() == "日" and re.search(r"月\s*$", text[:start]):
                    continue  # 7月1日: a date
                if code in SECONDS and text[start - 1:start] == "第":
                    continue  # 第二天, 第3年: a position in time (the next day), not a length of time
                half = _HALF.match(text, um.end()) if code in SECONDS else None
                if half:
                    value += 0.5
                end = half.end() if half else um.end()
                kind, qv, unit = _duration_or_other(value, code, code if code in SECONDS else None)
                if kind == "number":
                    unit = str(code)
                    if unit in TO_BASE:
                        unit, qv = TO_BASE[unit][0], value * TO_BASE[unit][1]
            elif not sm and not cb and (nxt := _RANGE_NEXT.match(text, end)) and _range_ok(value, nxt, text):
                other = find_quantities(text[nxt.end():nxt.end() + 40])
                o = other[0] if other and other[0].start == 0 else None
                wm = re.match(rf"(?:US\$|\$|¥|￥|€|£)?({_ARABIC})", o.text) if o is not None else None
                written = abs(float(re.sub(r"[^\d.]", "", wm.group(1)) or 0)) if wm else 0.0
                scale = abs(o.value) / written if o is not None and o.kind == "number" and written else 1.0
                if o is not None and (o.unit or o.kind == "duration" or scale != 1.0):
                    if o.kind == "duration":
                        kind, qv, raw, unit = "duration", value * SECONDS[str(o.unit)], value, o.unit
                    else:
                        qv = raw = value * scale
                        step, unit = step * scale, o.unit
            if kind == "number" and unit is None and (uw := _UNIT_WORD.match(text, end)):
                unit = uw.group("uw").lower()  # 4 TOPS is not 4 GB
        hedged = (_HEDGE.search(text[:start]) or re.match(r"\s*(?:左右|上下|多|余)", text[end:end + 3])
                  or re.search(r"[多余]", text[start:end]))
        if hedged and raw and raw == int(raw) and not decimals:
            # "about 12,800" may round to its last non-zero digit, "roughly 38%" to a whole point
            zeros = len(str(int(raw))) - len(str(int(raw)).rstrip("0"))
            step = max(step, 10.0 ** zeros)
        out.append(Quantity(kind, qv, text[start:end], start, end, unit, raw, step))
        consumed = end
    out += [Quantity("number", 50.0, h.group(0), h.start(), h.end(), "%", 50.0) for h in HALF_PRICE.finditer(text)]
    return _compound_durations(text, sorted(out, key=lambda q: q.start))


_TIME = re.compile(
    r"(?<![0-9:])(?P<h>\d{1,2}):(?P<m>\d{2})(?![0-9:])\s*(?P<ap>a\.?m\.?|p\.?m\.?)?"
    r"|(?<![0-9])(?P<h2>\d{1,2})\s*(?P<ap2>a\.?m\.?|p\.?m\.?)(?![A-Za-z])"
    rf"|(?P<pre>凌晨|上午|早上|早晨|中午|下午|晚上|傍晚|夜里|晚)?(?P<hz>\d{{1,2}}|[{CN_NUM}]{{1,3}})点(?:(?P<mz>\d{{1,2}}|[{CN_NUM}]{{1,3}})分|(?P<half>半))?",
    re.IGNORECASE)


_AM_ZH, _PM_ZH = ("凌晨", "上午", "早上", "早晨"), ("下午", "晚上", "傍晚", "夜里", "晚")


def _half_day(h: int, ap: str | None, written: str, pre: str | None) -> str | None:
    """``"am"`` or ``"pm"`` when the text says which half of the day (5 pm, 17:00, 09:40, 下午3点), else None.

    A 24-hour clock says it by the hour (17:00) or by a leading zero (09:40); "5:00" and 3点 do not.
    """
    if ap:
        return "am" if ap.lower().startswith("a") else "pm"
    if pre:
        return "am" if pre in _AM_ZH or (pre == "中午" and h in (10, 11)) else "pm"  # 中午12点, 中午1点: pm
    if h >= 12:
        return "am" if h == 24 else "pm"
    return "am" if h == 0 or written.startswith("0") else None


def find_times(text: str) -> list[Quantity]:
    """Clock times (09:40, 2 pm, 凌晨两点, 下午3点半) as minutes after midnight, modulo 12 hours.

    ``unit`` is the half of the day when the text says it (:func:`_half_day`): "17:00" and "5 pm"
    are one time, "5:00 a.m." another; "5:00" may be either (see :func:`quantities_match`).
    """
    out: list[Quantity] = []
    for m in _TIME.finditer(text):
        pre = None
        if m.group("h") is not None:
            h, mi, ap = int(m.group("h")), int(m.group("m")), m.group("ap")
        elif m.group("h2") is not None:
            h, mi, ap = int(m.group("h2")), 0, m.group("ap2")
        else:
            hz = m.group("hz")
            if not hz.isdigit() and not (m.group("pre") or m.group("mz") or m.group("half")
                                         or re.match(r"[钟整]", text[m.end():m.end() + 1])):
                continue  # 这一点, 两点意见: not a time
            hv = int(hz) if hz.isdigit() else parse_cn_number(hz)
            mz = m.group("mz")
            mv = 30 if m.group("half") else (int(mz) if mz and mz.isdigit() else parse_cn_number(mz) if mz else 0)
            if hv is None or mv is None:
                continue
            h, mi, ap, pre = int(hv), int(mv), None, m.group("pre")
        if h > 24 or mi > 59:
            continue
        half = _half_day(h, ap, m.group(0), pre)
        out.append(Quantity("time", float((h * 60 + mi) % 720), m.group(0), m.start(), m.end(), half, None))
    return out




def quantities_match(claim: Quantity, evidence: Quantity) -> bool:
    """Whether an evidence quantity supports a claim quantity (same value; the claim may round).

    Exact equality, or the claim rounded to its own precision (``1.2 million`` for
    1,213,000; ``约130万`` for 1,313,851) when within 5%. Units must agree: a claim with a
    unit is not supported by a number with another unit (``10,000 元`` does not state
    ``10,000 天``) nor by a bare number (``500`` does not state ``500MB`` or ``500
    seconds``; see :func:`implied_units` for a unit the evidence names elsewhere, as in
    ``backoff_ms defaults to 200``). Currencies are the exception: ``CNY 30,000`` is
    supported by a bare ``30,000`` (a price list rarely repeats its currency). A claim
    without a unit is supported by the same number with one.
    """
    if claim.kind == "time" or evidence.kind == "time":  # 5 pm is 17:00, not 5:00 a.m.; "5:00" may be either
        halves = {claim.unit, evidence.unit} - {None}
        return claim.kind == evidence.kind and claim.value == evidence.value and len(halves) < 2
    if claim.kind == "duration" and evidence.kind == "duration":
        if (claim.unit == "wd") != (evidence.unit == "wd"):
            return False  # 1 个工作日 is not 24 hours
        a, b = claim.value, evidence.value
        return abs(a - b) <= 0.03 * max(abs(a), abs(b))
    if claim.kind != evidence.kind:  # a bare claim number may repeat a duration's written value
        return claim.kind == "number" and claim.unit is None and claim.raw is not None and claim.raw == evidence.raw
    if claim.unit and evidence.unit and claim.unit != evidence.unit and {claim.unit, evidence.unit} != {"c", "deg"}:
        return False  # 60 度 may be 60°C; 30° is 30 度
    if claim.unit and not evidence.unit and claim.unit not in CURRENCIES:
        return False
    a, b = claim.value, evidence.value
    if claim.unit is None and evidence.unit and evidence.raw is not None:
        b = evidence.raw  # "8.4 versus 7.8" repeats "8.4 tonnes" as written, not in grams
    if abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b)):
        return True
    if claim.step and abs(a - b) < claim.step / 2 - 1e-9 * claim.step:
        return abs(a - b) <= 0.05 * max(abs(a), abs(b))
    return False


def bare_number_states(claim: Quantity, evidence: Quantity, units: frozenset[str]) -> bool:
    """Whether a bare evidence number, read in one of ``units`` (:func:`implied_units`), states ``claim``."""
    if evidence.kind != "number" or evidence.unit is not None or evidence.raw is None:
        return False
    if claim.kind == "duration":
        return any(code in SECONDS and abs(evidence.raw * SECONDS[code] - claim.value)
                   <= 0.03 * max(abs(claim.value), 1e-9) for code in units)
    return claim.kind == "number" and claim.unit in units and claim.raw == evidence.raw
