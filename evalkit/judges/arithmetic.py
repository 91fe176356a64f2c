"""The answer's own arithmetic: an equation a claim writes out, checked.

What it is for: an answer that shows its working ("3 × $1,450 = $4,350", "4,600×13%×70%＝418.6元",
"200度×0.5元＋100度×0.6元＝160元") gives the judge positive evidence either way. A result
that does not follow from the operands written before it is a wrong derivation, whatever the
evidence says, and the offline judge calls the claim ``unsupported`` with the sum in the reason.
A right one proves nothing about the operands (they are checked as values, like any other).

:func:`wrong_equations` reads every ``a op b [op c ...] = r`` in a text: numbers with thousands
separators, decimals, a currency sign or unit word beside them (ignored), percentages (13% is
0.13; a discount of 8.5折 is 0.85), the operators + - × x * / ÷ (and their full-width forms), usual precedence. A result is
wrong when it differs from the computed value by more than its own rounding (half a unit of
its last written digit, and 1% for a number hedged with "about", 约, ≈ or ~).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from evalkit.text.dates import find_dates

__all__ = ["Equation", "equations", "wrong_equations"]

_NUM = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"
# a unit or counted word after a number ("6 people", "3 nights", "200度", "2 TEU"), not an operator word
_UNIT = r"(?:\s?(?:[$€£¥]|(?!(?:is|equals|plus|minus|times|x|and|for|of)\b)[A-Za-z]{1,12}\.?|[\u4e00-\u9fff]{1,3}))?"
_SCALE = r"(?:k|K|bn|million|billion|thousand|万|亿)(?![A-Za-z])"
_SCALES = {"k": 1e3, "thousand": 1e3, "million": 1e6, "bn": 1e9, "billion": 1e9, "万": 1e4, "亿": 1e8}
_OPERAND = rf"(?:[$€£¥]\s?)?(?:{_NUM})\s?(?:{_SCALE})?%?{_UNIT}"
_OP = r"\s*(?:[+\-−×x*/÷＋－]|plus|minus|times)\s*"
_EQ = r"\s*(?:=|＝|equals|is)\s*(?:about\s+|approximately\s+|约|≈|~)?"
_EQUATION = re.compile(rf"(?P<lhs>{_OPERAND}(?:{_OP}{_OPERAND})+){_EQ}(?P<rhs>{_OPERAND})", re.IGNORECASE)
_TOKEN = re.compile(rf"(?P<num>{_NUM})\s?(?P<scale>{_SCALE})?\s?(?P<pct>%)?(?P<zhe>折)?"
                    r"|(?P<op>[+\-−×x*/÷＋－]|plus|minus|times)", re.IGNORECASE)
# a time unit: an equation that converts between two of them ("× 6 s = 390 minutes") is not checked
_TIME_UNIT = re.compile(r"\b(?:s|sec\w*|min\w*|h|hours?|hrs?|days?|weeks?|months?|years?)\b|秒|分钟|小时|天|周|月|年",
                        re.IGNORECASE)
_OP_RE = re.compile(_OP, re.IGNORECASE)
_PERCENT_LAST = re.compile(r"%\s*$")
_PERCENT_FIRST = re.compile(r"^\s*[\d.,]+\s?%")
_RANGE = re.compile(r"\d-\d")  # "1-3 pass is $152": zones 1 to 3, no subtraction
_OPERATOR_BEFORE = re.compile(r"(?:[+\-−×x*/÷＋－=＝]|plus|minus|times)\s*\S*\s*$", re.IGNORECASE)
_OPERATOR_AFTER = re.compile(r"^\s*(?:[+\-−×x*/÷＋－]|plus|minus|times)\s*\d")
_OPS = {"+": "+", "＋": "+", "plus": "+", "-": "-", "−": "-", "－": "-", "minus": "-", "×": "*", "x": "*", "*": "*",
        "times": "*", "/": "/", "÷": "/"}


@dataclass(frozen=True)
class Equation:
    """An equation a text writes out, with what its left side computes to."""

    text: str
    computed: float
    written: float
    tail: float | None = None  # the value of the terms after the first + or -: "$900 plus 14 × $18 = $252"

    @property
    def wrong(self) -> bool:
        digits = self.text.split("=")[-1].split("＝")[-1]
        decimals = re.search(r"\.(\d+)", digits.replace(",", ""))
        step = 10.0 ** -len(decimals.group(1)) if decimals else 1.0
        if "%" in digits:  # "98.0%" is 0.980, written to a tenth of a percent
            step /= 100
        slack = step / 2 + 1e-9 * abs(self.written)
        if re.search(r"about|approximately|约|≈|~", self.text, re.IGNORECASE):
            slack = max(slack, 0.01 * abs(self.written))
        # a running computation may write the result of its last step only ("base $900 plus 14 miles × $18 =
        # $252, so $1,152"): that step is right
        return abs(self.computed - self.written) > slack and not (
            self.tail is not None and abs(self.tail - self.written) <= slack)


def _value(m: re.Match[str]) -> float:
    v = float(m.group("num").replace(",", ""))
    if m.group("scale"):
        v *= _SCALES[m.group("scale").lower() if m.group("scale").isascii() else m.group("scale")]
    if m.group("zhe"):  # 8.5折 is 85% of the price
        return v / 10
    return v / 100 if m.group("pct") else v


def _tail(lhs: str) -> float | None:
    """The value of ``lhs`` after its first + or - (its last steps), or None when it has none."""
    m = re.search(r"\s*(?:[+\-−＋－]|plus|minus)\s*(?=(?:[$€£¥]\s?)?\d)", lhs, re.IGNORECASE)
    if m is None:
        return None
    rest = lhs[m.end():]
    return _evaluate(rest) if _OP_RE.search(rest) else None


def _evaluate(lhs: str) -> float | None:
    """The value of ``a op b op c ...`` with * and / before + and -; None when it is not such an expression."""
    terms: list[float] = []
    ops: list[str] = []
    expect_number = True
    for m in _TOKEN.finditer(lhs):
        if m.group("num") is not None:
            if not expect_number:
                return None
            terms.append(_value(m))
        else:
            if expect_number:
                return None
            ops.append(_OPS[m.group("op").lower()])
        expect_number = m.group("num") is None
    if expect_number or not ops:
        return None
    if len(terms) == 2 and ops[0] in "+-" and _PERCENT_LAST.search(lhs) and not _PERCENT_FIRST.match(lhs):
        return terms[0] * (1 + terms[1] if ops[0] == "+" else 1 - terms[1])  # "$9,800 + 20%": 20% of it added
    total, sign, product = 0.0, 1.0, terms[0]
    for op, x in zip(ops, terms[1:]):
        if op == "*":
            product *= x
        elif op == "/":
            if x == 0:
                return None
            product /= x
        else:
            total += sign * product
            sign, product = (1.0 if op == "+" else -1.0), x
    return total + sign * product


def equations(text: str) -> list[Equation]:
    """Every equation written out in ``text`` (see the module docstring)."""
    out: list[Equation] = []
    dated: list[tuple[int, int]] | None = None
    for m in _EQUATION.finditer(text):
        if dated is None:  # dates with a day or a month ("4 March 2024", 2024年5月13日), not a bare year
            dated = [(d.start, d.end) for d in find_dates(text) if not d.text.strip().isdigit()]
        if any(s <= m.start("lhs") < e or s <= m.start("rhs") < e for s, e in dated):
            continue  # a date counted forward ("4 March 2024 + 10 weeks = 13 May 2024"): calendar.py checks those
        if _OPERATOR_BEFORE.search(text[:m.start()]) or _OPERATOR_AFTER.match(text[m.end():]):
            continue  # part of a longer expression than was read ("six weeks × 5 days ...", "= 50 + 2,250 + ...")
        if _RANGE.search(m.group("lhs")) and not re.search(r"[=＝]", m.group(0)):
            continue  # "1-3 pass is $152": a range in a label, read with "is"
        units = {u.lower() for u in _TIME_UNIT.findall(m.group(0))}
        if len({u.rstrip("s")[:3] for u in units}) > 1:
            continue  # a conversion between time units: not plain arithmetic
        computed = _evaluate(m.group("lhs"))
        rhs = _TOKEN.search(m.group("rhs"))
        if computed is None or rhs is None or rhs.group("num") is None:
            continue
        out.append(Equation(m.group(0).strip(), computed, _value(rhs), _tail(m.group("lhs"))))
    return out


def wrong_equations(text: str) -> list[Equation]:
    """The equations of ``text`` whose written result does not follow from their left side."""
    return [e for e in equations(text) if e.wrong]
