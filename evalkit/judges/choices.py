"""Choice questions: which of two named things the evidence picks, and whether the answer picked the other.

What it is for: "Which band was formed first, The Exies or Circus Diablo?" is answered by a name the question
itself gives, so the judge's atoms find nothing new in "Circus Diablo" and cannot call it wrong; comparison
questions of this kind are a fifth of HotpotQA's, and answering with the other option is the commonest
"comprehension" error of HaluEval's wrong answers. When the evidence gives each option its value (a date for
"first", "older"; a number in one unit for "longer", 更高), the evidence decides the choice, and an answer that
picks the other option has positive evidence against it: :func:`wrong_choice` says so, with both values.

Read conservatively, else nothing is said: the question names two options ("A or B", "between A and B", "A还是B",
"A和B哪个…") and one word of ``data/choice_words.txt``; each option has one value of the needed kind in the
first evidence sentence that names it; the two values differ; the answer names one option first and its
opening sentence does not name the other before the choice word ("Unlike A, B was formed first"). A right
pick is left to the other steps (the comparison is a derivation, never by itself ``supported``).
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from evalkit.text.claims import split_claims
from evalkit.text.lexicon import CJK
from evalkit.text.values import COMMON, extract_atoms, fold
from evalkit.text.wordlists import table

__all__ = ["Choice", "choice_of", "wrong_choice"]


def _word(p: str) -> re.Pattern[str]:
    return re.compile(p if CJK.search(p) else rf"\b(?:{p})\b", re.IGNORECASE)


_WORDS = [(code, _word(p)) for p, code in table("choice_words")]
_EN_OR = re.compile(r"\s+or\s+", re.IGNORECASE)
_EN_BETWEEN = re.compile(r"\bbetween\s+(?:the\s+)?(?P<a>[^,?]+?)\s+and\s+(?:the\s+)?(?P<b>[^,?]+?)\s*[,?]", re.IGNORECASE)
_ZH_OR = re.compile(r"(?:^|[，,：:])\s*(?:是)?(?P<a>[^，,。？?：:]+?)还是(?P<b>[^，,。？?]+?)(?:[？?]|$|更|最|比较)")
_ZH_AND = re.compile(r"^(?P<a>[^，,。？?]+?)(?:和|与|跟)(?P<b>[^，,。？?]+?)(?:相比[，,]?\s*)?(?:哪|谁)")


@dataclass(frozen=True)
class Choice:
    """A choice question: two options and the code of the word that says which one it asks for."""

    a: str
    b: str
    code: str


def _en_or(question: str) -> tuple[str, str] | None:
    """The options around the last " or ": the left one after the last comma, colon or choice word before it."""
    ors = list(_EN_OR.finditer(question))
    if not ors or CJK.search(question):
        return None
    left, right = question[:ors[-1].start()], question[ors[-1].end():]
    cuts = [m.end() for m in re.finditer(r"[,:]", left)] + [m.end() for _, w in _WORDS for m in w.finditer(left)]
    left = left[max(cuts):] if cuts else ""
    return left, re.split(r"[,?;]", right)[0]


def choice_of(question: str) -> Choice | None:
    """The options and choice word of ``question``, or None when it is no choice between two named things."""
    code = next((c for c, w in _WORDS if w.search(question)), None)
    if code is None:
        return None
    for pattern in (_EN_BETWEEN, _en_or, _ZH_OR, _ZH_AND):
        m = pattern(question) if callable(pattern) else pattern.search(question)
        if m:
            a, b = m if isinstance(m, tuple) else (m.group("a"), m.group("b"))
            a, b = (re.sub(r"^(?:the|a|an)\s+", "", x.strip(" \"'“”‘’《》")) for x in (a, b))  # not "The Exies"
            if a and b and fold(a) != fold(b) and len(a) <= 60 and len(b) <= 60 and _key_words(a) and _key_words(b):
                return Choice(a, b, code)
    return None


def _key_words(option: str) -> list[str]:
    """What must be in a text for it to name ``option``: its capitalised words (English), else its characters."""
    if CJK.search(option):
        return [option]
    caps = [w for w in re.findall(r"[A-Z][\w'’.-]*", option) if w.lower() not in COMMON]
    return caps or [w for w in re.findall(r"\w{3,}", option) if w.lower() not in COMMON]


def _names(text: str, option: str) -> bool:
    folded = fold(text)
    return all(fold(w) in folded for w in _key_words(option))


def _value(option: str, evidence: Sequence[tuple[str, str]], kind: str) -> tuple[float, str | None, str] | None:
    """The value of ``kind`` (``date`` or ``number``) that the first evidence sentence naming ``option`` gives:
    a number, its unit (a date: its precision) and the text as written; None when there is not exactly one."""
    for pid, text in evidence:
        for sent in split_claims(f"{pid}. {text}" if _names(pid, option) and not _names(text, option) else text):
            if not _names(sent, option):
                continue
            atoms = [a for a in extract_atoms(sent, entities=False) if a.kind == kind]
            if kind == "date":
                firsts = [(a.dates[0].year, a.dates[0], a.text) for a in atoms if a.dates and a.dates[0].year]
                if not firsts:
                    continue
                year, d, written = firsts[0]  # "(1844–1846)": the first date is when it began
                return (year * 10000 + (d.month or 0) * 100 + (d.day or 0),
                        "d" if d.day else "m" if d.month else "y", written.strip())
            values = {(a.quantity.value, a.quantity.unit): a.text.strip() for a in atoms if a.quantity is not None}
            if len(values) != 1:
                return None
            (number, unit), written = next(iter(values.items()))
            return number, unit, written
    return None


def _picked(answer: str, choice: Choice) -> str | None:
    """The option the answer picks: the one its opening sentence names first, unless the other comes before the
    choice word too ("Unlike A, B was formed first")."""
    first = (split_claims(answer) or [answer])[0]
    at = {o: fold(first).find(fold(_key_words(o)[0])) for o in (choice.a, choice.b) if _names(first, o)}
    if not at:
        return None
    if len(at) == 1:
        return next(iter(at))
    pick, other = sorted(at, key=lambda o: at[o])
    word = next((m.start() for c, w in _WORDS for m in [w.search(first)] if m and c == choice.code), None)
    return pick if word is not None and at[other] > word else None


def wrong_choice(question: str, answer: str, evidence: Sequence[tuple[str, str]]) -> str | None:
    """Why the answer's pick contradicts the evidence (the reason to print), or None (see the module docstring)."""
    choice = choice_of(question)
    if choice is None:
        return None
    pick = _picked(answer, choice)
    if pick is None:
        return None
    for kind in ("date", "number") if choice.code in ("early", "late", "older", "younger") else ("number",):
        va, vb = _value(choice.a, evidence, kind), _value(choice.b, evidence, kind)
        if va is None or vb is None or va[1] != vb[1] and kind == "number":
            continue
        left, right = va[0], vb[0]
        if kind == "date" and va[1] != vb[1]:  # a year against a full date: compare the years
            left, right = left // 10000, right // 10000
        if left == right:
            return None
        smaller_wins = {"early": True, "late": False, "max": False, "min": True,
                        "older": kind == "date", "younger": kind != "date"}[choice.code]
        winner = choice.a if (left < right) == smaller_wins else choice.b
        if pick == winner:
            return None
        return (f"the evidence decides the choice against it: {choice.a} {va[2]}, {choice.b} {vb[2]}, "
                f"so the answer is {winner}")
    return None
