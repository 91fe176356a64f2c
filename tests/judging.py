"""Shared helpers of the offline-judge tests: the verdicts of one hand-written case.

Three shapes of evidence, as the test files write their cases: passages as strings (ids
``doc-1``, ``doc-2``...), a ``{id: text}`` dict, or a list of ``(id, text)`` pairs; and the
answer-level outcome the data-set tests count (:func:`outcome`).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from evalkit.text.quantities import find_quantities


def verdicts(judge: Any, question: str, answer: str, *passages: str) -> list[str]:
    """Each claim's verdict, the passages given as texts; a judge error fails the test."""
    result = judge.judge(question, answer, [(f"doc-{i}", p) for i, p in enumerate(passages, 1)])
    assert result.error is None, result.error
    return [c.verdict for c in result.claims]


def judged(judge: Any, question: str, answer: str, *passages: str) -> list[tuple[str, str]]:
    """Each claim's ``(verdict, reason)``, the passages given as texts; a judge error fails the test."""
    result = judge.judge(question, answer, [(f"doc-{i}", p) for i, p in enumerate(passages, 1)])
    assert result.error is None, result.error
    return [(c.verdict, c.reason) for c in result.claims]


def outcome(result: Any) -> str:
    """An answer's verdict: ``unsupported`` if a claim is, else ``unverified`` if a claim is, else
    ``supported`` if a claim is, else ``not_checkable`` (``error`` when the judge failed)."""
    if result.error is not None:
        return "error"
    for verdict in ("unsupported", "unverified", "supported"):
        if any(c.verdict == verdict for c in result.claims):
            return verdict
    return "not_checkable"


def verdicts_by_id(judge: Any, question: str, answer: str, evidence: dict[str, str]) -> list[str]:
    """Each claim's verdict, the evidence given as ``{passage id: text}``."""
    return [c.verdict for c in judge.judge(question, answer, list(evidence.items())).claims]


def verdicts_with_reasons(judge: Any, question: str, answer: str,
                          evidence: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    """Each claim's ``(verdict, reason)``, the evidence given as ``(passage id, text)`` pairs."""
    return [(c.verdict, c.reason) for c in judge.judge(question, answer, evidence).claims]


def read(text: str) -> list[tuple[str, float, str | None]]:
    """The quantities of ``text`` as (kind, value rounded to 6 places, unit)."""
    return [(q.kind, round(q.value, 6), q.unit) for q in find_quantities(text)]
