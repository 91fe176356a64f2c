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
from dataclasses import dataclass

from evalkit.text.memo import shared
from evalkit.text.quantities import Quantity, find_quantities
from evalkit.text.values import Atom

__all__ = ["MAX_OPERANDS", "Operand", "bare_counts", "code_quantity", "figure", "operands", "stated_numbers",
           "stated_ranges", "unit_numbers"]

MAX_OPERANDS = 40  # stated values one derivation of :mod:`.reach` combines at most

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


def figure(x: float) -> str:
    """A value as a reason prints it (six significant digits, thousands separated)."""
    return f"{x:,.6g}"


@dataclass(frozen=True)
class Operand:
    """A stated quantity as an operand: its value, unit and kind (a year takes part in sums only)."""

    value: float
    unit: str | None
    kind: str
    year: bool = False
    raw: float | None = None  # as written (500 of 500公斤, whose value is in grams)
    in_answer: bool = False   # stated by the answer itself (its own arithmetic shows its operands)

    def label(self) -> str:
        """The value as a reason prints it: a duration as written with its unit ("7 d"), a percentage with "%"."""
        if self.kind == "duration" and self.raw is not None:
            return f"{figure(self.raw)} {self.unit or ''}".strip()
        return f"{figure(self.value)}{'%' if self.unit == '%' else ''}"


_CODE_QUANTITY = re.compile(r"^([+-]?\d+(?:\.(\d+))?)[-\s]?([A-Za-z]+)$")


def code_quantity(atom: Atom) -> Quantity | None:
    """A "code" that is a number with a unit the quantity reader does not know (``41kWh``, ``2-point``)."""
    m = _CODE_QUANTITY.match(atom.text.strip()) if atom.kind == "code" else None
    if not m:
        return None
    value = float(m.group(1))
    return Quantity("number", value, atom.text, atom.start, atom.end, unit=m.group(3).lower(), raw=value,
                    step=10.0 ** -len(m.group(2)) if m.group(2) else 0.0)


def operands(atoms: Iterable[Atom], answer: Iterable[Atom], texts: Iterable[str] = ()) -> list[Operand]:
    """The values a derivation may combine: the ``answer``'s own first (marked ``in_answer``), then the stated
    ``atoms``' (a year as a number that takes part in sums only), then numbers with a unit the quantity reader
    does not know in ``texts``; at most :data:`MAX_OPERANDS`."""
    out: dict[tuple[float, str | None, str, bool, float | None], bool] = {}
    for mine, group in ((True, answer), (False, atoms)):
        for a in group:
            q = a.quantity or code_quantity(a)
            if q is not None and q.kind in ("number", "duration", "time"):
                key = (q.value, q.unit, q.kind, False, q.raw)
                out[key] = out.get(key, False) or mine
            for d in a.dates:
                if d.year:
                    out.setdefault((float(d.year), None, "number", True, None), mine)
    read = {k[0] for k in out} | {k[4] for k in out}
    for t in texts:  # numbers with a unit the quantity reader does not know ("82kWh", "3.0GHz")
        for v, unit in unit_numbers(t):
            if v not in read:
                out.setdefault((v, unit, "number", False, v), False)
    return [Operand(*k, in_answer=v) for k, v in out.items()][:MAX_OPERANDS]
