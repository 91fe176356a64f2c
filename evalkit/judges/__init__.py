"""Claim-support judges: is each sentence of an answer supported by the evidence it cites?

``make_judge("offline")`` builds the deterministic, model-free grounding judge
(:mod:`evalkit.judges.offline`); other backends (``llm``, ``nli``, ``ragas``) register in
:data:`JUDGES`. Every judge returns a :class:`JudgeResult` of :class:`ClaimVerdict`.
"""
from typing import Any

from evalkit.extras import check, require
from evalkit.judges.base import (
    JUDGE_INFO,
    JUDGES,
    VERDICTS,
    ClaimVerdict,
    Judge,
    JudgeResult,
    UnknownJudgeError,
    Verdict,
    calls_model,
    judges,
    make_judge,
    register_judge,
    takes_model_folder,
)
from evalkit.text.claims import split_claims


@register_judge("llm", calls_model=True)
def _llm_judge(cache_root: Any = None, **options: Any) -> Judge:
    """``llm``: claims + verdicts from the configured LLM (imported only when built)."""
    from evalkit.judges.llm import make_llm_judge

    return make_llm_judge(cache_root=cache_root, **options)


@register_judge("nli", model_folder=True)
def _nli_judge(cache_root: Any = None, **options: Any) -> Judge:
    """``nli``: an NLI / fact-checking model from a local folder (transformers imported only when it runs)."""
    from evalkit.judges.nli import make_nli_judge

    return make_nli_judge(cache_root=cache_root, **options)


@register_judge("ragas", calls_model=True)
def _ragas_judge(cache_root: Any = None, **options: Any) -> Judge:
    """``ragas``: ragas 0.4 Faithfulness on the configured LLM (ragas is imported only when built)."""
    from evalkit.judges.llm import _spec

    _spec(options.get("llm"), "ragas")  # a missing LLM fails before the 3 s ragas import
    check("ragas", "the ragas judge")
    # imported through evalkit's module (it turns ragas' telemetry off before importing ragas)
    module = require("ragas", "the ragas judge", module="evalkit.judges.ragas_judge")
    return module.make_ragas_judge(cache_root=cache_root, **options)


__all__ = ["JUDGES", "JUDGE_INFO", "VERDICTS", "ClaimVerdict", "Judge", "JudgeResult", "UnknownJudgeError", "Verdict",
           "calls_model", "judges", "make_judge", "register_judge", "split_claims", "takes_model_folder"]
