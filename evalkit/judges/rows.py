"""Rows of a list or table: a value the evidence gives to another item than the one the answer speaks of.

What it is for: documents keep values in lists and tables, one row per item ("- Team: 600 requests per
minute", "- Business: 3,000 requests per minute"; "| LX200P-STD | LX-200 Pro 标准版 | 7,999 元 |"). An
answer that gives the Team plan the Business plan's limit states a value the evidence does state, so the
grounding finds it and calls the claim supported: the judge's blind spot, a value present in the evidence
but confused between two things (``../shared/JUDGING.md``, finding 4). A row binds its value to its
label, so the evidence says which item has which value; where the answer names one row's item and gives
it another row's value, the evidence says otherwise, which is positive evidence (``unsupported``).

The rule (:func:`misbound`): a claim value ``V`` the evidence states only in rows of lists (no sentence
of running text states it) is given to another item when, for every row ``R`` that states it, the list
has a sibling row ``R'`` with a value of the same kind and unit other than ``V`` such that the question
and the claim name something of ``R'``'s label that ``R``'s label lacks ("Team", a model code), and
nothing of ``R``'s label that ``R'``'s lacks. A row's label is its text without its values and list
marks (for a table row: its other cells); a label part is a content word or a code. So "the LX-200 Pro"
asked, and the value of the row "LX-200" answered, is another item's ("Pro" is in the question and in no
part of the row "LX-200"); a question naming both items, or a claim naming the row it took its value
from, gives no verdict here. Rows are lines opened by a list mark (``-``, ``*``, ``•``, ``1.``,
``（1）``) or table rows (``| ... |``), and one list is a run of such lines with no other line between.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from evalkit.judges.counter import VALUE_KINDS, same_kind
from evalkit.text.lexicon import content_terms, term_found
from evalkit.text.memo import shared
from evalkit.text.values import Atom, AtomPool, extract_atoms, mask_atoms

__all__ = ["Row", "list_rows", "misbound"]

_ITEM = re.compile(r"^\s*(?:[-*•·▪●◦]|\d{1,2}[.)、]|[（(]\d{1,2}[)）]|[a-z][.)])\s+|^\s*[（(]\d{1,2}[)）]")
_TABLE = re.compile(r"^\s*\|.*\|\s*$")
_RULE = re.compile(r"^[\s|:：\-=+]*$")  # a table's |---|---| line


@dataclass(frozen=True)
class Row:
    """One row of a list or table: its values, the parts of its label, and which list it belongs to."""

    list_id: int
    text: str
    values: tuple[Atom, ...]
    terms: frozenset[str]      # content words of the label
    codes: frozenset[str]      # code keys of the label ("lx200pstd")

    def parts(self) -> frozenset[str]:
        return self.terms | {f"code:{c}" for c in self.codes}


def _values(text: str) -> tuple[Atom, ...]:
    return tuple(a for a in extract_atoms(text, entities=False) if a.kind in VALUE_KINDS)


def _row(list_id: int, text: str, values: tuple[Atom, ...]) -> Row:
    """A row with its label: every word of it but its values and list mark (a table row's other cells; a list
    item's words after its colon too: "复杂度：须包含...至少 3 类" is the row of a claim that says 须包含...)."""
    masked = mask_atoms(text, list(values), keep_entities=True)
    label = " ".join(masked.strip().strip("|").split("|")) if _TABLE.match(text) else _ITEM.sub("", masked, count=1)
    codes = frozenset(a.key for a in extract_atoms(label, entities=False) if a.kind == "code")
    return Row(list_id, text, values, frozenset(content_terms(label)), codes)


@shared(maxsize=5_000)
def _read(text: str) -> tuple[tuple[Row, ...], tuple[str, ...]]:
    """The rows of every list and table of a passage that state a value, and its other lines (running text)."""
    rows: list[Row] = []
    running: list[str] = []
    list_id, in_list = 0, False
    for line in text.splitlines():
        if not line.strip() or (_TABLE.match(line) and _RULE.match(line)):
            continue
        values = _values(line)
        if not (_ITEM.match(line) or _TABLE.match(line)):
            in_list = False
            running.append(line)
            continue
        if not in_list:
            list_id, in_list = list_id + 1, True
        if values:
            rows.append(_row(list_id, line, values))
    return tuple(rows), tuple(running)


def list_rows(text: str) -> tuple[Row, ...]:
    """The rows of every list and table of a passage that state a value (see the module docstring)."""
    return _read(text)[0]


def _states(row_values: tuple[Atom, ...], row_text: str, atom: Atom) -> bool:
    return _pool(row_values, row_text).supports(atom)


@shared(maxsize=20_000)
def _pool(row_values: tuple[Atom, ...], row_text: str) -> AtomPool:
    """The values of a row or line, for look-ups (cached: a passage's lines are read for every value judged)."""
    return AtomPool(list(row_values), row_text)


def _named(parts: frozenset[str], pool: AtomPool, terms: frozenset[str]) -> list[str]:
    """The label parts the text (question and claim) names; a code only as a whole code (the "LX-200" of
    "LX-200 Pro" is not named)."""
    out = []
    for p in sorted(parts):
        if p.startswith("code:"):
            if p[5:] in pool.codes:
                out.append(p[5:])
        elif term_found(p, terms, pool.folded) >= 1.0:
            out.append(p)
    return out


def _running_text_states(text: str, atom: Atom) -> bool:
    """Whether a line of ``text`` that is no list or table row states ``atom``."""
    return any(_states(_values(line), line, atom) for line in _read(text)[1])


def _around(atom: Atom, claim: str, claim_atoms: Sequence[Atom]) -> str:
    """The part of the claim that speaks of ``atom``: from the value before it to the value after it ("Between 7
    and" of "Between 7 and 365 days ...; Enterprise keeps it 365 days": the 7 is not said of Enterprise)."""
    values = [a for a in claim_atoms if a.kind in VALUE_KINDS]
    start = max((a.end for a in values if a.end <= atom.start), default=0)
    end = min((a.start for a in values if a.start >= atom.end), default=len(claim))
    return claim[start:end]


def misbound(atom: Atom, question: str, claim: str, claim_atoms: Sequence[Atom], evidence: Sequence[str]) -> str | None:
    """Why the evidence gives claim value ``atom`` to another row's item than the one the question and the
    claim's words around the value name, or None."""
    if atom.kind not in VALUE_KINDS or not any(_states(r.values, r.text, atom) for t in evidence for r in list_rows(t)):
        return None  # no row states it (most values: this is the cheap test, so it comes first)
    if any(_running_text_states(t, atom) for t in evidence):
        return None
    said = f"{question}\n{_around(atom, claim, claim_atoms)}"
    pool = AtomPool(list(extract_atoms(said, entities=False)), said)
    terms = frozenset(content_terms(said))
    found: list[str] = []
    for text in evidence:
        rows = list_rows(text)
        for r in rows:
            if not _states(r.values, r.text, atom):
                continue
            other = None
            for s in rows:
                if s is r or s.list_id != r.list_id or _states(s.values, s.text, atom):
                    continue
                if not any(same_kind(atom, v) for v in s.values):
                    continue
                theirs, mine = s.parts() - r.parts(), r.parts() - s.parts()
                if _named(theirs, pool, terms) and not _named(mine, pool, terms):
                    other = s
                    break
            if other is None:
                return None  # a row that states it is not ruled out: the value may be that item's
            found.append(f"'{r.text.strip()}' against '{other.text.strip()}'")
    if not found:
        return None
    return f"{atom.describe()} is another item's in the evidence's list: {found[0]}"
