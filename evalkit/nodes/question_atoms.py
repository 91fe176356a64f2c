"""The atoms (codes, names, dates) a question asks about, as the grade gate and the conservative retry read them.

Its own module so that ``grade`` (the gate) and ``reflection`` (what a retry searches) share it
without importing each other.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any, Literal

from evalkit.text.values import extract_atoms
from evalkit.text.values import fold as fold_value

__all__ = ["ATOM_KINDS", "AtomKind", "question_atoms"]

AtomKind = Literal["code", "entity", "date", "number", "duration", "time"]
ATOM_KINDS: tuple[AtomKind, ...] = ("code", "entity", "date")
_LEADING = ("are is was were am do does did can could should would will shall may might must has have had between "
            "besides beside among compare name list tell give describe explain which who whom whose what when where "
            "why how the a an both in on at of for from with by after before since during if")
_LEADING_WORDS = frozenset(_LEADING.split())  # a sentence's first word that is never part of a name


def question_atoms(question: str, kinds: Sequence[str] = ATOM_KINDS) -> list[Any]:
    """The question's atoms of ``kinds``; a sentence's capitalised first word is not part of a name.

    "Someone asked..." has no name; "Are Medici and Senet..." names "Medici", not "Are Medici".
    """
    out = []
    for a in extract_atoms(question):
        if a.kind not in kinds:
            continue
        initial = a.start == 0 or question[:a.start].rstrip().endswith((".", "?", "!", ":"))
        if a.kind == "entity" and initial:
            first, _, rest = a.text.strip().partition(" ")
            if first.lower() in _LEADING_WORDS and rest:
                a = replace(a, text=rest, key=fold_value(rest), start=a.start + len(a.text) - len(rest))
            elif not rest:
                continue
        out.append(a)
    return out
