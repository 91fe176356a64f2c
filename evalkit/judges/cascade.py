"""A judge cascade: the offline judge first, a model judge only where it could not decide.

What it is for: the offline judge is free, fast and precise when it says ``unsupported``,
and it says ``unverified`` for what its rules cannot decide (derived values, paraphrases,
values stated for something else). ``--judge offline+llm`` or ``offline+nli`` sends only
those claims to the model judge, each claim on its own against the same evidence, so a run
pays for the model on the share of claims that needs it. Every claim records the stage that
decided it (:attr:`ClaimVerdict.stage`); :class:`CascadeStats` counts the model calls made
against the claims a model-only judge would have been asked about.

The second judge may split a claim into several; their verdicts combine as the answer's
do: any ``unsupported`` makes it unsupported, all ``supported`` make it supported, anything
else leaves it ``unverified``. When the second judge fails on a claim (model down, slow or
replying garbage), the claim keeps the first judge's verdict, and the reason says the model
failed: a failure never becomes a verdict.
"""
from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from evalkit.judges.base import ClaimVerdict, Judge, JudgeResult, Verdict, make_judge

__all__ = ["ESCALATE", "CascadeJudge", "CascadeStats", "combine"]

ESCALATE: tuple[str, ...] = ("unverified",)  # what goes to the second judge by default


@dataclass
class CascadeStats:
    """What a cascade did so far: claims judged, claims escalated, second-judge failures."""

    claims: int = 0      # claims the first judge gave a verdict on (what a model-only judge would judge)
    escalated: int = 0   # of which sent to the second judge
    failed: int = 0      # of which the second judge failed on (they keep the first verdict)


def combine(verdicts: Sequence[str]) -> Verdict:
    """One verdict for the pieces a second judge cut a claim into (module docstring)."""
    if "unsupported" in verdicts:
        return "unsupported"
    if verdicts and all(v == "supported" for v in verdicts):
        return "supported"
    if verdicts and all(v == "not_checkable" for v in verdicts):
        return "not_checkable"
    return "unverified"


class CascadeJudge:
    """``first`` on every claim; ``second`` on the claims ``first`` gave a verdict in ``escalate``."""

    def __init__(self, first: Judge, second: Judge, first_name: str, second_name: str,
                 escalate: Sequence[str] = ESCALATE):
        bad = set(escalate) - {"unverified", "unsupported", "not_checkable"}
        if bad:
            raise ValueError(f"escalate: {sorted(bad)} is not a verdict a second judge can revisit "
                             "(choose from unverified, unsupported, not_checkable)")
        self.first, self.second = first, second
        self.first_name, self.second_name = first_name, second_name
        self.escalate = tuple(escalate)
        self.stats = CascadeStats()
        self._lock = threading.Lock()
        self.identity = f"{first.identity}+{second.identity}:escalate={','.join(self.escalate)}"

    def judge(self, question: str, answer: str, evidence: Sequence[tuple[str, str]]) -> JudgeResult:
        """The first judge's verdicts, with the escalated claims decided again by the second judge."""
        result = self.first.judge(question, answer, evidence)
        if result.error is not None:
            return result
        claims = [replace(c, stage=c.stage or self.first_name) for c in result.claims]
        todo = [i for i, c in enumerate(claims) if c.verdict in self.escalate]
        failed = 0
        for i in todo:
            claims[i], ok = self._again(question, claims[i], evidence)
            failed += not ok
        with self._lock:
            self.stats.claims += len(claims)
            self.stats.escalated += len(todo)
            self.stats.failed += failed
        return JudgeResult(claims=claims)

    def _again(self, question: str, claim: ClaimVerdict,
               evidence: Sequence[tuple[str, str]]) -> tuple[ClaimVerdict, bool]:
        """``claim`` decided by the second judge, and whether it could decide (a failure keeps the first verdict)."""
        second = self.second.judge(question, claim.claim, evidence)
        if second.error is not None or not second.claims:
            why = second.error or "no claim in its reply"
            return replace(claim, reason=f"{claim.reason} ({self.second_name} judge failed: {why})",
                           escalated=True), False
        verdict = combine([c.verdict for c in second.claims])
        reasons = "; ".join(c.reason for c in second.claims if c.reason)
        ids = list(dict.fromkeys(x for c in second.claims for x in (c.evidence_ids or (c.evidence_id,)) if x))
        decided = next((c.evidence_id for c in second.claims if c.verdict == verdict and c.evidence_id), None)
        first = f"{self.first_name}: {claim.verdict}, {claim.reason}"
        return ClaimVerdict(claim.claim, verdict, f"{self.second_name}: {reasons or verdict} ({first})",
                            evidence_id=decided or claim.evidence_id, evidence_ids=ids or list(claim.evidence_ids),
                            stage=self.second_name, escalated=True), True


def make_cascade(name: str, cache_root: Any = None, escalate: Sequence[str] | str = ESCALATE,
                 **options: Any) -> CascadeJudge:
    """``offline+llm``: build the two judges of ``name`` from the registry. ``options`` (the LLM or
    model the second needs) go to the second judge; the first is built with its defaults."""
    first_name, _, second_name = name.partition("+")
    if isinstance(escalate, str):
        escalate = tuple(x.strip() for x in escalate.split(",") if x.strip())
    first = make_judge(first_name, cache_root=cache_root)
    second = make_judge(second_name, cache_root=cache_root, **options)
    return CascadeJudge(first, second, first_name, second_name, escalate)
