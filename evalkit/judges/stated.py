"""What evidence texts state as plain numbers, read once per text: the operands of :mod:`.reach`.

What it is for: :func:`evalkit.judges.reach.reach` tries, for every value of a claim that no
passage states with its subject, whether some stated number derives it. The numbers a text
states (digit runs, quantities, narrow ranges, numbers with a unit the quantity reader does
not know) depend on the text alone, so each text is read once (:func:`evalkit.text.memo.shared`)
instead of once for every value of every claim judged against it. The readers keep the order
in which the numbers are written: the sets built from them are the same, element for element.
"""
from __future__ import annotations

import re
from collections.abc import Iterable

from evalkit.text.memo import shared
from evalkit.text.quantities import find_quantities
from evalkit.text.values import Atom

__all__ = ["bare_counts", "stated_numbers", "stated_ranges", "unit_numbers"]

_RANGE = re.compile(r"(\d[\d,]*(?:\.\d+)?)\s*(?:[-–—~～至到]|to|through|thru|and)\s*(\d[\d,]*(?:\.\d+)?)", re.IGNORECASE)
_DIGITS = re.compile(r"(?<![\d.])\d[\d,]*(?:\.\d+)?")
_UNIT_NUMBER = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)\s?([A-Za-z]{1,5})\b")


def _num(text: str) -> float | None:
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return None


@shared(maxsize=50_000)
def _text_numbers(text: str) -> tuple[float, ...]:
    """The digit runs of ``text``, then the values of its quantities, in order."""
    return tuple([x for x in (_num(m) for m in _DIGITS.findall(text)) if x is not None]
                 + [q.value for q in find_quantities(text)])


def stated_numbers(atoms: Iterable[Atom], texts: Iterable[str]) -> list[float]:
    """Every value stated: quantities (scaled and as written), date parts, digit runs of the text."""
    out: set[float] = set()
    for a in atoms:
        if a.quantity is not None:
            out.add(a.quantity.value)
            if a.quantity.raw is not None:
                out.add(a.quantity.raw)
        for d in a.dates:
            out.update(x for x in (d.year, d.month, d.day) if x)
    for t in texts:
        out.update(_text_numbers(t))
    return sorted(out)


@shared(maxsize=50_000)
def _text_ranges(text: str) -> tuple[tuple[float, float], ...]:
    out = []
    for m in _RANGE.finditer(text):
        a, b = _num(m.group(1)), _num(m.group(2))
        if a is not None and b is not None and a < b:
            out.append((a, b))
    return tuple(out)


def stated_ranges(texts: Iterable[str]) -> list[tuple[float, float]]:
    """Every range ``a-b`` (a < b) the texts state ("2020–2022", "3 to 5 days", "5至10"), in order."""
    return [r for t in texts for r in _text_ranges(t)]


@shared(maxsize=50_000)
def unit_numbers(text: str) -> tuple[tuple[float, str], ...]:
    """``(value, unit)`` of each number with a short Latin unit in ``text`` ("82kWh", "3.0GHz"), in order,
    the unit lower-cased (whether the quantity reader knows the unit or not)."""
    return tuple((float(m.group(1)), m.group(2).lower()) for m in _UNIT_NUMBER.finditer(text))


@shared(maxsize=50_000)
def bare_counts(text: str) -> frozenset[float]:
    """The values of the quantities of ``text`` without a unit (counts a claim writes: "3 家", "two")."""
    return frozenset(q.value for q in find_quantities(text) if q.unit is None)
