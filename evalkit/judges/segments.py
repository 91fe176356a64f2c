"""Segments: the parts of a claim that state one fact each, and the subject of each value.

What it is for: :func:`evalkit.judges.grounding.ground_atoms` grounds a value with its own
subject (the names, codes and dates of its part of the sentence); this module says which
they are. See :mod:`evalkit.judges.grounding` for the rules; in short: a claim is cut at its
clauses and at coordinators between two facts; a segment that states values but names nothing
takes the previous one's subject (unless it has a subject of its own,
:func:`evalkit.judges.subjects.own_subject`); a relative clause or a parenthesis is an aside
(:func:`evalkit.judges.subjects.asides`); a day on which the previous clause says something
happened is that event's date, not the period of the next clause's values.

A number that labels a document or part ("Amendment No. 1", "Clause 14.2") has no subject: it
names. A step of a sequence ("..., then the first shuttle at 06:40") keeps only the previous
segment's period, not its names. A value before a change or said to be unchanged ("由每度0.55元
调为0.6元", "第一档仍为0.5元", "rises from 20 to 23 cents") is not a value of the date before it (the
date from which the change applies); a date after it is its own period ("from 14 in Q2"); a
range ("from 9:00 to 17:00") is no change.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from evalkit.judges.subjects import asides, only_time, own_subject
from evalkit.text.claims import clause_spans
from evalkit.text.values import Atom, mask_atoms

if TYPE_CHECKING:
    from evalkit.judges.grounding import Unit

__all__ = ["SUBJECT_KINDS", "VALUE_KINDS", "Segment", "segments", "subjects_of"]

VALUE_KINDS = frozenset({"number", "duration", "time"})
SUBJECT_KINDS = frozenset({"entity", "code", "date"})

_COORD = re.compile(
    r"\s+(?:vs\.?|versus|and|to|then|while|whereas|than|compared (?:with|to)|against)\s+"
    r"|(?<=[\u4e00-\u9fff\d%）)A-Za-z])\s*(?:对比|相比|对|比|而|和|与|及|、)\s*(?=[\u4e00-\u9fffA-Za-z\d（(])", re.IGNORECASE)

# a number that labels a document or part ("Amendment No. 1", "Clause 14.2", "Article 5"): it names,
# it is no value of the name before it
_LABEL = re.compile(r"(?:\b(?:no|nos|number|clause|section|article|art|para|paragraph|item|schedule|annex|"
                    r"appendix|exhibit|chapter|part)\.?|[#§])\s*$", re.IGNORECASE)
# a value before a change or one said to be unchanged ("由每度0.55元调为0.6元", "rises from 20 to 23
# cents", "第一档仍为0.5元", "still $45"): not a value of the date from which the change applies; a
# range ("from 9:00 to 17:00", "从100元到200元不等") says no change
_SIGN = r"(?:[A-Z]{3}\s?|[$¥€£])?$"
_UNCHANGED = re.compile(r"(?:仍然?(?:为|是)?|依然(?:为|是)?|保持(?:为|在)?|\bstill(?:\s+(?:at|is|are))?\s+|"
                        r"\bremains?(?:\s+at)?\s+|\bunchanged\s+at\s+)" + _SIGN, re.IGNORECASE)
_FROM_CHANGE = re.compile(r"\b(?:ris\w*|rose|fell|falls?|increas\w*|decreas\w*|chang\w*|rais\w*|lower\w*|cut|"
                          r"drop\w*|jump\w*|climb\w*|grow\w*|grew|declin\w*|adjust\w*|went|goes|go|up|down)\b"
                          r"[^,;]{0,20}?\bfrom\s+" + _SIGN, re.IGNORECASE)
_ZH_FROM = re.compile(r"(?:由|从)(?:每\w{0,2})?" + _SIGN)
_ZH_CHANGE_AFTER = re.compile(r"[^，。；,;]{0,6}?(?:调|提高|提升|上涨|上升|涨|降|增|减|升|变为|改为)")
# a step of a sequence ("..., then the first shuttle at 06:40", "然后乘坐..."): about its own thing
_STEP = re.compile(r"[\s,，]*(?:(?:then|after that|afterwards)\b|然后|随后|接着)", re.IGNORECASE)
_CLAUSE_COORD = re.compile(r"\s+(?:and|while|whereas)\s+|\s*而\s*", re.IGNORECASE)  # what joins two clauses
# a relative clause ("Halvorsen Retail, which bought Fenwick's in 2021, operates 312 stores"): an aside
# about the name before it; the clause after it continues the sentence's subject, not the aside's
_RELATIVE = re.compile(r"(?:which|who|whose|whom|where)\b", re.IGNORECASE)


@dataclass(frozen=True)
class Segment:
    """One fact's part of a claim: its span, its atoms and the subject atoms its values belong to."""

    start: int
    end: int
    atoms: tuple[int, ...]     # indices into the claim's atoms
    subjects: tuple[int, ...]  # indices of the entity / code / date atoms its values are about
    topic: str = ""            # its own subject when that is not a name ("refunds", "退款"): see segments()


def _inside(a: Atom, start: int, end: int) -> bool:
    return start <= a.start < end


def segments(claim: Unit) -> list[Segment]:
    """The claim's segments in order, each with its own (or the previous segment's) subject."""
    atoms = claim.atoms
    spans: list[tuple[int, int]] = []
    for start, end in _whole_asides(clause_spans(claim.text) or [(0, len(claim.text))], claim.text):
        cuts = [start]
        for m in _COORD.finditer(claim.text, start, end):
            left = [a for a in atoms if _inside(a, cuts[-1], m.start()) and a.kind in VALUE_KINDS | {"date"}]
            right = [a for a in atoms if _inside(a, m.end(), end) and a.kind in VALUE_KINDS | {"date"}]
            if right and (left or (_CLAUSE_COORD.fullmatch(m.group(0)) and own_subject(claim.text[m.end():end]))):
                # "USD 2.1 million in Q2 vs USD 2.6 million in Q3": two facts; so is a clause with its
                # own subject ("Anna Weber leads the project and the pilot runs for 6 weeks")
                spans.append((cuts[-1], m.start()))
                cuts.append(m.end())
        spans.append((cuts[-1], end))
    out: list[Segment] = []
    taken: set[int] = set()
    context: tuple[int, ...] | None = None  # the subjects a following segment without any takes
    for start, end in spans:
        idx = tuple(i for i, a in enumerate(atoms) if i not in taken and _inside(a, start, end))
        taken.update(idx)
        subj = tuple(i for i in idx if atoms[i].kind in SUBJECT_KINDS)
        topic = ""
        aside = bool(_RELATIVE.match(claim.text, start)) and out
        if not subj and out and any(atoms[i].kind in VALUE_KINDS for i in idx):
            # "华南区更高：2,240 万元": the value belongs to the clause before (not to an aside before it)
            subj = out[-1].subjects if aside or context is None else context
            subj = tuple(j for j in subj if not _event_day(j, atoms, out, claim.text))
            topic = own_subject(claim.text[start:end]) or ""
            # "..., 退款在 14 天内发放": about its own subject, in the same period ("2021年末，"); so is
            # a step of a sequence ("..., then the first shuttle at 06:40": the shuttle's time)
            if topic or _step(claim.text, start):
                subj = tuple(j for j in subj if atoms[j].kind == "date")
        if not aside:
            context = subj
        out.append(Segment(start, end, idx, subj, topic))
    rest = tuple(i for i in range(len(atoms)) if i not in taken)  # atoms outside every clause (trailing marks)
    if rest:
        out.append(Segment(len(claim.text), len(claim.text), rest, out[-1].subjects if out else ()))
    return out


def _old_value(atom: Atom, seg: Segment, text: str) -> bool:
    """Whether a value is the one before a change or one said to be unchanged (see ``_UNCHANGED``)."""
    before = text[seg.start:atom.start]
    return bool(_UNCHANGED.search(before[-12:]) or _FROM_CHANGE.search(before)
                or (_ZH_FROM.search(before) and _ZH_CHANGE_AFTER.match(text, atom.end)))


def _step(text: str, start: int) -> bool:
    """Whether the segment at ``start`` is a step of a sequence ("..., then the first shuttle at
    06:40"): its values are its own thing's (the shuttle's), not the previous step's name's."""
    return bool(re.search(r"\bthen\s*$", text[:start], re.IGNORECASE) or _STEP.match(text, start))


def _whole_asides(spans: list[tuple[int, int]], text: str) -> list[tuple[int, int]]:
    """Clause spans with those cut inside a parenthesis joined again: "(Quillmark founder, CEO until
    2019)" is an aside within its clause, not a clause boundary."""
    parens = asides(text)
    out: list[tuple[int, int]] = []
    for start, end in spans:
        if out and any(a < out[-1][1] < b for a, b in parens):
            out[-1] = (out[-1][0], end)
        else:
            out.append((start, end))
    return out


def _event_day(j: int, atoms: tuple[Atom, ...], segs: list[Segment], text: str) -> bool:
    """Whether atom ``j`` is a day on which its clause says something happened ("于2024年9月28日开通"):
    not a period for the next clause's values ("两地最快58分钟可达" may come from another
    passage), unlike a clause that only sets a time ("截至2024年9月30日，")."""
    a = atoms[j]
    seg = next((s for s in segs if j in s.atoms), None)
    if a.kind != "date" or seg is None or not all(v.day for v in a.dates):
        return False
    return not only_time(mask_atoms(text, atoms, keep_entities=False)[seg.start:seg.end])


def _asides(claim: Unit) -> list[tuple[int, int]]:
    """The parentheses of a claim that say something of their own ("(2023年11月当选董事长)"), not a
    label of the value or name before them ("$5m (Q3 2024)", "the flagship (LX-200)")."""
    masked = mask_atoms(claim.text, claim.atoms, keep_entities=False)
    return [(a, b) for a, b in asides(claim.text) if not only_time(masked[a + 1:b - 1])]


_APPOSITIVE = re.compile(r"(?:^|[\s,])(?:a|an)\s+$", re.IGNORECASE)


def _modifier(name: Atom, text: str) -> bool:
    """Whether a name only qualifies the noun of an appositive ("Skylark Robotics, a Vantor Group
    subsidiary with 1,250 employees"): the values after it are the name before's."""
    return bool(_APPOSITIVE.search(text[:name.start])) and re.match(r"\s+[a-z]", text[name.end:]) is not None


def subjects_of(i: int, segs: list[Segment], claim: Unit) -> list[int]:
    """Indices of the subject atoms of atom ``i``: the nearest name or code of its segment
    (before it, else after it) and, for a value, the nearest date; none for a name or code."""
    atom = claim.atoms[i]
    seg = next((s for s in segs if i in s.atoms), None)
    if seg is None or atom.kind in ("entity", "code") or _LABEL.search(claim.text[:atom.start]):
        return []
    out = []
    # a name or date inside an aside is the aside's subject, not of the values outside it ("Priya Raman
    # (Quillmark founder, CEO until 2019) holds a 2004 degree": 2004 is not the CEO's)
    outside = [(a, b) for a, b in _asides(claim) if not a <= atom.start < b]
    seen = [j for j in seg.subjects if j != i and not any(a <= claim.atoms[j].start < b for a, b in outside)]
    names = [j for j in seen if claim.atoms[j].kind in ("entity", "code")]
    before = [j for j in names if claim.atoms[j].start < atom.start]
    if before and _modifier(claim.atoms[max(before, key=lambda j: claim.atoms[j].start)], claim.text):
        # the appositive's head is the name before it, in this segment or the one before
        k = segs.index(seg)
        earlier = [j for j in (segs[k - 1].subjects if k else ()) if claim.atoms[j].kind in ("entity", "code")]
        before = [j for j in before if j != max(before, key=lambda j: claim.atoms[j].start)] or earlier
    pick = max(before, key=lambda j: claim.atoms[j].start) if before else \
        min(names, key=lambda j: claim.atoms[j].start, default=None)
    if pick is not None:  # a name is what comes before its values ("LX-200 为 2GB")
        out.append(pick)
    dates = [j for j in seen if claim.atoms[j].kind == "date"] if atom.kind != "date" else []
    if _old_value(atom, seg, claim.text):
        dates = [j for j in dates if claim.atoms[j].start > atom.start]  # its own period stays ("from 17 in Q2")
    if dates:  # a period sits on either side ("CNY 24.6m in Q3", "第三季度 3,150 万元"): the nearest one
        out.append(min(dates, key=lambda j: (_gap(claim.atoms[j], atom), claim.atoms[j].start)))
    return out


def _gap(a: Atom, b: Atom) -> int:
    return max(a.start - b.end, b.start - a.end, 0)
