"""Reach: how a value an answer states *could* follow from the evidence, in a general way.

What it is for: the offline judge calls a claim ``unsupported`` only on positive evidence
against it. A number, date or name that no passage states with its subject may still be
right: rescaled, converted, computed, inside a stated range, or written in another format.
:func:`reach` says how a value could follow from what the evidence, the question and the
answer's other values state. A value it reaches makes its claim ``unverified`` (the reason
names the derivation), never ``supported``: arithmetic that fits by chance must not vouch
for a wrong number. A value it cannot reach is *absent*, the positive evidence an
``unsupported`` verdict needs.

The derivations, general on purpose (no rule for one wording), each within the target's
own rounding and hedge (:func:`evalkit.judges.readings.interval`):

1. presence: the value is stated somewhere in its unit, with another subject (a number
   without a unit: as written, in any unit; a number with one: also as a bare number, whose
   unit the evidence may give elsewhere; a negative number: without its sign); a one
   ("一间", "one of them") is a count;
2. membership in a narrow stated range ("2020–2022", "3-5 days", "5至10"; not "0-3,600");
3. a conversion between common units (:data:`CONVERSIONS`: mile/km, lb/kg, ft/m, gal/L,
   GB/MB, °F/°C), when the target names one unit and the evidence the other;
4. one operation on two stated values whose units fit the target's: a + b, a - b, a x b
   (a count or a share times an amount), a / b, a / b and (a - b) / b as a percentage
   (years take part in sums and differences only: ages and durations);
5. the sum of all stated values in the target's unit;
6. a zero ("$0": the evidence may say "free" or "waived"); a bound ("不到一小时") that a
   stated value satisfies; a duration between two stated dates or years;
7. a bare whole number up to :data:`MAX_COUNT` in a claim that lists as many things: a
   count the answer made itself ("材料共三项：①…②…③…"), or of what the question lists; a clock time: a stated time plus or
   minus a stated duration;
8. for a number none of the above reaches, in a claim or an answer that computes: two operations
   on three stated values, ``(a op b) op c``, with units that fit (:mod:`.chains`; it fits some
   wrong values by chance, which are then ``unverified``: the trade is measured there). Not for
   a duration (the small counts of clause and amendment numbers fit any few days) or a bare count
   under 100. In a claim stated plainly ("每人实缴4,480元"), only where the answer states another
   value in the target's unit (an operand it worked from: "减300元", "再减200元"), no evidence
   sentence states another value for the claim's clause, and the fit is specific: at most
   :data:`MAX_CHANCE` of the values as precise as the target near it fit too
   (:func:`.chains.nearby_fits`). A short answer's lone figure ("收益是3733.7亿元") and a round or
   small one ("20元", which two steps reach from almost any evidence) stay absent.

Dates: every part the answer gives (year, month, day, quarter) is stated by some date of
the evidence or the question (a year also as a plain number or inside a stated range); a
quarter also by a month inside it. A "code" that is a number with an unread unit (``41kWh``, ``2-point``,
``16-17-year-olds``) is reached as its numbers; a product or error code (``LX-200``) must be
stated as it is. Names: :mod:`.reach_names`.
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from datetime import date
from decimal import Decimal
from itertools import combinations

from evalkit.judges.calendar import counted_date, counted_weekday, weekday_check
from evalkit.judges.chains import nearby_fits, two_steps
from evalkit.judges.counter import counter_statement
from evalkit.judges.reach_names import reach_name
from evalkit.judges.readings import interval
from evalkit.judges.stated import (
    Operand,
    bare_counts,
    code_quantity,
    figure,
    operands,
    stated_numbers,
    stated_ranges,
)
from evalkit.text.quantities import Quantity, find_quantities, quantities_match
from evalkit.text.values import WORDS_AND_NUMBERS, Atom, fold

__all__ = ["CONVERSIONS", "MAX_CHANCE", "reach"]

# (name, factor, a unit, the other unit): a target in one unit, converted from a value the evidence
# gives where it names the other (x factor from the first to the second)
CONVERSIONS: tuple[tuple[str, float, str, str], ...] = (
    ("mile -> km", 1.609344, r"km|kilomet|公里|千米", r"mile|英里"),
    ("lb -> kg", 1 / 2.20462, r"kg|kilo|公斤|千克", r"\blbs?\b|pound|磅"),
    ("ft -> m", 1 / 3.28084, r"\bm\b|met(?:er|re)|米", r"f(?:oo|ee)t|\bft\b|英尺"),
    ("inch -> cm", 2.54, r"cm|厘米", r"inch|英寸"),
    ("gal -> L", 3.78541, r"\bl\b|lit(?:er|re)|升", r"gal|加仑"),
    ("GB -> MB", 1024.0, r"\bMB\b|兆", r"\bGB\b|\bG\b"), ("TB -> GB", 1024.0, r"\bGB\b", r"\bTB\b"),
    ("cm -> mm", 10.0, r"mm|毫米", r"cm|厘米"), ("m -> mm", 1000.0, r"mm|毫米", r"\d\s?m\b|(?<![毫厘千])米"),
    ("m -> cm", 100.0, r"cm|厘米", r"\d\s?m\b|(?<![毫厘千])米"), ("km -> m", 1000.0, r"\d\s?m\b|(?<![毫厘千])米", r"km|公里|千米"),
    ("GHz -> MHz", 1000.0, r"MHz", r"GHz"), ("kg -> g", 1000.0, r"\d\s?g\b|(?<![公千毫])克", r"kg|公斤|千克"))
_TEMPERATURE = frozenset({"c", "deg"})  # the ends of a range (-10°C ~ 60°C): no sums, differences or products
MAX_CHANCE = 0.25  # step 8 in a plain claim: the most of the values near a target the search may also fit
MAX_COUNT = 10  # a bare whole number up to this is a count an answer makes itself ("三项", "both")


_g = figure


def _candidates(t: Quantity, values: Sequence[Operand], claim_text: str = "") -> Iterable[tuple[float, str]]:
    """What one operation on two stated values gives, with how (step 4 of the module docstring).

    Units must fit the target: a sum or difference of two values in its unit (durations in any
    unit; a number without a unit from two values in one unit: "多得50G" of 80GB and 30GB), a product of a
    value in its unit and a share, a rate or a count the claim itself writes, a ratio or
    percentage of two values in one unit; a year only in sums and differences (ages,
    durations); a bare number multiplies from 3 up (40 台 x 3.2万元; doubling fits too much) or
    when the claim writes it; never a one ("1 hour" times 180 is any 180 hours), a temperature, or into a
    target under 10 without a unit (small numbers fit by chance). When neither value is one the answer or the question states, only what a
    comparison answer computes from two documents counts: a sum, difference or percentage of
    two values in one explicit unit (money, kWh; not bare counts, which fit some small number
    by chance), a rate or share times an amount, and the time between two stated clock times.
    """
    counted = bare_counts(claim_text)
    pct = t.unit == "%"

    def own(v: Operand) -> bool:
        return v.kind == t.kind and (v.unit == t.unit or t.kind == "duration")

    for a, b in combinations(values, 2):
        hi, lo = (a, b) if a.value >= b.value else (b, a)
        shown = a.in_answer or b.in_answer
        unit_pair = hi.kind == lo.kind and hi.unit != "%" and (hi.kind == "duration" or (
            hi.unit is not None and hi.unit == lo.unit))
        big = t.unit is None and abs(t.value) >= 100  # a large count rarely fits a sum by chance
        if t.kind == "duration" and hi.kind == lo.kind == "time":  # 06:40 - 06:32: the time between two stated times
            yield (hi.value - lo.value) * 60, f"the time from {_g(lo.value)} to {_g(hi.value)} min"
        dropped = t.unit is None and t.kind == "number" and unit_pair  # "多得50G": 80GB - 30GB, its unit unread
        if ((own(hi) and own(lo)) or dropped) and not pct and (shown or unit_pair or big or hi.year or lo.year) \
                and 1 not in (hi.raw, lo.raw) and t.unit not in _TEMPERATURE:  # "1 day" + "2 days" fits anything small
            yield hi.value + lo.value, f"{_g(hi.value)} + {_g(lo.value)}"
            yield hi.value - lo.value, f"{_g(hi.value)} - {_g(lo.value)}"
        if pct and hi.unit == lo.unit == "%":  # 80% - 30% = 50 (percentage points)
            yield hi.value - lo.value, f"{_g(hi.value)}% - {_g(lo.value)}%"
            yield hi.value + lo.value, f"{_g(hi.value)}% + {_g(lo.value)}%"
        if hi.year or lo.year:
            continue
        for x, y in ((hi, lo), (lo, hi)):
            if own(x) and not pct and y.kind == "number" and y.unit != x.unit and 1 not in (x.raw, y.raw) \
                    and (y.unit is not None or y.value >= 3 or (shown and y.value in counted)) \
                    and not (t.unit is None and abs(t.value) < 10) and not {x.unit, y.unit} & _TEMPERATURE:
                # a share, a rate in the target's unit (1.5元/公斤 x 500公斤), or a count the claim writes
                f = y.value / 100 if y.unit == "%" else (y.raw if y.raw is not None else y.value)
                yield x.value * f, f"{_g(x.value)} x {_g(f * 100 if y.unit == '%' else f)}{'%' if y.unit == '%' else ''}"
        big_pair = hi.unit == lo.unit and hi.unit != "%" and min(abs(hi.value), abs(lo.value)) >= 100
        if not (shown or (pct and (unit_pair or big_pair))):  # 4.2 million -> 5.0 million: about 19%
            continue
        if t.kind == "time" and {hi.kind, lo.kind} == {"time", "duration"}:  # 06:10 + 45 minutes
            clock, span = (hi, lo) if hi.kind == "time" else (lo, hi)
            yield clock.value + span.value / 60, f"{_g(clock.value)} min + {_g(span.value / 60)} min"
            yield clock.value - span.value / 60, f"{_g(clock.value)} min - {_g(span.value / 60)} min"
        if lo.value and hi.kind == lo.kind and hi.unit == lo.unit:
            if pct:
                yield lo.value / hi.value * 100, f"{_g(lo.value)} / {_g(hi.value)} as a percentage"
                yield hi.value / lo.value * 100, f"{_g(hi.value)} / {_g(lo.value)} as a percentage"
                yield (hi.value - lo.value) / lo.value * 100, f"({_g(hi.value)} - {_g(lo.value)}) / {_g(lo.value)}"
                yield (hi.value - lo.value) / hi.value * 100, f"({_g(hi.value)} - {_g(lo.value)}) / {_g(hi.value)}"
            elif t.unit is None and t.kind == "number":  # a ratio of two like values is a bare number, never a duration
                yield hi.value / lo.value, f"{_g(hi.value)} / {_g(lo.value)}"
        if lo.value and own(hi) and not pct and lo.unit != hi.unit and (lo.unit is not None or lo.value in counted):
            # a rate: $50 for 10 kg is $5 a kg; a share: $120 for 4 people
            yield hi.value / lo.value, f"{_g(hi.value)} / {_g(lo.value)}"


_DAY, _YEAR = 86400.0, 365.25 * 86400.0


def _date_gap(q: Quantity, lo: float, hi: float, atoms: Sequence[Atom]) -> str | None:
    """A duration that is the time between two stated dates: days between full dates, years between years."""
    full = sorted({(d.year or 2001, d.month, d.day) for a in atoms for d in a.dates if d.month and d.day})
    years = sorted({d.year for a in atoms for d in a.dates if d.year})
    slack = max(0.03 * q.value, _DAY / 2)
    for x, y in combinations(full, 2):
        days = abs((date(*y) - date(*x)).days)
        if days and (lo - slack <= days * _DAY <= hi + slack):
            return f"{q.text.strip()} = the days from {x[1]}/{x[2]} to {y[1]}/{y[2]}"
    for y1, y2 in combinations(years, 2):
        if abs(y2 - y1) * _YEAR and lo - slack - _YEAR / 2 <= abs(y2 - y1) * _YEAR <= hi + slack + _YEAR / 2:
            return f"{q.text.strip()} = the years from {y1} to {y2}"
    return None


def _in_code(text: str, evidence: Sequence[Atom]) -> str | None:
    """The evidence code a value with its unit is written inside ("60 W" in "HN-60W", "512MB" in "SD-512MB"), if any."""
    compact = re.sub(r"[\s,]", "", fold(text))
    if not re.match(r"\d", compact) or not re.search(r"[a-z]", compact):
        return None
    found = re.compile(rf"(?<![\d.]){re.escape(compact)}(?![a-z0-9])")
    return next((a.text.strip() for a in evidence if a.kind == "code" and found.search(re.sub(r"[\s_.-]", "", fold(a.text)))), None)


def _listed(text: str, count: float) -> bool:
    """Whether ``text`` lists at least ``count`` things (separators between them): a count it made itself."""
    seps = len(re.findall(r"[、；;]|[①②③④⑤⑥⑦⑧⑨]|以及|和|与|及", text))
    if re.search(r",[^,]*\b(?:and|or)\b", text):  # "A, B and C"
        seps += text.count(",") + 1
    return seps >= count - 1


def _reach_quantity(target: Atom, claim_text: str, evidence: Sequence[Atom], numbers: Sequence[float],
                    ranges: Sequence[tuple[float, float]], values: Sequence[Operand], texts: Sequence[str],
                    question: str = "", computed: bool = False) -> str | None:
    q = target.quantity
    assert q is not None
    lo, hi, reading = interval(q, claim_text, target.start, target.end)
    if q.value == 0:  # "$0", "即0元": what "free", "waived", "免收" say in words
        return f"{q.text.strip()} is a zero, which the evidence may state in words (free, waived, none)"
    if reading in ("at most", "at least", "place"):
        kin = [a for a in evidence if a.quantity is not None and a.quantity.kind == q.kind
               and (q.kind == "duration" or a.quantity.unit == q.unit)]
        if (met := next((a for a in kin if a.quantity is not None and lo <= a.quantity.value <= hi), None)):
            return f"the stated {met.text.strip()} satisfies the bound {q.text.strip()}"
        # otherwise the bound restates its number: reach that, not the whole span
        lo, hi = q.value - max(q.step / 2, 1e-9 * abs(q.value)), q.value + max(q.step / 2, 1e-9 * abs(q.value))
    if q.kind == "duration" and (how := _date_gap(q, lo, hi, evidence)):
        return how
    if q.kind == "duration" and (m := next((a for a in evidence if a.quantity is not None and a.quantity.unit == "m"
                                             and lo <= a.quantity.value * 60 <= hi), None)):
        return f"{q.text.strip()} is stated as {m.text.strip()} (m: minutes, or metres)"  # "interval: 1m, 5m, 1h"
    if q.unit is not None and (code := _in_code(q.text, evidence)):
        return f"{q.text.strip()} is written inside {code} in the evidence"  # "the HN-60W adapter": 60 W
    if q.kind == "time":  # a clock time: stated in the other half of the day, or a stated time plus a duration
        clock = next((x for x in numbers if x in (q.value % 720, q.value % 720 + 720)), None)
        if clock is not None:
            return f"the clock time is stated as {_g(clock)} minutes of the day"
        return next((f"{q.text.strip()} = {how}" for value, how in _candidates(q, values) if lo <= value <= hi), None)
    if q.kind == "number" and q.unit is None and q.value == int(q.value) and 2 <= q.value <= MAX_COUNT \
            and (_listed(claim_text, q.value) or _listed(question, q.value)):
        return f"{q.text.strip()} counts what the claim or the question lists"
    written = {q.value, q.raw or q.value}
    scales = {q.value / w for w in written if w}

    def fits(x: float) -> bool:
        return any(lo <= x * s <= hi for s in scales)

    if q.kind == "number" and q.unit is None and q.value == 1:
        return f"{q.text.strip()} is one: a count, not a figure to look for"
    if q.kind == "number" and q.unit is None and 0 < q.value < 3 and q.value != int(q.value):
        for v in values:  # "$34 x 0.85" for "15% off", "£78 x 1.4" for "rush adds 40%"
            if v.unit == "%" and any(lo <= m <= hi for m in (v.value / 100, 1 - v.value / 100, 1 + v.value / 100)):
                return f"{q.text.strip()} is the multiplier of the stated {_g(v.value)}% (as a share, 1 minus or 1 plus it)"
    hit = next((a for a in evidence if a.quantity is not None and quantities_match(q, a.quantity)), None)
    if hit is not None:
        return f"{q.text.strip()} is stated in the evidence ('{hit.text.strip()}'), but not with its subject"
    if q.unit is None and (x := next((x for x in numbers if x in written), None)) is not None:
        return f"{q.text.strip()} is stated in the evidence (as {_g(x)}), but not with its subject"
    bare = [a.quantity.raw for a in evidence if a.quantity is not None and a.quantity.unit is None
            and a.quantity.kind == "number" and a.quantity.raw is not None]
    if q.unit is not None and (x := next((x for x in bare if x in written), None)) is not None:
        return f"{q.text.strip()} is stated in the evidence as {_g(x)}, without its unit"
    if q.value < 0 and (x := next((x for x in numbers if x == -q.value or x == -(q.raw or q.value)), None)):
        return f"{q.text.strip()} is stated in the evidence as {_g(x)} (its sign is the answer's arithmetic)"
    for a, b in ranges:  # a narrow range: years, small counts ("2020–2022", "3-5 days"), not "0-3,600"
        if a > 0 and (b <= 2 * a or (a >= 1000 and b - a <= 50)) and any(a <= w <= b for w in written):
            return f"{q.text.strip()} lies in the stated range {_g(a)}-{_g(b)}"
    joined = " ".join(texts)
    for name, f, mine, other in CONVERSIONS:
        for here, there, k in ((mine, other, f), (other, mine, 1 / f)):
            if re.search(here, q.text, re.IGNORECASE) and re.search(there, joined, re.IGNORECASE) \
                    and (x := next((x for x in numbers if fits(x * k)), None)) is not None:
                return f"{q.text.strip()} converts from {_g(x)} ({name})"
    if re.search(r"°|℃|℉|degree|度", q.text) and re.search(r"℉|°F|fahrenheit|华氏", joined + q.text, re.IGNORECASE) \
            and (x := next((x for x in numbers if fits(x * 1.8 + 32) or fits((x - 32) / 1.8)), None)) is not None:
        return f"{q.text.strip()} converts from {_g(x)} (°C/°F)"
    in_unit = [v.value for v in values if v.kind == q.kind and v.unit == q.unit and not v.year]
    if len(in_unit) >= 3 and fits(sum(in_unit)):
        return f"{q.text.strip()} = the sum of the stated values in its unit"
    for value, how in _candidates(q, values, claim_text):
        if fits(value):
            return f"{q.text.strip()} = {how}"
    if q.kind != "number" or (q.unit is None and abs(q.value) < 100):  # step 8 (a small count fits anything)
        return None
    ops = [(v.value, v.unit, v.label()) for v in values if not v.year] + [
        (v.value / 100, None, v.label()) for v in values if v.unit == "%"]
    ordered = sorted(scales)
    if computed:
        how = two_steps(lo, hi, ordered, q.unit, ops)
        return f"{q.text.strip()} = {how} (two steps: this wide a search also fits some wrong values)" if how else None
    shown = any(v.in_answer and v.kind == q.kind and v.unit == q.unit and v.value != q.value for v in values)
    if shown and q.unit not in _TEMPERATURE \
            and counter_statement(target, claim_text, [t for t in texts if t != question]) is None \
            and (how := two_steps(lo, hi, ordered, q.unit, ops)):
        share = nearby_fits(lo, hi, _spacing(q), ordered, q.unit, ops)
        if share <= MAX_CHANCE:
            return (f"{q.text.strip()} = {how} (two steps, and a specific fit: {share:.0%} of the values as precise "
                    f"near it fit too)")
    return None


def _spacing(q: Quantity) -> float:
    """How far apart values as precise as ``q`` are: the place of its last written non-zero digit, in its unit
    (4,480 -> 10, 3,136 -> 1, 583.2 -> 0.1, 0.59万 -> 100)."""
    raw = q.raw or q.value
    exponent = Decimal(str(abs(raw))).normalize().as_tuple().exponent
    return 10.0 ** int(exponent) * (q.value / raw if raw else 1.0)


def _reach_date(target: Atom, date_atoms: Sequence[Atom], numbers: Sequence[float],
                ranges: Sequence[tuple[float, float]]) -> str | None:
    stated = [d for a in date_atoms for d in a.dates]
    years = {d.year for d in stated if d.year} | {x for x in numbers if 1000 <= x <= 2999 and x == int(x)}
    for c in target.dates:
        if c.year and c.year not in years and not any(a <= c.year <= b for a, b in ranges):
            return None
        if c.month and not any(d.month == c.month or (d.quarter and (c.month - 1) // 3 + 1 == d.quarter)
                               for d in stated):
            return None
        if c.day and not any(d.day == c.day for d in stated):
            return None
        if c.quarter and not any(d.quarter == c.quarter or (d.month and (d.month - 1) // 3 + 1 == c.quarter)
                                 for d in stated):
            return None
    return f"the parts of {target.text.strip()} are stated in the evidence (another format, range or subject)"


_QUOTE_MARKS = frozenset("“「『\"‘《")
def _sibling_code(target: Atom, atoms: Sequence[Atom]) -> bool:
    """Whether the evidence states a code like ``target`` but for its numbers ("tier-1" for "tier-2"): another value."""
    shape = re.sub(r"\d+(?:\.\d+)?", "#", target.key)
    return any(a.kind == "code" and a.key != target.key and re.sub(r"\d+(?:\.\d+)?", "#", a.key) == shape for a in atoms)


def reach(target: Atom, claim_text: str, atoms: Sequence[Atom], texts: Sequence[str],
          answer: Sequence[Atom] = (), question: str = "", computed: bool = False) -> str | None:
    """How ``target`` (an atom of the claim ``claim_text``) could follow from the stated ``atoms``
    and ``texts`` (evidence passages, the question) and the ``answer``'s other atoms (and the
    question's: values a user gives are operands the answer may work from), or None: absent.
    ``computed``: the claim or its answer computes (:func:`evalkit.judges.counter.computes`), so a
    value two operations away is one it may have computed (step 8).

    See the module docstring for the derivations tried.
    """
    if target.kind == "code":
        whole = re.match(r"\d+\.", claim_text[max(0, target.start - 12):target.start][::-1])
        if whole:  # "2.0GHz" read as the code "0GHz": take the whole number
            start = target.start - len(whole.group(0))
            target = Atom("code", claim_text[start:target.end], target.key, start, target.end)
        q = code_quantity(target)
        if q is not None:  # "41kWh": reach it as the number it is
            target = Atom("number", target.text, target.key, target.start, target.end, quantity=q)
        elif (target.text[:1].isdigit() or (WORDS_AND_NUMBERS.fullmatch(target.text) and not _sibling_code(target, atoms))) \
                and {float(x) for x in re.findall(r"\d+(?:\.\d+)?", target.text)} <= set(stated_numbers(atoms, texts)):
            return f"the numbers of {target.text.strip()} are stated in the evidence"  # "16-17-year-olds", "pre-1950"
        else:
            return None  # a product or error code is stated as it is, or it is absent
    years = sorted({d.year for a in list(atoms) + list(answer) for d in a.dates if d.year})
    if target.kind == "entity":
        day = weekday_check(target, claim_text, years)  # "Monday 3 June": the weekday of the date beside it
        if day is not None:
            return day[1] if day[0] else None
        if re.search(r"\d", target.text) and claim_text[max(0, target.start - 1):target.start] in _QUOTE_MARKS:
            # “7天以上、不满365天”: a rule's wording quoted in the answer's words, not a name; its figures are atoms too
            return f"“{target.text}” is quoted wording with figures, which are checked as values"
        return counted_weekday(target, [t for t in texts if t != question], question) or reach_name(target, texts)
    answer = [a for a in answer if a is not target]
    numbers = stated_numbers(list(atoms) + answer, texts)
    ranges = stated_ranges(texts)
    if target.kind == "date":
        dated = [a for a in list(atoms) + answer if a.kind == "date"]
        spans = [(a.quantity.value, a.quantity.unit or "") for a in list(atoms) + answer
                 if a.quantity is not None and a.quantity.kind == "duration"]
        shown = [(q.value, q.unit or "") for q in find_quantities(claim_text) if q.kind == "duration"]
        stated = [d for a in dated for d in a.dates]
        how = _reach_date(target, dated, numbers, ranges) or next(
            (how for c in target.dates if (how := counted_date(c, stated, spans, years, shown, near=False))), None)
        if how or counter_statement(target, claim_text, [t for t in texts if t != question]) is not None:
            return how  # a count that fits by chance must not overrule a date the evidence states for the same thing
        return next((how for c in target.dates if (how := counted_date(c, stated, spans, years, shown))), None)
    if target.quantity is None:
        return None
    return _reach_quantity(target, claim_text, atoms, numbers, ranges, operands(atoms, answer, texts), texts, question,
                           computed)
