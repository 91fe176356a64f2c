"""Counter-statements: the positive evidence an unreached value needs before it is called unsupported.

What it is for: the offline judge looks for every number, duration, time and date of a claim
in the evidence, and tries the general derivations of :mod:`evalkit.judges.reach` on the ones
no passage states. A value neither stated nor reached was, up to judge v10, *absent*, and its
claim ``unsupported``. On multi-document answers written blind to the rules that made most
correct answers "hallucinated" (65% of them on the held-out sets A and B): their values are
computed in two or more steps (a total of several fees, a share of a computed amount, a
deadline counted from a computed date), which no one-step derivation reaches, and a search
over two steps fits any number by chance. Such a value is not evidence of a hallucination;
it is a value the rules cannot check.

So an unreached value is ``unsupported`` (:func:`judge_unreached` says why) when

1. **the evidence says otherwise**: a sentence of the evidence that says what the claim's clause
   says (at least :data:`COUNTER_OVERLAP` of the claim clause's content words, values aside, and
   two of them, or the one of a one-word clause)
   states another value of the same kind and unit (a date for a date, a duration for a
   duration, an amount in the same currency or unit): "the fee is $45" against "the fee
   is $40"; or
2. **the claim does not compute**: its sentence has no word or sign of a computation
   (``data/computation_cues.txt``: total, left, about, 合计, 约, =, x...): a plain
   statement of a figure the evidence does not give ("The warranty lasts 5 years"), in an
   answer that computes nowhere, to a question that asks for no computation ("How much ... in
   total?" makes its plain "You'll pay $360." a computed value), and the figure is not finer
   than the evidence (v24, :func:`finer_than_evidence`): an amount written in at least
   :data:`MIN_COMPUTED_DIGITS` significant digits, more than any value in its unit the evidence
   states ("You owe $229.75." against "$95" and "$38.50 per hour"), copies no value and
   mistypes none (a changed figure keeps the look of the one it replaces); it is a
   computation's result stated plainly, where there is something to compute from (v27: the
   user's own values in the question, or another value of its unit in the answer; a lone
   "CNY 987,654" in answer to "What is the card limit?" is invented). In an answer that computes, such a figure is
   computed even where an evidence clause states another value for it (v26: "每箱9,931.6元"
   against "每箱180元", an operand of the computation).

Otherwise (a computing sentence, and no evidence clause states another value for it) the
value is ``unverified``, and the reason says so: the cascade (``offline+nli``,
``offline+llm``) or a person decides it.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from evalkit.text.lexicon import content_terms, term_found
from evalkit.text.memo import shared
from evalkit.text.values import Atom, extract_atoms, mask_atoms
from evalkit.text.wordlists import alternation, phrases

__all__ = ["COUNTER_OVERLAP", "MIN_COMPUTED_DIGITS", "SMALL_COUNT", "VALUE_KINDS", "Counter", "asks_aggregate", "computes",
           "counter_statement", "finer_than_evidence", "judge_unreached", "same_kind", "significant_digits"]

COUNTER_OVERLAP = 0.5  # share of the claim clause's content words an evidence clause must say to speak of the same thing
VALUE_KINDS = ("number", "duration", "time", "date")
MIN_COMPUTED_DIGITS = 3  # a plain amount this precise, and finer than any of its unit the evidence states, is computed
_DIGITS = re.compile(r"\d[\d,]*(?:\.\d+)?")
SMALL_COUNT = 3  # a bare whole number up to this, before a noun of data/enumeration_nouns.txt, counts the answer's points
_ENUMERATION = re.compile(r"\s*(?:[a-z-]+\s+){0,2}?(?:" + alternation("enumeration_nouns", regex=True) + r")(?![a-z])",
                          re.IGNORECASE)
ABOUT_SHARE = 0.3  # a claim that says less of the evidence's words is on another topic (computes nothing from it)
ABOUT_MIN_TERMS = 4  # ... when it has this many content words (a shorter one is not judged off topic)
_CUES = phrases("computation_cues")
_CUE = re.compile("|".join(rf"\b(?:{c})\b" if re.search(r"[a-z]", c) else f"(?:{c})" for c in _CUES)
                  + r"|\d\s+[x*/]\s+\d", re.IGNORECASE)  # "3 x 12", not a date's "2026/1/24"
# a threshold (a limit, a minimum) or a rate (per month, 每位) is another quantity than an amount of its kind
_THRESHOLD_BEFORE = re.compile(r"(?:limit|maximum|max\.?|minimum|min\.?|cap|capped\s+at|threshold|up\s+to|at\s+least|at\s+most|"
                               r"no\s+more\s+than|no\s+less\s+than|not\s+(?:to\s+)?exceed(?:ing)?|exceed(?:ing|s)?|over|under|"
                               r"above|below|上限|下限|限值|限额|最高|最低|最多|至少|不得超过|不超过|不少于|不低于|超过|低于|高于|满)"
                               r"\s*(?:of\s+|is\s+|为|是)?(?:[A-Z]{3}\s?|[$¥€£]|人民币)?\s*$", re.IGNORECASE)
_THRESHOLD_AFTER = re.compile(r"^\s*(?:以内|以下|以上|之内|封顶|or\s+(?:more|less|fewer|under|over)|and\s+(?:above|below|up|under))",
                              re.IGNORECASE)
_RATE_AFTER = re.compile(r"^[^,，;；。.]{0,24}?(?:\bper\b|\beach\b|\bevery\b|\ban?\s+(?:hour|day|night|week|month|year|person|"
                         r"head|unit|item|sample|copy|page|km|mile|kg|ton)\b|/|每)", re.IGNORECASE)
_RATE_BEFORE = re.compile(r"(?:每|\bper\b|\bevery\b|\beach\b)[^,，;；。.]{0,6}$", re.IGNORECASE)


def _role(text: str, atom: Atom) -> str:
    """What a value states: a ``threshold`` (a limit, a minimum), a ``rate`` (per month, 每位) or an ``amount``."""
    before, after = text[:atom.start], text[atom.end:]
    if _THRESHOLD_BEFORE.search(before[-24:]) or _THRESHOLD_AFTER.match(after):
        return "threshold"
    if _RATE_AFTER.match(after) or _RATE_BEFORE.search(before[-10:]):
        return "rate"
    return "amount"


_CLAUSE = re.compile(r"[^,，;；:：。.!?！？\n]+(?:[.,](?=\d)[^,，;；:：。.!?！？\n]*)*")
_SENTENCE = re.compile(r"[^;；。.!?！？\n]+(?:[.](?=\d)[^;；。.!?！？\n]*)*")


@dataclass(frozen=True)
class Counter:
    """An evidence clause that states another value for what a claim's value is about."""

    value: str      # the evidence's value, as written
    clause: str     # the evidence clause that states it
    overlap: float  # share of the claim clause's content words the evidence clause says


_AGGREGATES = phrases("aggregate_cues")
_AGGREGATE = re.compile("|".join(rf"\b(?:{c})\b" if re.search(r"[a-z]", c) else f"(?:{c})" for c in _AGGREGATES),
                        re.IGNORECASE)


def asks_aggregate(question: str) -> bool:
    """Whether a question asks for a total, an average or a remainder of several values (``data/aggregate_cues.txt``):
    its answer's plain values are computations (a difference of two values is one step, which the rules reach)."""
    return bool(_AGGREGATE.search(question))


@shared(maxsize=20_000)
def computes(sentence: str) -> bool:
    """Whether a claim sentence shows a computation (a total, a remainder, a rounding, an arithmetic sign)."""
    return bool(_CUE.search(sentence))


def _clause_at(text: str, start: int) -> str:
    """The clause of ``text`` around character ``start`` (cut at commas, semicolons, colons and sentence marks)."""
    for m in _CLAUSE.finditer(text):
        if m.start() <= start < m.end():
            return m.group(0)
    return text


def same_kind(a: Atom, e: Atom) -> bool:
    """Whether evidence atom ``e`` is a value of the kind and unit of claim atom ``a`` (what could contradict it)."""
    if a.kind == "date" or e.kind == "date":
        if a.kind != e.kind or not a.dates or not e.dates:
            return False
        x, y = a.dates[0], e.dates[0]
        return bool(x.day) == bool(y.day) and bool(x.month) == bool(y.month)
    qa, qe = a.quantity, e.quantity
    if qa is None or qe is None or qa.kind != qe.kind:
        return False
    return qa.kind in ("duration", "time") or qa.unit == qe.unit


@lru_cache(maxsize=20_000)
def _terms(text: str) -> tuple[str, ...]:
    """The content terms of ``text``, its values masked (cached: an evidence text is read for every
    unreached value of every answer judged against it)."""
    return content_terms(mask_atoms(text, [a for a in extract_atoms(text, entities=False) if a.kind in VALUE_KINDS]))


def counter_statement(atom: Atom, claim_text: str, evidence_texts: Sequence[str]) -> Counter | None:
    """The evidence clause that best says what ``atom``'s clause says and states another value of its kind, if
    it says at least :data:`COUNTER_OVERLAP` of the claim clause's content words; else None."""
    return _counter_statement(atom, claim_text, tuple(evidence_texts))


@shared(maxsize=20_000)
def _counter_statement(atom: Atom, claim_text: str, evidence_texts: tuple[str, ...]) -> Counter | None:
    """:func:`counter_statement`, remembered: a date no count reaches asks it twice (in reach, then here)."""
    clause = _clause_at(claim_text, atom.start)
    mine = _terms(clause)
    if not mine:
        return None
    role = _role(claim_text, atom)
    best: Counter | None = None
    for text in evidence_texts:
        for m in _SENTENCE.finditer(text):
            ev = m.group(0)
            atoms = extract_atoms(ev, entities=False)
            # a limit the claim's value is compared with, or a rate of what the claim totals, is no counter-value
            other = next((e for e in atoms if e.kind in VALUE_KINDS and same_kind(atom, e)
                          and _role(ev, e) in (role, "amount") and (role != "amount" or _role(ev, e) == "amount")), None)
            if other is None:
                continue
            theirs = frozenset(_terms(ev))
            shared = sum(term_found(t, theirs, ev.lower()) for t in mine)
            overlap = shared / len(mine)
            if overlap >= COUNTER_OVERLAP and shared >= min(2, len(mine)) and (best is None or overlap > best.overlap):
                best = Counter(other.text.strip(), ev.strip(), overlap)
    return best


def significant_digits(text: str) -> int:
    """The significant digits a figure is written with: "$3,206.67" 6, "264,000元" 3, "7.82万元" 3, "0.35元" 2,
    "1,000" and "$1.00" 1; 0 for a figure in words (两千七百元)."""
    m = _DIGITS.search(text)
    if m is None:
        return 0
    whole, _, decimals = m.group(0).replace(",", "").partition(".")
    decimals = decimals.rstrip("0")  # "$26.00" is 26 written to the cent, not a finer figure
    return len((whole + decimals).lstrip("0") if decimals else whole.strip("0"))


def finer_than_evidence(atom: Atom, evidence_texts: Sequence[str]) -> Atom | None:
    """The evidence's most precisely written value in ``atom``'s unit, when ``atom`` is an amount written more
    precisely than every one of them, and in at least :data:`MIN_COMPUTED_DIGITS` significant digits.

    Such a figure is no value of the evidence copied or mistyped (a changed figure keeps the look of the one it
    replaces: $52.4 million for $48.2 million, 1000元 for 800元); it is what a computation on them gives
    ($3,206.67, 418.6元, 264,000元 from 8,800元 a slot). None for a figure without a unit, a percentage, a date, a
    time or a duration: ids, quoted shares (99.9% availability), clock times and day counts are read as written."""
    q = atom.quantity
    mine = significant_digits(atom.text)
    if atom.kind != "number" or q is None or q.unit in (None, "%") or mine < MIN_COMPUTED_DIGITS:
        return None
    finest: tuple[int, Atom] | None = None
    for text in evidence_texts:
        for e in extract_atoms(text, entities=False):
            if e.kind == "number" and same_kind(atom, e):
                n = significant_digits(e.text)
                if n >= mine:
                    return None
                if finest is None or n > finest[0]:
                    finest = (n, e)
    return finest[1] if finest else None


def _about(claim_text: str, evidence_texts: Sequence[str]) -> bool:
    """Whether the claim is about the evidence: it says at least :data:`ABOUT_SHARE` of its content words
    (values and computation words aside); a claim of fewer than :data:`ABOUT_MIN_TERMS` is."""
    joined = " ".join(evidence_texts)
    folded = joined.lower()
    terms = frozenset(_terms(joined))
    mine = [t for t in _terms(claim_text) if not _CUE.fullmatch(t)]
    if len(mine) < ABOUT_MIN_TERMS:  # "$590 in total.", "共128天。": too short to say what it is about
        return True
    return sum(term_found(t, terms, folded) for t in mine) / len(mine) >= ABOUT_SHARE


def judge_unreached(atom: Atom, claim_text: str, evidence_texts: Sequence[str], computing: bool = False,
                    computable: bool = False) -> tuple[bool, str]:
    """Whether an unreached value is positive evidence of an unsupported claim, and the reason to print.

    ``(True, why)``: unsupported (the evidence says otherwise, or the claim states the figure plainly);
    ``(False, why)``: unverified (a computing claim, and nothing in the evidence says otherwise; or a figure finer
    than any of its unit in the evidence: stated plainly where it is ``computable`` (the question states the user's
    own values, or the answer another value of its unit: something to compute from; a lone "CNY 987,654" in answer
    to a lookup question is invented, not computed), or in an answer that computes)."""
    found = counter_statement(atom, claim_text, evidence_texts)
    computed = computing or computes(claim_text)
    if found is not None:
        finest = finer_than_evidence(atom, evidence_texts) if computed else None
        if finest is None:
            return True, f"the evidence states {found.value} for it ('{found.clause[:80]}')"
        return False, (f"the evidence states {found.value} for it, but in an answer that computes, a figure written more "
                       f"precisely than any value in its unit the evidence states (the finest: {finest.text.strip()}) is "
                       "computed from them in more steps than the rules follow")
    q = atom.quantity
    if q is not None and q.kind == "number" and q.unit is None and q.value == int(q.value) and 0 < q.value <= SMALL_COUNT \
            and _ENUMERATION.match(claim_text, atom.end):
        return False, ("a small count of the points the answer names (\"two options\", 两种方式), and nothing in "
                       "the evidence states another value for it")
    if not computed:
        finest = finer_than_evidence(atom, evidence_texts) if computable else None
        if finest is None:
            return True, "stated plainly, and nothing in the evidence gives or derives it"
        return False, (f"stated plainly, but written more precisely than any value in its unit the evidence states "
                       f"(the finest: {finest.text.strip()}), so computed in more steps than the rules follow; "
                       "nothing in the evidence states another value for it")
    if not _about(claim_text, evidence_texts):  # a sentence on another topic computes nothing from this evidence
        return True, "the claim shares no word with the evidence, so it computes nothing from it"
    return False, ("stated nowhere and no one-step derivation reaches it; the claim computes and nothing in the "
                   "evidence states another value for it")
