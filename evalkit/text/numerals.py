"""Numerals as values: Chinese numerals (五千, 一万二, 三点五, 一九九七) and English number words.

What it is for: :mod:`evalkit.text.quantities` reads a number written in words as the same
value as in digits; this module holds the word lists and the two parsers it uses.
"""
from __future__ import annotations

import re

__all__ = ["CN_BIG", "CN_DIGIT", "CN_NUM", "CN_UNIT", "EN_SCALE", "EN_WORDS", "en_number", "parse_cn_number"]

CN_DIGIT = {"零": 0, "〇": 0, "○": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7,
            "八": 8, "九": 9, "壹": 1, "贰": 2, "叁": 3, "肆": 4, "伍": 5, "陆": 6, "柒": 7, "捌": 8, "玖": 9}
CN_UNIT = {"十": 10, "拾": 10, "百": 100, "佰": 100, "千": 1000, "仟": 1000}
CN_BIG = {"万": 10_000, "亿": 100_000_000}
CN_NUM = "零〇○一二两三四五六七八九壹贰叁肆伍陆柒捌玖十拾百佰千仟万亿"

_UNITS_WORDS = ("zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
                "fifteen sixteen seventeen eighteen nineteen")
EN_WORDS = {w: i for i, w in enumerate(_UNITS_WORDS.split())}
EN_WORDS.update({"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70,
                 "eighty": 80, "ninety": 90, "dozen": 12})
EN_SCALE = {"hundred": 100, "thousand": 1_000, "million": 1_000_000, "billion": 1_000_000_000,
            "trillion": 1_000_000_000_000}


def parse_cn_number(s: str) -> float | None:
    """Value of a Chinese numeral: 五千 5000, 一万二 12000, 两百 200, 三点五 3.5, 一九九七 1997."""
    if not s:
        return None
    if s[-1] in CN_BIG and "点" in s:  # 十二点八亿
        v = parse_cn_number(s[:-1])
        return None if v is None else v * CN_BIG[s[-1]]
    if "点" in s:
        whole, _, frac = s.partition("点")
        w = parse_cn_number(whole) if whole else 0
        digits = "".join(str(CN_DIGIT[c]) for c in frac if c in CN_DIGIT)
        return None if w is None or not digits else float(f"{int(w)}.{digits}")
    if all(c in CN_DIGIT for c in s) and len(s) > 1:  # digit by digit: 一九九七, 二〇二一
        if len(s) == 2 and not set(s) & set("零〇○"):
            return None  # 三四天 (three or four), 周六一次, 科目三一次: two digits side by side are no number
        return float("".join(str(CN_DIGIT[c]) for c in s))
    total, section, digit, last_unit = 0.0, 0.0, None, 1
    for c in s:
        if c in CN_DIGIT:
            digit = CN_DIGIT[c]
        elif c in CN_UNIT:
            section += (digit if digit is not None else 1) * CN_UNIT[c]
            last_unit, digit = CN_UNIT[c], None
        elif c in CN_BIG:
            section += digit or 0
            total = (total + section) * CN_BIG[c] if CN_BIG[c] > 10_000 else total + section * CN_BIG[c]
            section, digit, last_unit = 0.0, None, CN_BIG[c]
        else:
            return None
    if digit is not None:
        # 一万二 = 12000, 两百五 = 250: a bare digit after a unit is one order below it
        section += digit * (last_unit // 10 if last_unit >= 100 and s[-2] not in "零〇" else 1)
    return total + section


def en_number(s: str) -> float | None:
    """Value of English number words: "twenty-five" 25, "two hundred and five" 205, "a dozen" 12."""
    total, current = 0.0, 0.0
    for w in re.split(r"[\s-]+", s.lower()):
        if w == "and":
            continue
        if w in EN_WORDS:
            current += EN_WORDS[w]
        elif w == "hundred":
            current = (current or 1) * 100
        elif w in EN_SCALE:
            total += (current or 1) * EN_SCALE[w]
            current = 0.0
        else:
            return None
    return total + current
