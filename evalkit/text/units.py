"""The unit vocabulary quantities are read with: durations, measures, currencies, scale words.

What it is for: :mod:`evalkit.text.quantities` reads ``3 h``, ``600 mg``, ``US$``, ``亿``
with these tables (masses in one base unit, so ``0.6 g`` is ``600 mg``); :func:`implied_units`
finds the unit a text names for its bare numbers (``backoff_ms``, ``单位为秒``).
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TypeVar

from evalkit.text.wordlists import table

__all__ = ["CURRENCIES", "CURRENCY_PREFIX", "CURRENCY_SUFFIX", "DURATION_UNITS", "OTHER_UNITS", "SCALE_SUFFIX", "SECONDS",
           "TO_BASE", "implied_units", "unit_alternation", "unit_of"]

SECONDS = {"ms": 0.001, "s": 1, "min": 60, "h": 3600, "d": 86400, "wd": 86400, "w": 604800,
           "mo": 31_557_600 / 12, "y": 31_557_600}
# the unit tables (pattern, code), in the order their patterns are tried: data/*.txt
DURATION_UNITS = table("units_duration")
OTHER_UNITS = table("units_other")
# masses are one unit in grams: 0.6 g states "600 mg", 1.5 t states "1,500 kg" (the written value stays in ``raw``)
TO_BASE = {"mg": ("g", 0.001), "kg": ("g", 1000.0), "t": ("g", 1e6)}
CURRENCY_PREFIX = table("currency_prefix")
CURRENCY_SUFFIX = table("currency_suffix")  # cent: a hundredth of a dollar
SCALE_SUFFIX = [(p, float(f)) for p, f in table("scale_suffix")]  # 2千万 = 20,000,000
CURRENCIES = frozenset({"usd", "cny", "eur", "gbp"})


T = TypeVar("T")


def unit_alternation(pairs: Sequence[tuple[str, object]]) -> str:
    """A regex alternation of the tables' patterns, one named group each (``u0``, ``u1``...)."""
    return "|".join(f"(?P<u{i}>{p})" for i, (p, _) in enumerate(pairs))


def unit_of(m: re.Match[str], pairs: Sequence[tuple[str, T]]) -> T | None:
    """The code of the pattern of :func:`unit_alternation` that ``m`` matched, or None."""
    for i, (_, v) in enumerate(pairs):
        if m.group(f"u{i}") is not None:
            return v
    return None

_UNIT_NAMES = [(r"ms|millis(?:econds?)?|msecs?|毫秒", "ms"), (r"s|secs?|seconds?|秒", "s"), (r"mins?|minutes?|分钟", "min"),
               (r"h|hrs?|hours?|小时", "h"), (r"d|days?|天", "d"), (r"mb", "mb"), (r"gb", "gb"), (r"kb", "kb"),
               (r"pct|percent|%|百分比", "%")]
_HINT = re.compile(
    r"[A-Za-z0-9][_.-](?P<u1>ms|millis|msec|s|sec|secs|seconds|min|mins|minutes|h|hours|d|days|mb|gb|kb|pct)\b"
    r"|单位(?:为|是)?\s*[:：]?\s*(?P<u2>毫秒|秒|分钟|小时|天|MB|GB|KB|%)"                               # 单位为秒
    r"|[（(](?P<u3>毫秒|秒|分钟|小时|天|ms|s|sec|seconds|minutes|min|hours|days|MB|GB|KB|%)[)）]"          # 时长（秒）
    r"|\bin (?P<u4>milliseconds|seconds|minutes|hours|days)\b", re.IGNORECASE)


def implied_units(text: str) -> frozenset[str]:
    """Units a text names for its bare numbers: ``backoff_ms`` (ms), ``单位为秒`` (s), ``(MB)``, ``in seconds``.

    What it is for: a bare evidence number supports a claim with a unit only when the
    evidence says which unit its numbers are in (config fields, tables with a unit
    header); ``500`` alone does not state ``500 seconds``.
    """
    out = set()
    for m in _HINT.finditer(text):
        word = next(g for g in m.groups() if g).lower()
        for pattern, code in _UNIT_NAMES:
            if re.fullmatch(pattern, word, re.IGNORECASE):
                out.add(code)
                break
    return frozenset(out)
