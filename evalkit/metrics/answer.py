"""Answer metrics: faithfulness, hallucination, correctness, citations, abstention.

Defined once, here, and registered (name, direction, unit, one-line definition) at the end of this module
in :mod:`evalkit.metrics.catalog`; docs/metrics.md's table is generated from that registry.

Per query (``score_answer``), for variants that generate an answer:

- ``answered`` / ``abstained``: 1 when the pipeline gave an answer / declined (the
  fallback node, or an answer saying the evidence is insufficient). A failed query is
  neither.
- ``claims``, ``claims_supported``, ``claims_unsupported``, ``claims_unverified``,
  ``claims_not_checkable``: the judge's verdicts on the answer's claims
  (:mod:`evalkit.judges.base`). "Not checkable" claims (nothing a judge can verify) are
  never counted as supported; "unverified" ones (the judge could not decide) never as
  unsupported.
- ``faithfulness`` = supported / (supported + unsupported + unverified) claims. Undefined
  (``None``) for an abstention, for an answer with no judged claim, and when the judge failed.
- ``hallucinated`` = 1 when an answered answerable question's answer has at least one
  unsupported claim, 0 when it has none (``None`` when no claim was judged, when the judge
  failed, and on unanswerable questions: answering one of those is counted under its own
  name, ``unanswerable_hallucination_rate``).
- ``unverified`` = 1 when such an answer has an unverified claim and no unsupported one
  (0 otherwise; ``None`` where ``hallucinated`` is).
- ``answer_em``: normalised exact match with ``reference_answer``; ``answer_f1``: token
  F1 with it. Tokens are words for Latin script and single characters for CJK, after
  lower-casing, removing punctuation and thousands separators (so "5,000元" and "5000 元"
  match). Answerable questions with a reference only.
- ``answer_correctness``: 1 / 0 when a judge that can grade correctness (the ``llm``
  judge) says the answer states / misses the reference's key facts. Answered answerable
  questions with a reference only; ``None`` for abstentions and when the judge failed
  (``correctness_failed`` = 1, counted per variant as ``n_correctness_failed``).
- ``cited_gold_precision``: cited documents that are gold / cited documents (valid ones;
  ``None`` without valid citations, and for an answerable question whose gold documents
  are unknown: answers scored without an eval set). Runs before issue 13 called it ``citation_precision``;
  reading such a run renames it (:mod:`evalkit.analysis.runs`). ``invalid_citation_rate``:
  citations to ids that were not in the evidence / all citations (``None`` without
  citations); ``citations`` and ``citations_invalid`` are the counts.
- **Citation support** (ALCE, Gao et al. 2023; the findings come from
  :func:`evalkit.judges.citation_support.judge_citations`, with the run's judge in place
  of ALCE's NLI model). Over the answer's *checkable* claims C (claims the judge called
  supported or unsupported against all the evidence; ``not_checkable`` claims and claims
  whose citation check failed are left out):

  ``citation_recall`` = |{c in C : the passages c cites, together, support c}| / |C|.
  A claim without a valid citation counts as not supported by its citations, so a claim
  that is true but uncited lowers the recall (as in ALCE). ``None`` when C is empty.

  ``citation_precision`` = precise citations / all citations of the claims in C, where a
  citation is precise when its claim is supported by its citations and it is not
  *irrelevant*: with several citations, one that does not support the claim alone while
  the others support it without it is irrelevant (ALCE). A reference to a passage that
  was not shown is never precise. ``None`` when the claims in C cite nothing (ALCE scores
  that 0; here an answer without citations has no citation precision, and its recall is 0).

  ``citation_claims`` (|C|), ``citation_claims_supported`` and ``citations_checked``,
  ``citations_precise`` are the counts.

Per variant (``aggregate_answers``): ``faithfulness`` (mean over answered queries where it
is defined), ``hallucination_rate`` (share of answered answerable questions, among those
with a judged claim, whose answer has an unsupported claim: the mean of ``hallucinated``),
``unverified_rate`` (the same share for answers with an unverified claim and no unsupported
one: the mean of ``unverified``), ``claim_hallucination_rate`` (unsupported / judged claims, pooled),
``answer_em`` / ``answer_f1`` (mean over answerable questions with a reference),
``answer_correctness`` (mean where the judge gave a verdict),
``cited_gold_precision``, ``citation_recall`` and ``citation_precision`` (each the mean
over the answers where it is defined, as ALCE averages per answer), ``invalid_citation_rate`` (pooled),
``abstention_rate`` (abstained / answerable questions: false abstentions),
``correct_abstention_rate`` (abstained / unanswerable questions) and
``unanswerable_hallucination_rate`` (answered / unanswerable questions), plus the counts
``n_answered``, ``n_abstained``, ``n_no_checkable_claims`` (answered, the judge ran, no
claim it could judge: left out of every judged rate, and shown beside them),
``n_judge_failed``; with a cascade judge (``offline+llm``), ``n_claims_escalated`` (claims it
sent to its model; per query ``claims_escalated``) against ``n_claims_judged`` (all claims: what
a model-only judge would have been asked). NaN policy:
an undefined value is left out of its mean and counted; it never becomes 0 or 1.
"""
from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from evalkit.metrics.catalog import NamedMetric, register_metrics

_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_TOKEN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]|[a-z0-9]+(?:\.[0-9]+)?")
_THOUSANDS = re.compile(r"(?<=\d)[,，](?=\d{3}(?!\d))")


def normalise_answer(text: str) -> str:
    """Lower-case, NFKC (full-width -> half-width), drop thousands separators, citations, punctuation."""
    text = unicodedata.normalize("NFKC", text or "").lower()
    text = re.sub(r"\[[^\]]{1,40}\]|【[^】]{1,40}】", " ", text)
    text = _THOUSANDS.sub("", text)
    return " ".join(_TOKEN.findall(text))


def answer_tokens(text: str) -> list[str]:
    """Words for Latin script, single characters for CJK (the usual Chinese F1 convention)."""
    return normalise_answer(text).split()


def exact_match(answer: str, reference: str) -> float:
    return float(normalise_answer(answer) == normalise_answer(reference))


def token_f1(answer: str, reference: str) -> float:
    """SQuAD-style token F1 with CJK characters as tokens."""
    a, r = answer_tokens(answer), answer_tokens(reference)
    if not a or not r:
        return float(a == r)
    common = sum((Counter(a) & Counter(r)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(a), common / len(r)
    return 2 * precision * recall / (precision + recall)


def citation_support(findings: Sequence[Mapping[str, Any]] | None) -> dict[str, float | None]:
    """``citation_recall`` and ``citation_precision`` of one answer from its citation findings (module docstring)."""
    claims = [f for f in findings or () if f.get("verdict") in ("supported", "unsupported")
              and f.get("supported_by_citations") is not None]
    if not claims:
        return {}
    supported = sum(bool(f["supported_by_citations"]) for f in claims)
    precise = [bool(x) for f in claims for x in f.get("precise", [])]
    return {"citation_recall": supported / len(claims),
            "citation_precision": sum(precise) / len(precise) if precise else None,
            "citation_claims": float(len(claims)), "citation_claims_supported": float(supported),
            "citations_checked": float(len(precise)), "citations_precise": float(sum(precise))}


def score_answer(*, answerable: bool, answered: bool, abstained: bool, judgement: Mapping[str, Any] | None,
                 answer: str, reference: str | None, cited_docs: Sequence[str], invalid_citations: int,
                 gold: Sequence[str], correctness: Mapping[str, Any] | None = None,
                 citation_findings: Sequence[Mapping[str, Any]] | None = None) -> dict[str, float | None]:
    """Per-query answer metrics (see the module docstring); ``None`` marks undefined values."""
    out: dict[str, float | None] = {"answered": float(answered), "abstained": float(abstained)}
    verdicts = [c["verdict"] for c in (judgement or {}).get("claims", [])]
    sup, unsup, unver, nc = (verdicts.count(v) for v in ("supported", "unsupported", "unverified", "not_checkable"))
    judge_failed = bool(judgement and judgement.get("error"))
    if answered and judgement is not None and not judge_failed:
        out.update(claims=float(len(verdicts)), claims_supported=float(sup), claims_unsupported=float(unsup),
                   claims_unverified=float(unver), claims_not_checkable=float(nc))
        claims = judgement.get("claims", [])
        if any(c.get("stage") for c in claims):  # a cascade: how many claims went to its model
            out["claims_escalated"] = float(sum(bool(c.get("escalated")) for c in claims))
    judged = sup + unsup + unver
    ok = answered and judgement is not None and not judge_failed and judged > 0
    out["faithfulness"] = sup / judged if ok else None
    out["hallucinated"] = float(unsup > 0) if ok and answerable else None
    out["unverified"] = float(unver > 0 and unsup == 0) if ok and answerable else None
    if answerable and reference:
        out["answer_em"] = exact_match(answer, reference)
        out["answer_f1"] = token_f1(answer, reference)
        if answered and correctness is not None:  # a judge was asked (see the module docstring)
            verdict = correctness.get("verdict")
            out["answer_correctness"] = None if verdict is None else float(verdict == "correct")
            out["correctness_failed"] = float(verdict is None)
    n_cited = len(cited_docs) + invalid_citations
    out["citations"], out["citations_invalid"] = float(n_cited), float(invalid_citations)
    gold_known = bool(gold) or not answerable  # answers scored without an eval set may have no gold labels
    out["cited_gold_precision"] = (sum(d in set(gold) for d in cited_docs) / len(cited_docs)
                                   if cited_docs and gold_known else None)
    out["invalid_citation_rate"] = invalid_citations / n_cited if n_cited else None
    if answered:
        out.update(citation_support(citation_findings))
    out["judge_failed"] = float(judge_failed)
    return out


def _mean(values: Sequence[float | None]) -> float | None:
    defined = [v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    return math.fsum(defined) / len(defined) if defined else None


def aggregate_answers(rows: Sequence[tuple[bool, Mapping[str, float | None]]]) -> dict[str, float]:
    """Variant-level answer metrics from ``(answerable, per-query metrics)`` pairs (module docstring)."""
    gen = [(a, m) for a, m in rows if "answered" in m]
    if not gen:
        return {}
    answered = [m for _, m in gen if m["answered"]]
    ans_q = [m for a, m in gen if a]
    unans_q = [m for a, m in gen if not a]
    sup = sum(m.get("claims_supported") or 0 for m in answered)
    unsup = sum(m.get("claims_unsupported") or 0 for m in answered)
    unver = sum(m.get("claims_unverified") or 0 for m in answered)
    n_cit = sum(m.get("citations") or 0 for _, m in gen)
    n_bad = sum(m.get("citations_invalid") or 0 for _, m in gen)
    out: dict[str, float | None] = {
        "faithfulness": _mean([m.get("faithfulness") for m in answered]),
        "hallucination_rate": _mean([m.get("hallucinated") for m in ans_q if m["answered"]]),
        "unverified_rate": _mean([m.get("unverified") for m in ans_q if m["answered"]]),
        "claim_hallucination_rate": unsup / (sup + unsup + unver) if sup + unsup + unver else None,
        "answer_em": _mean([m.get("answer_em") for m in ans_q]),
        "answer_f1": _mean([m.get("answer_f1") for m in ans_q]),
        "answer_correctness": _mean([m.get("answer_correctness") for m in ans_q]),
        "cited_gold_precision": _mean([m.get("cited_gold_precision") for _, m in gen]),
        "citation_recall": _mean([m.get("citation_recall") for m in answered]),
        "citation_precision": _mean([m.get("citation_precision") for m in answered]),
        "invalid_citation_rate": n_bad / n_cit if n_cit else None,
        "abstention_rate": _mean([m["abstained"] for m in ans_q]),
        "correct_abstention_rate": _mean([m["abstained"] for m in unans_q]),
        "unanswerable_hallucination_rate": _mean([m["answered"] for m in unans_q]),
        "n_answered": float(len(answered)),
        "n_abstained": float(sum(m["abstained"] or 0 for _, m in gen)),
        "n_no_checkable_claims": float(sum(1 for m in answered if m.get("faithfulness") is None
                                           and not m.get("judge_failed"))),
        "n_judge_failed": float(sum(m.get("judge_failed") or 0 for _, m in gen)),
        "n_claims_judged": float(sum(m.get("claims") or 0 for m in answered))
        if any("claims_escalated" in m for m in answered) else None,
        "n_claims_escalated": float(sum(m.get("claims_escalated") or 0 for m in answered))
        if any("claims_escalated" in m for m in answered) else None,
        "n_correctness_failed": float(sum(m.get("correctness_failed") or 0 for _, m in gen))
        if any("correctness_failed" in m for _, m in gen) else None,
    }
    return {k: v for k, v in out.items() if v is not None}


# The answer metrics' printed names, directions and one-line definitions (evalkit.metrics.catalog);
# the order is the answers table's column order, most important first.
_M = NamedMetric
register_metrics(
    "answers",
    _M("faithfulness", "higher", "score", "supported / (supported + unsupported + unverified) claims of an answer; "
       "per variant the mean over answered queries where it is defined", header="faithful", headline=1),
    _M("hallucination_rate", "lower", "share", "share of answered answerable questions (with a judged claim) whose "
       "answer has at least one unsupported claim", header="halluc", per_query="hallucinated", headline=2),
    _M("hallucinated", "lower", "flag", "1 when an answered answerable question's answer has an unsupported claim "
       "(per query; None without a judged claim)", header="halluc"),
    _M("unverified_rate", "lower", "share", "share of the same answers with an unverified claim and no unsupported "
       "one (the judge could not decide)", header="unverif", per_query="unverified", headline=3),
    _M("unverified", "lower", "flag", "1 when such an answer has an unverified claim and no unsupported one "
       "(per query)", header="unverif"),
    _M("n_no_checkable_claims", "none", "count", "answered queries the judge ran on with no claim it could judge "
       "(left out of every judged rate)", header="no-claims"),
    _M("answer_f1", "higher", "score", "SQuAD token F1 with reference_answer (words for Latin script, characters "
       "for CJK); mean over answerable questions with a reference", header="F1", headline=5),
    _M("answer_correctness", "higher", "score", "1 when a judge that grades correctness (llm) says the answer "
       "states the reference's key facts; mean where it gave a verdict", header="correct", headline=4),
    _M("citation_recall", "higher", "score", "ALCE: checkable claims supported by their own citations / "
       "checkable claims; mean over answers", header="cite.rec"),
    _M("citation_precision", "higher", "score", "ALCE: precise citations (support their claim, not irrelevant) / "
       "citations of checkable claims; mean over answers", header="cite.prec"),
    _M("cited_gold_precision", "higher", "score", "cited documents that are gold / valid cited documents "
       "(was citation_precision)", header="cite.gold"),
    _M("abstention_rate", "lower", "share", "abstained / answerable questions (false refusals)",
       header="declined(ans)", per_query="abstained"),
    _M("correct_abstention_rate", "higher", "share", "abstained / unanswerable questions",
       header="declined(unans)", per_query="abstained"),
    _M("unanswerable_hallucination_rate", "lower", "share", "answered / unanswerable questions (answering one at "
       "all is a hallucination)", header="answered(unans)", per_query="answered"),
    _M("claim_hallucination_rate", "lower", "share", "unsupported / judged claims, pooled over the variant",
       header="halluc(claims)", per_query="claims_unsupported"),
    _M("answer_em", "higher", "score", "normalised exact match with reference_answer; mean over answerable "
       "questions with a reference", header="EM"),
    _M("invalid_citation_rate", "lower", "share", "citations to ids that were not in the evidence / all "
       "citations, pooled", header="cite.invalid", per_query="citations_invalid"),
    _M("n_answered", "none", "count", "queries the pipeline answered", header="answered"),
    _M("n_abstained", "none", "count", "queries the pipeline declined (fallback or an insufficient-evidence answer)",
       header="declined"),
    _M("n_judge_failed", "lower", "count", "answers the judge failed on (LLM down, malformed reply)",
       header="judge-failed", descriptive=True),
    _M("n_correctness_failed", "lower", "count", "answers whose correctness grading failed",
       header="grade-failed", descriptive=True),
    # per query only: the counts and flags the rates above aggregate
    _M("answered", "none", "flag", "1 when the pipeline gave an answer (per query)", column=False),
    _M("abstained", "none", "flag", "1 when the pipeline declined (per query)", column=False),
    _M("claims", "none", "count", "claims the judge split the answer into (per query)", column=False),
    _M("claims_supported", "none", "count", "claims the evidence states (per query)", column=False),
    _M("claims_unsupported", "lower", "count", "claims the evidence speaks against (per query)", column=False),
    _M("claims_unverified", "lower", "count", "claims the judge could not decide (per query)", column=False),
    _M("claims_not_checkable", "none", "count", "claims with nothing to check, e.g. 'Yes.' (per query)",
       column=False),
    _M("claims_escalated", "none", "count", "claims a cascade judge sent to its model (per query)", column=False),
    _M("judge_failed", "lower", "flag", "1 when the judge failed on the answer (per query)", column=False),
    _M("correctness_failed", "lower", "flag", "1 when the correctness grading failed (per query)", column=False),
    _M("citations", "none", "count", "citations in the answer, valid or not (per query)", column=False),
    _M("citations_invalid", "lower", "count", "citations to ids not in the evidence (per query)", column=False,
       descriptive=False),
    _M("citation_claims", "none", "count", "checkable claims the citation check ran on (per query)", column=False),
    _M("citation_claims_supported", "none", "count", "of them, claims supported by their own citations (per query)",
       column=False),
    _M("citations_checked", "none", "count", "citations of checkable claims (per query)", column=False),
    _M("citations_precise", "none", "count", "of them, precise citations (per query)", column=False),
    source=__name__,
)
