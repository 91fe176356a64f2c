"""Two-step derivations: a value an answer computed from three stated values, ``(a op b) op c``.

What it is for: :mod:`.reach` tries one operation on two stated values. Answers to questions
that need several documents compute in more steps (a total of a fee and a count times a rate,
a share of a difference, a fee per unit times a count less a deposit), and a value one step
cannot reach was then ``unsupported`` whenever the evidence held another value of its kind
with the claim's words, or the answer did not look as if it computed.

:func:`two_steps` finds ``(a op b) op c`` (``op``: + - x /, or ``c - (a op b)``) within the
target's rounding and hedge, the three values stated by the evidence, the question or the
answer, with units that fit as an accountant's would: a sum or difference of two values in one
unit keeps it; a product of a value in a unit and a bare number (a count, a share: a
percentage also counts as its fraction) keeps that unit; a ratio of two values in one unit
is bare, of a value in a unit by a bare number keeps the unit; the result must be in the
target's unit. Anything else (dollars times dollars, a percentage plus a count) is no
derivation. A search this wide still fits some wrong values by chance; the judge then calls
them ``unverified``, never ``supported`` (a false "hallucinated" is acted on, "could not
verify" costs a look). :mod:`.reach` uses it only in answers that compute; the trade is
measured in reports/judges.md, "Judge v13".
"""
from __future__ import annotations

from collections.abc import Sequence
from itertools import product

import numpy as np

__all__ = ["NEARBY", "nearby_fits", "two_steps"]

NEARBY = 8  # values as precise as a target, either side of it, that :func:`nearby_fits` tries

_OPS = ("+", "-", "x", "/")
_UNFIT = "<units do not fit>"  # what _unit_of says of dollars times dollars


def _unit_of(op: str, ua: str | None, ub: str | None) -> str | None:
    """The unit of ``a op b``, or :data:`_UNFIT` (see the module docstring)."""
    if op in "+-":
        return ua if ua == ub else _UNFIT
    if op == "x":
        if ub is None:
            return ua
        return ub if ua is None else _UNFIT
    if ua == ub:
        return None
    return ua if ub is None else _UNFIT


def _value_of(op: str, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return {"+": x + y, "-": x - y, "x": x * y, "/": x / y}[op]


def _bounds(op: str, s: np.ndarray, lo: float, hi: float) -> tuple[np.ndarray, np.ndarray]:
    """The interval a third value ``c`` must lie in for ``s op c`` (``"from"``: ``c - s``) to be in ``[lo, hi]``
    (``low > high`` where there is none)."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if op == "+":
            return lo - s, hi - s
        if op == "-":
            return s - hi, s - lo
        if op == "from":
            return lo + s, hi + s
        pos = s > 0
        if op == "x":
            low, high = np.where(pos, lo / s, hi / s), np.where(pos, hi / s, lo / s)
            return np.where(s == 0, np.inf, low), np.where(s == 0, -np.inf, high)
        ok = pos & (lo > 0)  # "/": s / c with c > 0
        return np.where(ok, s / hi, np.inf), np.where(ok, s / lo, -np.inf)


def two_steps(lo: float, hi: float, scales: Sequence[float], unit: str | None,
              operands: Sequence[tuple[float, str | None, str]]) -> str | None:
    """``"(a op b) op c"`` for the first three ``operands`` ((value, unit, label)) whose two-step result, in
    ``unit``, times one of ``scales`` lies in ``[lo, hi]``; or None. Zeros and ones are no operands."""
    groups: dict[str | None, dict[float, str]] = {}
    for value, u, label in operands:
        if value not in (0.0, 1.0) and np.isfinite(value):
            groups.setdefault(u, {}).setdefault(float(value), label)
    if sum(len(g) for g in groups.values()) < 3:
        return None
    sorted_groups = {u: np.array(sorted(g)) for u, g in groups.items()}
    for ua, ub in product(groups, repeat=2):
        a, b = sorted_groups[ua], sorted_groups[ub]
        i = np.repeat(np.arange(len(a)), len(b))  # every (a value, b value) pair
        j = np.tile(np.arange(len(b)), len(a))
        if ua == ub:
            i, j = i[i != j], j[i != j]
        for op in _OPS:
            us = _unit_of(op, ua, ub)
            if us == _UNFIT:
                continue
            s = _value_of(op, a[i], b[j])
            for uc, c in sorted_groups.items():
                for op2 in (*_OPS, "from"):
                    if _unit_of("-" if op2 == "from" else op2, us, uc) != unit:
                        continue
                    for sc in scales:
                        low, high = _bounds(op2, s, *sorted((lo / sc, hi / sc)))
                        hit = np.flatnonzero(np.searchsorted(c, low, "left") < np.searchsorted(c, high, "right"))
                        if hit.size:
                            k = int(hit[0])
                            third = groups[uc][float(c[np.searchsorted(c, low[k], "left")])]
                            pair = f"({groups[ua][float(a[i[k]])]} {op} {groups[ub][float(b[j[k]])]})"
                            return f"{third} - {pair}" if op2 == "from" else f"{pair} {op2} {third}"
    return None


def nearby_fits(lo: float, hi: float, spacing: float, scales: Sequence[float], unit: str | None,
                operands: Sequence[tuple[float, str | None, str]]) -> float:
    """The share of the :data:`NEARBY` values either side of a target, each ``spacing`` apart (as precise as the
    target is written: 4,480 steps by 10, 3,136 by 1, 20 by 10), that :func:`two_steps` also reaches: how likely
    the search fits a value of this size and precision by chance. A specific fit (a low share) is a
    derivation; a search that reaches most values near a round or small target says nothing of it."""
    shifts = [k * spacing for k in range(-NEARBY, NEARBY + 1) if k and lo + k * spacing > 0]
    if not shifts:
        return 1.0
    return sum(two_steps(lo + d, hi + d, scales, unit, operands) is not None for d in shifts) / len(shifts)
