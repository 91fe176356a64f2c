"""The ``self_check`` node: is the answer supported by the evidence it was written from?

After ``generate``, the node judges ``answer`` against ``answer_evidence`` with a claim
judge of ``evalkit.judges``, built by the factory the runner hands the node's resources
(``resources.judge``: nodes never import the judges) (``judge: offline`` by default: the deterministic grounding
judge; ``judge: llm`` with ``judge_options: {llm: {...}}`` where a model server exists).
It passes when no claim is unsupported (``fail_on: unsupported``) or, stricter, when at
least one claim is supported and none is unsupported (``fail_on: unsupported_or_unchecked``).

``self_check_decision`` (route on it): ``pass``; ``skipped`` (the ``only_below_evidence``
condition was not met, or the answer abstained and ``check_abstentions`` is off);
``retry`` (failed, attempts left: route to ``query_rewrite``, which counts the attempt);
``exhausted`` (failed at ``attempt >= max_attempts``: route to the fallback, or to the end
to keep the answer). On a failure ``reflection`` says which claims were unsupported and
which question terms the evidence lacks, in the shape the ``grade`` node uses.

With ``retry_rewrite: conservative`` (the module-graph design's retry) the reflection also says
``strategy: conservative``: ``query_rewrite`` then searches only the question's most certain terms
(its codes, names, dates and content words; no dictionary, sub-query, LLM or feedback term:
``evalkit.nodes.reflection.conservative_query``), and ``rewrite_source`` reads ``conservative``.

A judge that raises or reports an error never crashes the query: ``on_judge_error``
decides (``pass`` by default: an unjudged answer is let through) and ``llm_fallback``
records it. With the ``extractive`` generator the answer is copied from the evidence,
so the offline self-check almost never fails; it earns its place with generative LLMs.

YAML::

    self_check:
      type: self_check
      params: {judge: offline, max_attempts: 3, only_below_evidence: 3}
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import Field

from evalkit.graph.node import Node, NodeParams, register_node
from evalkit.graph.schema import (
    ABSTAINED,
    ANSWER,
    ANSWER_EVIDENCE,
    ATTEMPT,
    LLM_FALLBACK,
    QUESTION,
    REFLECTION,
    SELF_CHECK_CLAIMS,
    SELF_CHECK_DECISION,
    SELF_CHECK_PASSED,
    SELF_CHECK_REASON,
    Role,
)
from evalkit.nodes.reflection import CONSERVATIVE
from evalkit.text.lexicon import content_terms


class SelfCheckParams(NodeParams):
    judge: str = Field(default="offline", description="the claim judge: offline, llm, nli, ragas (evalkit.judges)")
    judge_options: dict[str, Any] = Field(default_factory=dict, description="keyword options of make_judge")
    max_attempts: int = Field(default=3, ge=1, description="a failure at this attempt decides exhausted")
    only_below_evidence: int | None = Field(
        default=None, ge=1, description="check only answers shown fewer than this many evidence passages")
    fail_on: Literal["unsupported", "unsupported_or_unchecked"] = Field(
        default="unsupported", description="unsupported: fail on any unsupported claim; "
                                           "unsupported_or_unchecked: also fail when no claim is supported")
    check_abstentions: bool = Field(default=False, description="also judge answers that abstained")
    retry_rewrite: Literal["feedback", "conservative"] = Field(
        default="feedback", description="what the retry's rewrite does: feedback (the reflection's terms, "
        "like a grade's) or conservative (only the question's most certain terms: evalkit.nodes.reflection)")
    on_judge_error: Literal["pass", "fail"] = Field(default="pass", description="what a judge failure "
                                                    "decides (it is recorded in llm_fallback)")


@register_node
class SelfCheck(Node[SelfCheckParams]):
    type = "self_check"
    role = Role.CHECKER
    reads = (QUESTION, ANSWER, ANSWER_EVIDENCE, ABSTAINED, ATTEMPT)
    writes = (SELF_CHECK_PASSED, SELF_CHECK_DECISION, SELF_CHECK_REASON, SELF_CHECK_CLAIMS, REFLECTION)
    optional_writes = (LLM_FALLBACK,)
    Params = SelfCheckParams

    def __init__(self, name: str, params: SelfCheckParams, resources: Any = None):
        super().__init__(name, params, resources)
        self.passages = resources.passages()
        options = dict(params.judge_options)
        if isinstance(options.get("llm"), Mapping):
            from evalkit.llm.base import LLMSpec

            options["llm"] = LLMSpec(**options["llm"])
        self.judge = resources.judge(params.judge, **options)  # the runner's evalkit.judges.make_judge

    def run(self, state: Mapping[str, Any]) -> dict[str, Any]:
        p = self.params
        attempt = int(state.get("attempt") or 0) or 1
        evidence = list(state.get("answer_evidence") or [])
        if p.only_below_evidence is not None and len(evidence) >= p.only_below_evidence:
            return self._done("skipped", None, f"{len(evidence)} evidence passages >= {p.only_below_evidence}")
        if state.get("abstained") and not p.check_abstentions:
            return self._done("skipped", None, "the answer abstained")
        texts = [(h.doc_id, self.passages.text(h.id)) for h in evidence]
        out: dict[str, Any] = {}
        try:
            result = self.judge.judge(state["question"], state.get("answer") or "", texts)
            error = result.error
        except Exception as exc:  # noqa: BLE001 - a judge failure is counted, never a crash
            result, error = None, f"{type(exc).__name__}: {exc}"
        if error is not None or result is None:
            out["llm_fallback"] = {"node": self.name, "attempt": attempt, "kind": "judge_error",
                                   "message": str(error)[:200]}
            passed = p.on_judge_error == "pass"
            reason = f"judge failed ({str(error)[:80]}); on_judge_error={p.on_judge_error}"
            claims: list[dict[str, Any]] = []
        else:
            unsupported = [c for c in result.claims if c.verdict == "unsupported"]
            passed = not unsupported and (p.fail_on == "unsupported" or result.n_supported > 0)
            reason = (f"{result.n_supported} supported, {len(unsupported)} unsupported, "
                      f"{result.n_not_checkable} not checkable")
            claims = [{"claim": c.claim, "verdict": c.verdict, "reason": c.reason} for c in result.claims]
        if passed:
            return {**out, **self._done("pass", True, reason), "self_check_claims": claims}
        decision = "exhausted" if attempt >= p.max_attempts else "retry"
        out.update(self._done(decision, False, f"{reason}; attempt {attempt}/{p.max_attempts}"))
        out["self_check_claims"] = claims
        out["reflection"] = self._reflection(state["question"], attempt, reason, claims, [t for _, t in texts])
        return out

    @staticmethod
    def _done(decision: str, passed: bool | None, reason: str) -> dict[str, Any]:
        """The decision fields; no claims and no feedback (a failure adds both)."""
        return {SELF_CHECK_DECISION: decision, SELF_CHECK_PASSED: passed, SELF_CHECK_REASON: reason,
                SELF_CHECK_CLAIMS: [], REFLECTION: None}

    def _reflection(self, question: str, attempt: int, reason: str, claims: list[dict[str, Any]],
                    texts: list[str]) -> dict[str, Any]:
        """Feedback for the next rewrite: question words the evidence lacks, the unsupported claims."""
        from evalkit.nodes.grade import coverage, missing_atoms

        missing = missing_atoms(question, texts)
        folded = question.casefold()  # English stems ("compani") are not query words: keep words as written
        missing += [t for t in content_terms(question)
                    if t in folded and t not in missing and coverage([t], " ".join(texts)) == 0]
        bad = [c["claim"] for c in claims if c["verdict"] == "unsupported"]
        out = {"source": self.name, "attempt": attempt, "reason": f"self-check failed: {reason}",
               "missing_terms": missing[:6], "add_terms": [], "exclude_terms": [], "unsupported_claims": bad[:3]}
        if self.params.retry_rewrite == CONSERVATIVE:
            out["strategy"] = CONSERVATIVE  # query_rewrite retries with only the question's most certain terms
        return out
