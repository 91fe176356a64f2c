"""Choice questions: which of two named things the evidence picks, and whether the answer picked the other.

What it is for: "Which band was formed first, The Exies or Circus Diablo?" is answered by a name the question
itself gives, so the judge's atoms find nothing new in "Circus Diablo" and cannot call it wrong; comparison
questions of this kind are a fifth of HotpotQA's, and answering with the other option is the commonest
"comprehension" error of HaluEval's wrong answers. When the evidence gives each option its value (a date for
"first", "older"; a number in one unit for "longer", 更高), the evidence decides the choice, and an answer that
picks the other option has positive evidence against it: :func:`wrong_choice` says so, with both values.

Read conservatively, else nothing is said: the question names two options ("A or B", "A or B, which ...",
"between A and B", "A还是B", "A和B(之间)，哪…") and one word of ``data/choice_words.txt``; the evidence gives each
option a value of one measure both share (the first year or date of the passage that speaks of it; or the one
length, count, duration or amount it gives, in any unit of the measure: 3.6公里 and 4100米); the two values
differ; the answer names one option first and its opening sentence does not name the other before the choice
word ("Unlike A, B was formed first"). A right pick is left to the other steps (the comparison is a derivation,
never by itself ``supported``).
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from evalkit.text.claims import split_claims
from evalkit.text.lexicon import CJK, cue_table
from evalkit.text.values import COMMON, Atom, extract_atoms, fold

__all__ = ["Choice", "choice_of", "wrong_choice"]


_WORDS = cue_table("choice_words")
_EN_OR = re.compile(r"\s+or\s+", re.IGNORECASE)
_EN_BETWEEN = re.compile(r"\bbetween\s+(?:the\s+)?(?P<a>[^,?]+?)\s+and\s+(?:the\s+)?(?P<b>[^,?]+?)\s*[,?]", re.IGNORECASE)
_ZH_OR = re.compile(r"(?:^|[，,：:])\s*(?:是)?(?P<a>[^，,。？?：:]+?)还是(?P<b>[^，,。？?]+?)(?:[？?]|$|更|最|比较)")
_ZH_AND = re.compile(r"^(?:在)?(?P<a>[^，,。？?]+?)(?:和|与|跟)(?P<b>[^，,。？?]+?)(?:之间|相比)?[，,]?\s*(?:哪|谁)")
_EN_LEADING = re.compile(r"^(?:the\s+)?(?P<a>[^,:?]+?)\s+or\s+(?:the\s+)?(?P<b>[^,:?]+?)\s*[,:]\s*(?:which|who)\b",
                         re.IGNORECASE)  # "Isla Perdita or Tormund Island, which island is larger?"


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
    for pattern in (_EN_BETWEEN, _EN_LEADING, _en_or, _ZH_OR, _ZH_AND):
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


_LENGTH = {"km": 1000.0, "m": 1.0, "cm": 0.01, "mm": 0.001}


def _dimension(atom: Atom) -> tuple[str, float] | None:
    """What a value measures and its size in that measure's unit: a duration in seconds, a length in metres, a
    value in its unit, a bare number as a count ("12万余件", "3,950,000 passengers")."""
    q = atom.quantity
    if q is None:
        return None
    if q.kind == "duration":
        return "duration", q.value
    if q.unit in _LENGTH:
        return "length", q.value * _LENGTH[q.unit]
    if q.unit is not None:
        return q.unit, q.value
    return "count", q.value


def _passage_sentences(option: str, evidence: Sequence[tuple[str, str]]) -> list[str]:
    """The sentences that speak of ``option``: those of a passage named after it or naming it ("It reaches ..."
    after "Pico Serrano is ..."), or only the ones naming it where the passage names the other option too."""
    out: list[str] = []
    for pid, text in evidence:
        sents = split_claims(text)
        if _names(pid, option) or any(_names(x, option) for x in sents[:1]):
            out += sents
        else:
            out += [x for x in sents if _names(x, option)]
    return out


def _value(option: str, evidence: Sequence[tuple[str, str]], kind: str) -> dict[str, tuple[float, str]]:
    """Per measure, the value of ``kind`` the evidence gives ``option``, as a comparable number and as written:
    the first date (by year, and by day where it has one), or the one number of each measure."""
    out: dict[str, tuple[float, str]] = {}
    seen: dict[str, dict[float, str]] = {}
    for sent in _passage_sentences(option, evidence):
        for a in extract_atoms(sent, entities=False):
            if kind == "date" and a.kind == "date" and a.dates and a.dates[0].year:
                d = a.dates[0]  # "(1844–1846)": the first date is when it began
                out.setdefault("year", (float(d.year or 0), a.text.strip()))
                if d.month:
                    out.setdefault("date", ((d.year or 0) * 10000 + d.month * 100 + (d.day or 0), a.text.strip()))
            elif kind == "number" and a.kind in ("number", "duration"):
                dim = _dimension(a)
                if dim is not None:
                    seen.setdefault(dim[0], {}).setdefault(dim[1], a.text.strip())
    # a measure with two values ("秆高1至3米", a count of floors and one of lifts) decides nothing
    out.update({d: next(iter(v.items())) for d, v in seen.items() if len(v) == 1})
    return out


def _picked(answer: str, choice: Choice) -> str | None:
    """The option the answer picks: the option itself as the whole opening sentence ("Circus Diablo.", 《夜航》),
    or the one option its opening sentence names before the question's choice word ("Circus Diablo came first",
    "A 比 B 更长"); not one named after it ("$500 million more than Halden"), nor either when both come before it
    ("Unlike A, B was formed first"). "Halden Bio reported $1.6 billion." states a value and picks nothing."""
    first = (split_claims(answer) or [answer])[0]
    at = {o: fold(first).find(fold(_key_words(o)[0])) for o in (choice.a, choice.b) if _names(first, o)}
    if not at:
        return None
    bare = {o for o in at if len(re.sub(r"[\W_]+", "", fold(first).replace(fold(o), ""), flags=re.UNICODE)) <= 3}
    if len(at) == 1 and bare:
        return next(iter(at))
    word = next((m.start() for c, w in _WORDS for m in [w.search(first)] if m and c == choice.code), None)
    before = sorted((o for o in at if at[o] < (word if word is not None else -1)), key=lambda o: at[o])
    if len(before) == 2 and "比" in fold(first)[at[before[0]]:at[before[1]]]:
        return before[0]  # "临江湾大桥比青澜跨海大桥更长": A 比 B
    return before[0] if len(before) == 1 else None


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
        shared = [d for d in ("date", "year") if d in va and d in vb] if kind == "date" else sorted(set(va) & set(vb))
        if len(shared) != 1 and not (kind == "date" and shared):
            continue  # no measure both options have, or several: the evidence does not decide it plainly
        (left, wa), (right, wb) = va[shared[0]], vb[shared[0]]
        if left == right:
            return None
        smaller_wins = {"early": True, "late": False, "max": False, "min": True,
                        "older": kind == "date", "younger": kind != "date"}[choice.code]
        winner = choice.a if (left < right) == smaller_wins else choice.b
        if pick == winner:
            return None
        return f"the evidence decides the choice against it: {choice.a} {wa}, {choice.b} {wb}, so the answer is {winner}"
    return None
