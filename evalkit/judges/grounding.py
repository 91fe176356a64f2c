"""Grounding: where in the evidence each fact of a claim is stated, passage by passage.

What it is for: the offline judge (:mod:`evalkit.judges.offline`) asks, for every novel
atom of a claim (a number, date, code or name the question did not give), whether some
evidence passage states it *with its own subject*. Answers that combine documents
("华南区 2,240 万元，华北区 1,980 万元") put facts from several passages in one sentence,
so atoms are grounded one by one, across passages, not all in one window:

- A claim is cut into **segments**: its clauses (:func:`evalkit.text.claims.clause_spans`),
  cut again at a coordinator (``vs``, ``and``, ``than``, ``对``, ``比``, ``和``, ``、``...) when both sides
  state a value, or when the right side is a clause with a subject of its own ("... and the
  pilot runs for 6 weeks"). A relative clause ("X, which bought Y in 2021, operates 312
  stores") is an aside: the clause after it takes the subject from before it; so is a
  parenthesis that says something of its own ("Priya Raman (founder, CEO until 2019) holds a
  2004 degree"): its commas cut nothing, its names and dates bind only its own values. The
  **subject** of a value (number, duration, time) is the
  names, codes and dates of its segment; of a date, the names and codes. A segment that
  states values but names nothing ("2,240 万元" after "华南区更高：") takes the previous
  segment's subject, unless it opens with a noun phrase or pronoun of its own
  (:func:`evalkit.judges.subjects.own_subject`: "退款在 14 天内发放", "refunds are issued
  within 14 days"): then it keeps only the previous segment's dates (its period).
  A day on which the previous clause says something happened ("于2024年9月28日开通，两地最快
  58分钟可达") is not taken: it is that event's date, not a period (unlike "截至2024年9月30日，").
- An atom is **grounded** when a window (1-3 consecutive sentences of one passage) states
  it and that passage also states its subject: the nearest name or code before it in its
  segment (else after it) and, for a value, the nearest date on either side, when the answer (not the question) states them; a
  subject the evidence never states is reported on its own and does not block its values.
  A segment's own subject that is not a name ("refunds", "退款": its :attr:`Segment.topic`)
  binds its values the same way, when the evidence states its words somewhere: the passage
  that states the value must state them too.
  A quarter or month the question gave ("Q2", "4 月") still binds its values in one way:
  when the windows that state a value name periods, one of them must name the claim's (a
  report on Q3 does not state a Q2 figure).
- An atom no passage states is left to :mod:`evalkit.judges.reach`: a value some general
  derivation reaches (rescaled, converted, computed, in a range) makes the claim unverified;
  one it cannot reach is absent.

A passage whose dates name one year lends it to its year-less days ("2025年…首站于4月12日"
states 2025年4月12日; :func:`evalkit.text.dates.with_year`).

Evidence sentences are analysed once per text (cached) without name extraction: a
claim's name is looked for in the evidence *text* (see :func:`evalkit.text.values.extract_atoms`).
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache

from evalkit.judges.segments import SUBJECT_KINDS, VALUE_KINDS, Segment, segments, subjects_of
from evalkit.text.claims import is_chinese, split_claims, split_clauses
from evalkit.text.dates import one_year, with_year
from evalkit.text.lexicon import CJK, content_terms, negation_spans, term_found
from evalkit.text.values import Atom, AtomPool, extract_atoms, fold, mask_atoms

__all__ = ["AtomGrounding", "Clause", "Segment", "Unit", "Window", "analyse", "coverage", "ground_atoms",
           "passage_pools", "segments", "windows"]

MAX_WINDOW = 3
SCOPE_TERMS = 4


@dataclass(frozen=True)
class Clause:
    """A clause with its comparable terms (content words + atom keys) and its negation cues."""

    text: str
    terms: frozenset[str]
    cues: tuple[str, ...]
    scope: frozenset[str] = frozenset()  # the first content terms after the first cue: what it negates
    phrases: tuple[str, ...] = ()        # Chinese cue + next character as written ("不限")


@dataclass(frozen=True)
class Unit:
    """An analysed sentence (claim, evidence sentence or question): atoms, terms, clauses."""

    text: str
    atoms: tuple[Atom, ...]
    terms: tuple[str, ...]
    clauses: tuple[Clause, ...]


def _mask_values(text: str, atoms: tuple[Atom, ...]) -> str:
    """Blank numbers, dates and times (compared as values); codes and names stay as words."""
    return mask_atoms(text, [a for a in atoms if a.kind not in ("entity", "code")])


@lru_cache(maxsize=200_000)
def _clause(text: str) -> Clause:
    atoms = extract_atoms(text, entities=False)
    spans = negation_spans(text)
    # the cue is not content: "longer" of "no longer" would dilute the overlap a flip is measured by
    plain = _mask_values(text, atoms)
    for cue, end in (x for x in spans if not CJK.search(x[0])):  # Chinese cues are cut off their words already
        plain = plain[:end - len(cue)] + " " * len(cue) + plain[end:]
    terms = set(content_terms(plain)) | {a.key for a in atoms if a.kind not in ("entity", "code")}
    scope: tuple[str, ...] = ()
    if spans:
        cue, end = spans[0]
        # "non-refundable", "unavailable": the cue word carries what it negates
        inner = content_terms(re.sub(r"^(?:non-|un)", "", cue)) if re.match(r"non-|un", cue) else ()
        after = content_terms(_mask_values(text, atoms)[end:])[:SCOPE_TERMS]
        # an elliptical negation ("..., HR does not.") negates what comes before it
        before = content_terms(_mask_values(text, atoms)[:max(0, end - len(cue))])[-SCOPE_TERMS:]
        scope = inner or after or before  # "non-refundable $8 fee" negates "refundable", not the fee
    phrases = tuple(text[max(0, end - len(cue)):end + 1] for cue, end in spans if CJK.search(cue))
    return Clause(text, frozenset(terms), tuple(c for c, _ in spans), frozenset(scope), phrases)


@lru_cache(maxsize=200_000)
def analyse(text: str, entities: bool = True, fragment: bool = False) -> Unit:
    """Atoms, content terms and clauses of one sentence (cached by text: passages repeat).

    Evidence sentences are analysed with ``entities=False`` (see :func:`extract_atoms`); a whole answer
    of names ("Brisbane") with ``fragment=True`` (:func:`evalkit.text.values.is_name_fragment`)."""
    atoms = extract_atoms(text, entities, fragment)
    return Unit(text, atoms, content_terms(_mask_values(text, atoms)),
                tuple(_clause(c) for c in split_clauses(text)))


@dataclass
class Window:
    """Up to three consecutive sentences of one passage, with their atoms and terms."""

    passage_id: str
    sentences: tuple[Unit, ...]
    index: int

    def __post_init__(self) -> None:
        self.text = " ".join(u.text for u in self.sentences)
        self.pool = AtomPool([a for u in self.sentences for a in u.atoms], self.text)
        self.terms = frozenset(t for u in self.sentences for t in u.terms)
        self.folded = fold(self.text)
        self.clauses = [c for u in self.sentences for c in u.clauses]
        self.zh = is_chinese(self.text)  # the window's language: words compare within one language only


def _carry_year(atoms: tuple[Atom, ...], year: int) -> tuple[Atom, ...]:
    """A passage's atoms with its one year lent to its year-less dates (:func:`evalkit.text.dates.with_year`)."""
    return tuple(replace(a, dates=with_year(a.dates, year)) if a.kind == "date" else a for a in atoms)


@lru_cache(maxsize=512)
def _windows(evidence: tuple[tuple[str, str], ...]) -> tuple[list[Window], dict[str, AtomPool]]:
    """Every window of 1..MAX_WINDOW consecutive sentences of each passage, and one atom pool
    per passage (cached: the same evidence is often judged with several answers). Never mutated."""
    out: list[Window] = []
    pools: dict[str, AtomPool] = {}
    for pid, text in evidence:
        units = [analyse(s, entities=False) for s in split_claims(text)]
        year = one_year(v for u in units for a in u.atoms for v in a.dates)
        if year:  # the passage's year carries to its days ("2025年...首站于4月12日")
            units = [replace(u, atoms=_carry_year(u.atoms, year)) for u in units]
        for i in range(len(units)):
            for n in range(1, MAX_WINDOW + 1):
                if i + n <= len(units):
                    out.append(Window(pid, tuple(units[i:i + n]), len(out)))
        if pid in pools:  # two passages with one id: one pool over both
            prev = pools[pid]
            pools[pid] = AtomPool(prev.atoms + [a for u in units for a in u.atoms], prev.text + " " + text)
        else:
            pools[pid] = AtomPool([a for u in units for a in u.atoms], text)
    return out, pools


def windows(evidence: Sequence[tuple[str, str]]) -> list[Window]:
    """The windows of ``evidence`` = [(passage id, text), ...] (see :func:`_windows`)."""
    return _windows(tuple((str(pid), str(text)) for pid, text in evidence))[0]


def passage_pools(evidence: Sequence[tuple[str, str]]) -> dict[str, AtomPool]:
    """One :class:`AtomPool` per passage id: every atom and the whole text of the passage."""
    return _windows(tuple((str(pid), str(text)) for pid, text in evidence))[1]


def coverage(terms: Sequence[str], found_in: Sequence[Window]) -> float:
    """Share of ``terms`` found in any of ``found_in`` (a term half-found counts 0.5)."""
    if not terms:
        return 1.0
    return sum(max((term_found(t, w.terms, w.folded) for w in found_in), default=0.0) for t in terms) / len(terms)


# --- grounding ---------------------------------------------------------------------------------
@dataclass
class AtomGrounding:
    """Where one novel atom of a claim is stated, or why it is not."""

    atom: Atom
    window: Window | None = None      # the window that states it (None: not stated)
    derived: str | None = None        # how :mod:`.reach` derives it ("270 = 3,420 - 3,150"): unverified
    note: str | None = None           # why it counts without a window (a name only its translation states)
    problem: str | None = None        # why it is not grounded (a verdict reason)
    absent: bool = False              # stated nowhere and not reachable (:mod:`.reach`): positive evidence
    subjects: list[str] = field(default_factory=list)  # the subject atoms it was grounded with

    @property
    def grounded(self) -> bool:
        return self.problem is None


def _passage_terms(pid: str, wins: Sequence[Window]) -> tuple[frozenset[str], str]:
    """The content terms and folded text of passage ``pid`` (what its windows hold)."""
    mine = [w for w in wins if w.passage_id == pid]
    return frozenset(t for w in mine for t in w.terms), " ".join(w.folded for w in mine if len(w.sentences) == 1)


def _topic_of(i: int, segs: list[Segment], claim: Unit, wins: Sequence[Window]) -> tuple[str, tuple[str, ...]] | None:
    """The own subject of value ``i``'s segment and its content terms ("refunds" -> ("refund",)),
    when the evidence states one of them somewhere (else, like a name it never states, it binds
    nothing). Like a name, it binds a value to a passage: the passage that states the value must
    state it too (a list under a heading, "Data retention by plan: ... Business: 180 days")."""
    seg = next((s for s in segs if i in s.atoms), None)
    if seg is None or not seg.topic or claim.atoms[i].kind not in VALUE_KINDS:
        return None
    terms = content_terms(seg.topic)
    if not terms or not any(term_found(t, w.terms, w.folded) for t in terms for w in wins):
        return None  # a pronoun ("it opens at 9:00"), or a word the evidence paraphrases
    return seg.topic, terms


def _is_period(atom: Atom) -> bool:
    """A quarter or a month (not a day, not a bare year): what a periodic report is about."""
    return atom.kind == "date" and any((v.quarter or v.month) and not v.day for v in atom.dates)


def _names_period(window: Window) -> bool:
    """Whether a window names a quarter or a month (any date with one)."""
    return any(v.quarter or v.month for a in window.pool.by_kind.get("date", []) for v in a.dates)


def _same_script(atom: Atom, passage: AtomPool) -> bool:
    """Whether a name can be looked for in a passage at all (an English name in a Chinese passage cannot)."""
    if atom.kind != "entity":
        return True
    return bool(CJK.search(atom.text)) == is_chinese(passage.text)


def ground_atoms(claim: Unit, novel: Sequence[int], wins: Sequence[Window], pools: dict[str, AtomPool],
                 rank: dict[int, float]) -> list[AtomGrounding]:
    """Ground each novel atom (indices into ``claim.atoms``) in the evidence; see the module docstring.

    A subject constrains its values only when the answer states it (a subject the question
    gave is context, not a claim, unless the claim gives values to two or more names: a
    comparison) and the evidence states it somewhere; an English name is
    not looked for in a Chinese passage, nor a Chinese name in an English one.
    ``rank`` orders windows (higher first: content coverage of the claim).
    """
    segs = segments(claim)
    novel_set = set(novel)
    # a name the question gave is context, except in a comparison: when the claim gives values to two
    # or more names, which value goes with which name is the claim ("Which is higher, East or West?" -
    # "East $4.82 million, West $3.91 million"); a date the question gave is a period (below)
    valued = {j for i in novel if claim.atoms[i].kind in VALUE_KINDS for j in subjects_of(i, segs, claim)
              if claim.atoms[j].kind in ("entity", "code")}
    in_evidence = {j: any(p.supports(a) for p in pools.values()) for j, a in enumerate(claim.atoms)
                   if (j in novel_set and a.kind in SUBJECT_KINDS) or (len(valued) >= 2 and j in valued)}
    out: list[AtomGrounding] = []
    for i in novel:
        atom = claim.atoms[i]
        g = AtomGrounding(atom)
        stating = [w for w in wins if w.pool.supports(atom)]
        subjects = [claim.atoms[j] for j in subjects_of(i, segs, claim) if in_evidence.get(j)]
        g.subjects = [s.describe() for s in subjects]
        periods = [claim.atoms[j] for j in subjects_of(i, segs, claim) if j not in novel_set
                   and atom.kind in VALUE_KINDS and _is_period(claim.atoms[j])]
        if stating and periods:  # a period the question gave ("Q2", "4 月"): not a report on another one
            named = [w for w in stating if _names_period(w)]
            same = [w for w in named if all(w.pool.supports(p) for p in periods)]
            if named and not same:
                g.window = stating[0]
                g.problem = (f"{atom.describe()} is in the evidence ({', '.join(sorted({w.passage_id for w in stating})[:3])})"
                             f" but for another period than {', '.join(p.describe() for p in periods)}")
                out.append(g)
                continue
            stating = same or stating
        if stating:
            with_subject = [w for w in stating if all(pools[w.passage_id].supports(s) for s in subjects
                                                      if _same_script(s, pools[w.passage_id]))]
            topic = _topic_of(i, segs, claim, wins)
            if topic and with_subject:  # "refunds are issued within 30 days": a passage that says refunds
                g.subjects.append(f"'{topic[0]}'")
                with_subject = [w for w in with_subject if any(
                    term_found(t, *_passage_terms(w.passage_id, wins)) for t in topic[1])]
            if with_subject:
                # prefer a window that states the subject itself, then the best-ranked one
                g.window = max(with_subject, key=lambda w: (sum(w.pool.supports(s) for s in subjects),
                                                              rank.get(w.index, 0.0), -len(w.sentences), -w.index))
            else:
                where = sorted({w.passage_id for w in stating})
                g.window = max(stating, key=lambda w: (rank.get(w.index, 0.0), -w.index))
                g.problem = (f"{atom.describe()} is in the evidence ({', '.join(where[:3])}) but not with "
                             f"{', '.join(g.subjects)}")
        out.append(g)
    for g in out:
        if g.window is None:  # stated nowhere: :mod:`.reach` decides whether it is derivable or absent
            best = max(wins, key=lambda w: (rank.get(w.index, 0.0), -w.index), default=None)
            has = best.pool.nearest(g.atom) if best is not None else []
            g.problem = f"{g.atom.describe()} not in evidence" + (f" (evidence has {', '.join(has)})" if has else "")
    # a name the evidence does not state, whose values are grounded in a passage of the other
    # language ("华北区为 1,980 万元" against an English report): it cannot be matched, only translated
    by_atom = {id(g.atom): g for g in out}
    for i in novel:
        atom = claim.atoms[i]
        if atom.kind != "entity" or in_evidence.get(i):
            continue
        for j in novel:
            v = by_atom[id(claim.atoms[j])]
            if i in subjects_of(j, segs, claim) and v.window is not None and v.problem is None \
                    and not _same_script(atom, pools[v.window.passage_id]):
                by_atom[id(atom)].problem = None
                by_atom[id(atom)].note = (f"{atom.describe()} not compared: its values are in {v.window.passage_id}, "
                                          "in another language")
                break
    return out
