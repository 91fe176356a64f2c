"""The ``generate`` and ``fallback`` nodes: an answer with citations, or an honest refusal.

``generate`` renders the evidence passages (``citation_style: id``: by their document
ids, ``[fin-004]``; ``numbered``: ``[1]``, ``[2]``... in rank order) with their scores,
the user's original question, and an instruction to answer only from the evidence, cite
passages in square brackets, and say so when the evidence is insufficient. It parses the
citations in every form :mod:`evalkit.judges.citations` reads (``[fin-004]``, ``[1]``,
``[1, 2]``, ``【1】``, ``（来源：fin-004）``...); a number names the passage shown at that
position, an id the passage or document with that id; references that resolve become
``used_documents``, the others are invalid citations. Whether the answer is a refusal is
decided by :func:`evalkit.judges.abstention.detect_abstention` (bilingual defaults, the
reply's ``finish_reason``, and this node's ``abstention`` patterns). Writes ``answer``,
``citations``, ``used_documents``, ``invalid_citations``, ``abstained``, ``abstention``
(the finding: reason and the words that decided it), ``answer_evidence`` (the passages
shown, in the order shown, which the judges check the answer against), ``generator`` and
``outcome`` (``answered`` or ``abstained``).

``fallback`` writes the fixed "no reliable evidence" answer with ``outcome:
fallback``, so a refusal is never mistaken for a real answer in the results.

YAML::

    generate:
      type: generate
      params:
        llm: {backend: local}                 # or extractive, or openai (base_url, model, api_key_env)
        evidence_from: evidence              # the guard's output; or reranked / retrieved
        evidence_k: 5
        citation_style: numbered             # or id (default)
        abstention: {patterns: ["暂无该数据"], not_patterns: ["不提供住宿补贴"]}
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import Field, field_validator

from evalkit.graph.node import Node, NodeParams, register_node
from evalkit.graph.schema import (
    ABSTAINED,
    ABSTENTION,
    ANSWER,
    ANSWER_EVIDENCE,
    CITATIONS,
    EVIDENCE,
    GENERATOR,
    INVALID_CITATIONS,
    OUTCOME,
    OUTCOME_ABSTAINED,
    OUTCOME_ANSWERED,
    OUTCOME_FALLBACK,
    QUESTION,
    RERANKED,
    RETRIEVED,
    USED_DOCUMENTS,
    Contract,
    Role,
)
from evalkit.judges.abstention import compile_patterns, detect_abstention
from evalkit.judges.citations import find_markers, resolve_all
from evalkit.llm.base import LLMSpec
from evalkit.llm.extractive import INSUFFICIENT_EVIDENCE as NO_EVIDENCE_ANSWER  # one wording everywhere

SYSTEM_PROMPT = (
    "You answer questions for employees using ONLY the evidence passages given. "
    "Cite the id of every passage you use in square brackets, e.g. [fin-004]. "
    "If the evidence does not contain the answer, reply exactly: "
    f"\"{NO_EVIDENCE_ANSWER}\" "
    "Answer in the language of the question, briefly."
)
SYSTEM_PROMPT_NUMBERED = (
    "You answer questions for employees using ONLY the evidence passages given. "
    "Cite the number of every passage you use in square brackets, e.g. [1] or [1][3]. "
    "If the evidence does not contain the answer, reply exactly: "
    f"\"{NO_EVIDENCE_ANSWER}\" "
    "Answer in the language of the question, briefly."
)
PROMPTS = {"id": SYSTEM_PROMPT, "numbered": SYSTEM_PROMPT_NUMBERED}


def parse_citations(answer: str, evidence: Sequence[tuple[str, str]]) -> tuple[list[str], list[str]]:
    """Citations in order of first appearance: (valid document ids, invalid references).

    ``evidence`` = [(passage id, document id), ...] as shown; see :func:`evalkit.judges.citations.resolve`.
    """
    valid: list[str] = []
    invalid: list[str] = []
    for mk in find_markers(answer):
        for r in resolve_all(mk.refs, evidence):
            if r.valid:
                if r.doc_id not in valid:
                    valid.append(str(r.doc_id))
            elif r.ref not in invalid:
                invalid.append(r.ref)
    return valid, invalid


def is_abstention(answer: str) -> bool:
    """True when an answer declines to answer (or is empty): :func:`evalkit.judges.abstention.detect_abstention`."""
    return detect_abstention(answer).abstained


def render_evidence(passages: list[tuple[str, str, float]], max_chars: int, style: str = "id") -> str:
    """``[doc-id] (score 0.912) text`` blocks (``style="numbered"``: ``[1] (score ...)``), in rank order."""
    blocks = []
    for i, (doc_id, text, score) in enumerate(passages, start=1):
        body = text if len(text) <= max_chars else text[:max_chars] + "..."
        label = str(i) if style == "numbered" else doc_id
        blocks.append(f"[{label}] (score {score:.3f})\n{body}")
    return "\n\n".join(blocks)


class AbstentionParams(NodeParams):
    """Refusal wordings of your system (``patterns``) and answers that only look like refusals
    (``not_patterns``): Python regular expressions, case-insensitive, added to the defaults."""

    patterns: tuple[str, ...] = ()
    not_patterns: tuple[str, ...] = ()

    @field_validator("patterns", "not_patterns")
    @classmethod
    def _valid(cls, v: tuple[str, ...], info: Any) -> tuple[str, ...]:
        compile_patterns(v, f"abstention.{info.field_name}")
        return v


class GenerateParams(NodeParams):
    llm: LLMSpec = LLMSpec(backend="local", max_tokens=160)
    evidence_from: Literal["evidence", "reranked", "retrieved"] = "evidence"
    evidence_k: int = Field(default=5, ge=1)
    max_chars_per_passage: int = Field(default=600, ge=50)
    citation_style: Literal["id", "numbered"] = "id"
    system_prompt: str | None = None  # default: the prompt of the citation style (SYSTEM_PROMPT / _NUMBERED)
    abstention: AbstentionParams = AbstentionParams()


@register_node
class Generate(Node[GenerateParams]):
    type = "generate"
    role = Role.GENERATOR
    reads = (QUESTION, EVIDENCE)
    writes = (ANSWER, CITATIONS, USED_DOCUMENTS, INVALID_CITATIONS, ABSTAINED, ABSTENTION, ANSWER_EVIDENCE,
              GENERATOR, OUTCOME)
    Params = GenerateParams

    @classmethod
    def contract(cls, params: GenerateParams) -> Contract:
        base = super().contract(params)
        evidence = {"evidence": EVIDENCE, "reranked": RERANKED, "retrieved": RETRIEVED}[params.evidence_from]
        return Contract(frozenset({QUESTION, evidence}), base.optional_reads, base.writes, base.optional_writes)

    def __init__(self, name: str, params: GenerateParams, resources: Any = None):
        super().__init__(name, params, resources)
        self.passages = resources.passages()
        self.client = self.llm_client(params.llm, "generate")

    def run(self, state: Mapping[str, Any]) -> dict[str, Any]:
        p = self.params
        hits = list(state[p.evidence_from])[: p.evidence_k]
        shown = [(h.doc_id, self.passages.text(h.id), float(h.score)) for h in hits]
        question = state[QUESTION]
        finish_reason = None
        if shown:
            example = "1" if p.citation_style == "numbered" else shown[0][0]
            user = (f"Evidence:\n{render_evidence(shown, p.max_chars_per_passage, p.citation_style)}\n\n"
                    f"Question: {question}\nAnswer (cite like [{example}]):")
            reply = self.client.chat(user, system=p.system_prompt or PROMPTS[p.citation_style], question=question,
                                     evidence=tuple((d, t) for d, t, _ in shown))
            answer, finish_reason = reply.text.strip(), reply.finish_reason or None
        else:
            answer = NO_EVIDENCE_ANSWER
        used, invalid = parse_citations(answer, [(h.id, h.doc_id) for h in hits])
        finding = detect_abstention(answer, finish_reason=finish_reason, extra_patterns=p.abstention.patterns,
                                    not_patterns=p.abstention.not_patterns)
        return {ANSWER: answer, CITATIONS: used + invalid, USED_DOCUMENTS: used, INVALID_CITATIONS: invalid,
                ABSTAINED: finding.abstained, ABSTENTION: {**finding.to_dict(), "finish_reason": finish_reason},
                ANSWER_EVIDENCE: hits, GENERATOR: self.client.identity,
                OUTCOME: OUTCOME_ABSTAINED if finding.abstained else OUTCOME_ANSWERED}


class FallbackParams(NodeParams):
    answer: str = NO_EVIDENCE_ANSWER


@register_node
class Fallback(Node[FallbackParams]):
    type = "fallback"
    role = Role.GENERATOR
    reads = ()
    writes = (ANSWER, CITATIONS, USED_DOCUMENTS, INVALID_CITATIONS, ABSTAINED, ABSTENTION, ANSWER_EVIDENCE, OUTCOME)
    Params = FallbackParams

    def run(self, state: Mapping[str, Any]) -> dict[str, Any]:
        return {ANSWER: self.params.answer, CITATIONS: [], USED_DOCUMENTS: [], INVALID_CITATIONS: [],
                ABSTAINED: True, ABSTENTION: {"abstained": True, "reason": "fallback", "matched": ""},
                ANSWER_EVIDENCE: [], OUTCOME: OUTCOME_FALLBACK}
