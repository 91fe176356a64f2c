"""Citation support, as in ALCE: does each claim's own citation support it, and is every citation needed?

What it is for: ``cited_gold_precision`` says whether the cited documents are gold; it
cannot tell a claim that cites the wrong passage from one that cites the right one. For
each checkable claim (a claim the judge called ``supported`` or ``unsupported`` against
all the evidence), :func:`judge_citations` asks the same judge about the claim against
*only the passages the claim cites* (Gao et al. 2023, ALCE, "Enabling Large Language
Models to Generate Text with Citations"; the entailment model there is NLI, here it is
the run's judge):

- **supported by its citations**: the cited passages, taken together, support the claim
  (the judge says ``supported`` for it); a claim without a valid citation is not;
- **each citation precise**: with one citation, when the claim is supported by it; with
  several (and supported by them together), a citation is imprecise when it does not
  support the claim alone *and* the other citations support it without it (ALCE's
  "irrelevant citation"); when the claim is not supported by its citations, none of them
  is precise; a reference that names no shown passage is never precise.

The per-answer metrics built from these findings (``citation_recall``,
``citation_precision``) are defined once, in :mod:`evalkit.metrics.answer`.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from evalkit.judges.base import Judge, JudgeResult
from evalkit.text.citations import resolve_all
from evalkit.text.claims import cited_claims

__all__ = ["CitationFinding", "judge_citations"]


@dataclass
class CitationFinding:
    """One claim's citations and what the judge said about them."""

    claim: str
    verdict: str                                       # the judge's verdict against all the evidence
    refs: list[str] = field(default_factory=list)      # the references as written ("1", "fin-004")
    cited: list[str] = field(default_factory=list)     # the passage ids they resolve to, in order
    invalid: list[str] = field(default_factory=list)   # references that name no shown passage
    supported_by_citations: bool | None = None         # None: not checkable, or the judge failed
    precise: list[bool] = field(default_factory=list)  # per citation (cited, then invalid), see module docstring
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _supports(judge: Judge, question: str, claim: str, passages: Sequence[tuple[str, str]]) -> bool | None:
    """Whether ``passages`` support ``claim`` by the judge's verdict (None when the judge failed)."""
    if not passages:
        return False
    r: JudgeResult = judge.judge(question, claim, passages)
    if r.error is not None:
        return None
    return r.n_supported > 0 and r.n_unsupported == 0


def judge_citations(judge: Judge, question: str, answer: str, evidence: Sequence[tuple[str, str, str]],
                    judgement: JudgeResult) -> list[CitationFinding]:
    """Citation findings for every claim of ``judgement`` (the judge's result on ``answer``).

    ``evidence`` = [(passage id, document id, text), ...] in the order shown to the
    generator (a number ``[n]`` names the n-th). Claims are matched to ``judgement`` by
    position (:func:`evalkit.text.claims.cited_claims` splits as the judges do); a judge
    that split the answer differently (an LLM judge's own claims) gets its claims matched
    by text, and a claim with no match has no citations.
    """
    split = cited_claims(answer)
    refs_of = {c: refs for c, refs in split}
    same = [c for c, _ in split] == [v.claim for v in judgement.claims]
    shown = [(pid, doc) for pid, doc, _ in evidence]
    text_of = {pid: text for pid, _, text in evidence}
    out = []
    for i, v in enumerate(judgement.claims):
        refs = list(split[i][1] if same else refs_of.get(v.claim, ()))
        resolved = resolve_all(refs, shown)
        cited: list[str] = []
        for r in resolved:
            if not r.valid:
                continue
            if r.ref == r.doc_id and r.ref != r.passage_id:  # a document id cites every passage of it shown
                cited += [pid for pid, doc in shown if doc == r.doc_id]
            else:
                cited.append(str(r.passage_id))
        cited = list(dict.fromkeys(cited))
        f = CitationFinding(v.claim, v.verdict, refs, [str(c) for c in cited], [r.ref for r in resolved if not r.valid])
        out.append(f)
        if v.verdict not in ("supported", "unsupported"):
            continue  # not checkable: no citation is expected of it
        try:
            ev = [(c, text_of[c]) for c in cited]
            joint = _supports(judge, question, v.claim, ev)
            precise = []
            if joint and len(ev) > 1:
                for k, c in enumerate(ev):
                    alone = _supports(judge, question, v.claim, [c])
                    rest = None if alone else _supports(judge, question, v.claim, ev[:k] + ev[k + 1:])
                    if alone is None or (not alone and rest is None):
                        raise RuntimeError("the judge failed on a citation subset")
                    precise.append(bool(alone) or not rest)
            else:
                precise = [bool(joint)] * len(ev)
        except Exception as exc:  # noqa: BLE001 - a failure is counted, never read as a verdict
            f.error = f"{type(exc).__name__}: {exc}"
            continue
        if joint is None:
            f.error = "the judge failed on the cited passages"
            continue
        f.supported_by_citations = bool(joint)
        f.precise = precise + [False] * len(f.invalid)
    return out
