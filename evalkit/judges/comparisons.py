"""The answer's own comparisons: two values a claim sets against each other, checked.

What it is for: an answer that compares two of its own figures ("her 58 hours fall just short of the
57.6-hour minimum", "96.7%，比一季度的96.9%有所提升", "907.8元，没有超过公司800元的报销上限") gives the judge
positive evidence, as its own arithmetic does (:mod:`.arithmetic`): when the values it wrote do not stand
in the order it says, the comparison is wrong whatever the evidence states, and the offline judge calls
the claim ``unsupported`` with both values in the reason. A right comparison proves nothing about the
values (they are checked as values, like any other).

:func:`wrong_comparisons` reads a claim's atoms: two numbers or two durations (A, then B), in one
clause, with the same unit (a currency, %, a unit word; a bare number against a bare number; a bare
number against a duration when the unit's word follows it: "58 contact hours"), and the words between
or around them that set a direction (``data/comparison_cues.txt``: "above", "short of", 超过, 比 … 高,
"cheaper … at $85 versus $55"). A negation just before the words ("not above", 没有超过, 不低于) asks for
"at most" or "at least". Equal values never make a comparison wrong (a rounded "just above" stays right).
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from evalkit.text.lexicon import CJK, cue_table
from evalkit.text.units import SECONDS
from evalkit.text.values import Atom

__all__ = ["Comparison", "wrong_comparisons"]

MAX_GAP = 40      # characters between A and B (the words of one comparison, not of two clauses)
MAX_BEFORE = 40   # characters between a "before" word and A ("the cheaper option up front, at $85 versus $55")
_CLAUSE_END = re.compile(r"[.;!?。；！？\n]|,\s+(?:and|but|so|while|whereas)\b|，(?:但|而|所以|因此)")
_VERSUS = re.compile(r"^\s*(?:[A-Za-z]{1,5}\s+)?(?:vs\.?|versus|against|compared\s+(?:with|to)|对|相比)\s*", re.IGNORECASE)
_NEGATION = re.compile(r"(?:\bnot|n't|\bnever|\bno)\s+(?:\w+\s+)?$|(?:没有|没|未|不)$", re.IGNORECASE)
_DIFFERENCE = re.compile(r"\s*(?:个百分点|percentage\s+points?|points?\b|pts\b)", re.IGNORECASE)
_BOUND_BEFORE = re.compile(r"(?:不到|不足|低于|高于|超过|不少于|不低于|不超过|不高于|不多于|至少|最多|最少|最高|最低|under|over|below|above|"
                           r"less\s+than|more\s+than|at\s+least|at\s+most|up\s+to)\s*[$€£¥]?\s*$", re.IGNORECASE)
_JOINED = re.compile(r"\b(?:and|or|but|while|whereas|then)\b|或者|或|而且|并且|以及")
_RESULT = re.compile(r"\b(?:comes?|came|works?|worked)\s+(?:out\s+)?to\b|\btotals?\b|=|\bgives?\b|\bmakes?\b", re.IGNORECASE)
_IN_RANGE = re.compile(r"(?:不在|不属于|不处在|处在|处于|属于|落在|介于|在|\b(?:not\s+)?(?:with)?in\b|\boutside(?:\s+of)?\b|"
                       r"\b(?:not\s+)?between\b)(?:\s+the)?\s*[$€£¥]?\s*$", re.IGNORECASE)
_OUTSIDE = re.compile(r"不在|不属于|不处在|\bnot\b|\boutside\b", re.IGNORECASE)
_RANGE_JOIN = re.compile(r"\s*[^\W\d]{0,2}\s*(?:至|到|-|–|—|~|～|\bto\b|\band\b)\s*[$€£¥]?\s*", re.IGNORECASE)
_RANGE_AFTER = re.compile(r"\s*[^\W\d]{0,3}?\s*(?:的)?(?:区间|之间|范围|档|段|以内|\b(?:range|band|bracket|tier|group|zone|"
                          r"window|interval)\b)", re.IGNORECASE)
# an infix cue that is a verb itself ("exceeds", "falls short of"); any other ("above", "more than") joins A and B
# only after a verb or a comma ("$6,200 is under the $10,000 limit", "about 81%, above the 80% minimum")
_VERB_CUE = re.compile(r"exceed|(?:falls?|fell|falling)\s", re.IGNORECASE)
_VERB = re.compile(r"\b(?:is|are|was|were|be|been|being|remains?|remained|stays?|stayed|sits?|sat|falls?|fell|comes?|came|"
                   r"runs?|ran|lies|lay|ends?|ended|stands?|stood|goes|went|gets?|got|rises?|rose|drops?|dropped|"
                   r"reach(?:es|ed)?|keeps?|kept|leaves?|left)\b|['’]s\b", re.IGNORECASE)
_DURATION_WORD = {"h": r"hours?|hrs?|小时", "min": r"minutes?|mins?|分钟", "d": r"days?|天|日", "w": r"weeks?|周",
                  "s": r"seconds?|secs?|秒"}
_DIRECTIONS = {"gt": ">", "lt": "<"}


_CUES = cue_table("comparison_cues")


@dataclass(frozen=True)
class Comparison:
    """A comparison a claim writes: ``a`` (as written) stands ``op`` (``>``, ``<``, ``>=``, ``<=``) to ``b``, or
    ``in`` / ``not in`` the range ``b`` (from ``right`` to ``high``)."""

    a: str
    op: str
    b: str
    left: float
    right: float
    high: float | None = None  # a range's upper end (``op`` "in" or "not in": ``b`` is the range as written)

    @property
    def wrong(self) -> bool:
        if self.high is not None:
            inside = min(self.right, self.high) <= self.left <= max(self.right, self.high)
            return inside != (self.op == "in")
        return {">": self.left < self.right, "<": self.left > self.right,
                ">=": self.left < self.right, "<=": self.left > self.right}[self.op]

    def describe(self) -> str:
        says = {">": "more than", "<": "less than", ">=": "at least", "<=": "at most", "in": "within",
                "not in": "outside"}[self.op]
        return f"it says {self.a} is {says} {self.b}"


def _bare_as(atom: Atom, text: str, duration: Atom) -> float | None:
    """A bare number as a duration like ``duration`` (in seconds), when the duration's word follows it ("58
    contact hours")."""
    word = next((w for w in _DURATION_WORD.values() if re.search(rf"\d\s*-?\s*(?:{w})", duration.text, re.I)), None)
    q = duration.quantity
    if not (word and q and q.unit in SECONDS and atom.quantity):
        return None
    if not re.match(rf"(?:\s+\w+){{0,2}}?\s*(?:{word})\b", text[atom.end:], re.IGNORECASE):
        return None
    return atom.quantity.value * SECONDS[q.unit]


def _comparable(a: Atom, b: Atom, text: str) -> tuple[float, float] | None:
    """The values of ``a`` and ``b`` in one unit, or None when the two do not compare."""
    qa, qb = a.quantity, b.quantity
    if qa is None or qb is None or a.kind not in ("number", "duration") or b.kind not in ("number", "duration"):
        return None
    if qa.kind == qb.kind and qa.unit == qb.unit:
        return qa.value, qb.value
    if qa.kind == "number" and qa.unit is None and qb.kind == "duration":
        left = _bare_as(a, text, b)
        return None if left is None else (left, qb.value)
    if qb.kind == "number" and qb.unit is None and qa.kind == "duration":
        right = _bare_as(b, text, a)
        return None if right is None else (qa.value, right)
    return None


def _op(code: str, negated: bool) -> str:
    op = _DIRECTIONS[code]
    return ({">": "<=", "<": ">="}[op]) if negated else op


def _direction(text: str, a: Atom, b: Atom, between: str) -> str | None:
    """The order the words around ``a`` and ``b`` assert (``>``, ``<``, ``>=``, ``<=``), or None."""
    for code, cue in _CUES:
        where, _, form = code.partition("-")
        if not form:  # between A and B
            m = cue.search(between)
            if m and _infix_ok(between, m):
                return _op(where, bool(_NEGATION.search(between[:m.start()])))
        elif form == "after" and "比" in between:  # A，比 B 有所提升
            if cue.match(text, b.end, b.end + 6) or cue.match(text, b.end + 1, b.end + 7):
                return _op(where, False)
        elif form == "before" and _VERSUS.match(between):  # the cheaper option, at A versus B
            head = _CLAUSE_END.split(text[max(0, a.start - MAX_BEFORE):a.start])[-1]
            hits = list(cue.finditer(head))
            if hits:
                return _op(where, bool(_NEGATION.search(head[:hits[-1].start()])))
    return None


def _plain_pair(text: str, a: Atom, b: Atom, between: str) -> bool:
    """Whether ``a`` and ``b`` are two values of one comparison, not a bound, a difference or two clauses' values."""
    if not (re.search(r"\d", a.text) and re.search(r"\d", b.text)):
        return False  # 二级, "two badges beyond the four": a grade or a count in words, not a figure compared
    if any(_DIFFERENCE.match(text[x.end:x.end + 16]) or _DIFFERENCE.search(x.text) for x in (a, b)) or _BOUND_BEFORE.search(text[:a.start]):
        return False  # "不到1个百分点", "0.4 points more than": a difference; "不到97%，比…": A is a bound itself
    if re.search(r"[)）]", between) or _JOINED.search(between):
        return False  # A inside a parenthesis that closes before B; "in 2024 and above CNY 10,000": two clauses
    if re.match(r"\s*的?部分", text[b.end:]):
        return False  # "超出承诺额 120% 的部分": B names a part, not a value compared
    qa, qb = a.quantity, b.quantity
    if qa and qb and qa.kind == qb.kind == "number" and qa.unit is None and qb.unit is None:
        return _same_word_after(text, a, b)
    return True


def _infix_ok(between: str, m: re.Match[str]) -> bool:
    """Whether an infix cue joins A and B itself: close to both, A's clause not cut by a comma with words of its own."""
    before, after = between[:m.start()], between[m.end():]
    zh = bool(CJK.search(between))
    if zh:
        if after.startswith("的") or len(after.strip()) > 4:
            return False
        parts = re.split(r"[，,]", before)
        return len(parts) == 1 and len(before) <= 8 or len(parts) == 2 and len(parts[0]) <= 2 and len(parts[1]) <= 3
    if len(re.findall(r"[\w'’-]+", after)) > 2 or _RESULT.search(before):
        return False
    if not _VERB_CUE.match(m.group(0)) and not (re.search(r"[,—–]", before) or _VERB.search(before)):
        return False  # "25 minutes longer than 45", "1.5 kg over the 23 kg threshold": A is the difference
    parts = before.split(",")
    words = [len(re.findall(r"[\w'’-]+", x)) for x in parts]
    return words[0] <= 4 if len(parts) == 1 else len(parts) == 2 and words[0] <= 1 and words[1] <= 1


def comparisons(text: str, atoms: Sequence[Atom]) -> list[Comparison]:
    """Every comparison of two of ``atoms`` (the claim's, in text order) that ``text`` writes out."""
    out = []
    vals = [a for a in atoms if a.kind in ("number", "duration")]
    for a, b in zip(vals, vals[1:]):
        between = text[a.end:b.start]
        if len(between) > MAX_GAP or _CLAUSE_END.search(between) or not _plain_pair(text, a, b, between):
            continue
        pair = _comparable(a, b, text)
        if pair is None:
            continue
        found = _direction(text, a, b, between)
        if found:
            out.append(Comparison(a.text.strip(), found, b.text.strip(), *pair))
    for a, lo, hi in zip(vals, vals[1:], vals[2:]):
        ranged = _range(text, a, lo, hi)
        if ranged is not None:
            out.append(ranged)
    return out


def _range(text: str, a: Atom, lo: Atom, hi: Atom) -> Comparison | None:
    """"68岁，处在60至64周岁的区间", "$58,000 falls in the $40,000-$60,000 band": ``a`` said to be in (or outside)
    the range from ``lo`` to ``hi``; ``lo`` without a unit takes ``hi``'s ("60至64周岁")."""
    pre, mid, post = text[a.end:lo.start], text[lo.end:hi.start], text[hi.end:hi.end + 12]
    m = _IN_RANGE.search(pre)
    if not (m and _RANGE_JOIN.fullmatch(mid) and len(pre) <= MAX_GAP and not _CLAUSE_END.search(pre)):
        return None
    if not (_RANGE_AFTER.match(post) or re.search(r"\bbetween\b|介于", m.group(0), re.IGNORECASE)):
        return None
    qa, ql, qh = a.quantity, lo.quantity, hi.quantity
    if qa is None or ql is None or qh is None or not (re.search(r"\d", a.text) and re.search(r"\d", hi.text)):
        return None
    if (ql.kind, ql.unit) != (qh.kind, qh.unit) and not (ql.kind == "number" and ql.unit is None):
        return None
    low = ql.value  # "10万至20万元": the low end, read as a number, in the high end's unit
    if (ql.kind, ql.unit) != (qh.kind, qh.unit) and qh.kind == "duration":  # "3至5天": a duration is in seconds
        if qh.unit not in SECONDS:
            return None
        low = ql.value * SECONDS[qh.unit]
    if (qa.kind, qa.unit) != (qh.kind, qh.unit):
        return None
    if qa.unit is None and not _same_word_after(text, a, hi):  # bare numbers must count one thing
        return None
    left = qa.value
    op = "not in" if _OUTSIDE.search(m.group(0)) else "in"
    return Comparison(a.text.strip(), op, text[lo.start:hi.end].strip(), left, low, qh.value)


def _same_word_after(text: str, a: Atom, b: Atom) -> bool:
    """Whether two bare numbers count one thing: the word after ``a`` is in the words after ``b`` ("68岁" and
    "64周岁", "85 points" and "90 points")."""
    after_a = re.match(r"\s*([A-Za-z]+|[^\W\d])", text[a.end:])
    return after_a is not None and after_a.group(1).lower().rstrip("s") in text[b.end:b.end + 12].lower()


def wrong_comparisons(text: str, atoms: Sequence[Atom]) -> list[Comparison]:
    """The comparisons of ``text`` whose values do not stand in the order it says (see the module docstring)."""
    return [c for c in comparisons(text, atoms) if c.wrong]
