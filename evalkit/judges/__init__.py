"""Claim-support judges: is each sentence of an answer supported by the evidence it cites?

``make_judge("offline")`` builds the deterministic, model-free grounding judge
(:mod:`evalkit.judges.offline`); other backends (``llm``, ``ragas``) register in
:data:`JUDGES`. Every judge returns a :class:`JudgeResult` of :class:`ClaimVerdict`.
"""
from evalkit.judges.base import (
    JUDGES,
    VERDICTS,
    ClaimVerdict,
    Judge,
    JudgeResult,
    UnknownJudgeError,
    Verdict,
    make_judge,
    register_judge,
)
from evalkit.judges.claims import split_claims

__all__ = ["JUDGES", "VERDICTS", "ClaimVerdict", "Judge", "JudgeResult", "UnknownJudgeError", "Verdict",
           "make_judge", "register_judge", "split_claims"]
