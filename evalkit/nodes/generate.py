"""The ``generate`` and ``fallback`` nodes: an answer with citations, or an honest refusal.

``generate`` renders the evidence passages with stable ids (their document ids) and
scores, the user's original question, and an instruction to answer only from the
evidence, cite ids in square brackets, and say so when the evidence is insufficient.
It parses the citations: ids that were in the evidence become ``used_documents``; any
other id is an invalid citation. An answer that says the evidence is insufficient is
an abstention. Writes ``answer``, ``citations``, ``used_documents``,
``invalid_citations``, ``abstained``, ``answer_evidence`` (the passages shown, which the
judges check the answer against), ``generator`` and ``outcome`` (``answered`` or
``abstained``).

``fallback`` writes the fixed "no reliable evidence" answer with ``outcome:
fallback``, so a refusal is never mistaken for a real answer in the results.

YAML::

    generate:
      type: generate
      params:
        llm: {backend: local}                 # or extractive, or openai (base_url, model, api_key_env)
        evidence_from: evidence              # the guard's output; or reranked / retrieved
        evidence_k: 5
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import Field

from evalkit.graph.node import Node, NodeParams, register_node
from evalkit.graph.schema import (
    ABSTAINED,
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
from evalkit.llm.base import LLMSpec
from evalkit.llm.extractive import INSUFFICIENT_EVIDENCE as NO_EVIDENCE_ANSWER  # one wording everywhere

SYSTEM_PROMPT = (
    "You answer questions for employees using ONLY the evidence passages given. "
    "Cite the id of every passage you use in square brackets, e.g. [fin-004]. "
    "If the evidence does not contain the answer, reply exactly: "
    f"\"{NO_EVIDENCE_ANSWER}\" "
    "Answer in the language of the question, briefly."
)

_CITATION = re.compile(r"\[([A-Za-z0-9][A-Za-z0-9_.:#/-]{0,80})\]|【([A-Za-z0-9][A-Za-z0-9_.:#/-]{0,80})】")
_ABSTAIN = re.compile(
    r"无法回答|没有(?:足够|相关|可靠)?的?(?:信息|资料|证据)|未(?:提及|提供|包含)|不足以回答|"
    r"no reliable evidence|insufficient (?:evidence|information)|not enough (?:evidence|information)|"
    r"(?:does|do) not (?:contain|mention|provide)|cannot (?:answer|be answered)|can't answer|unable to answer",
    re.IGNORECASE)


def parse_citations(answer: str, valid_ids: set[str], doc_of: Mapping[str, str]) -> tuple[list[str], list[str]]:
    """Citations in order of first appearance: (valid document ids, invalid ids)."""
    valid: list[str] = []
    invalid: list[str] = []
    for m in _CITATION.finditer(answer):
        cid = m.group(1) or m.group(2)
        if cid in valid_ids:
            doc = doc_of.get(cid, cid)
            if doc not in valid:
                valid.append(doc)
        elif cid not in invalid:
            invalid.append(cid)
    return valid, invalid


def is_abstention(answer: str) -> bool:
    """True when an answer declines for lack of evidence (or is empty)."""
    return not answer.strip() or bool(_ABSTAIN.search(answer))


def render_evidence(passages: list[tuple[str, str, float]], max_chars: int) -> str:
    """``[doc-id] (score 0.912) text`` blocks, one per passage, in rank order."""
    blocks = []
    for doc_id, text, score in passages:
        body = text if len(text) <= max_chars else text[:max_chars] + "..."
        blocks.append(f"[{doc_id}] (score {score:.3f})\n{body}")
    return "\n\n".join(blocks)


class GenerateParams(NodeParams):
    llm: LLMSpec = LLMSpec(backend="local", max_tokens=160)
    evidence_from: Literal["evidence", "reranked", "retrieved"] = "evidence"
    evidence_k: int = Field(default=5, ge=1)
    max_chars_per_passage: int = Field(default=600, ge=50)
    system_prompt: str = SYSTEM_PROMPT


@register_node
class Generate(Node[GenerateParams]):
    type = "generate"
    role = Role.GENERATOR
    reads = (QUESTION, EVIDENCE)
    writes = (ANSWER, CITATIONS, USED_DOCUMENTS, INVALID_CITATIONS, ABSTAINED, ANSWER_EVIDENCE, GENERATOR, OUTCOME)
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
        if shown:
            user = (f"Evidence:\n{render_evidence(shown, p.max_chars_per_passage)}\n\n"
                    f"Question: {question}\nAnswer (cite ids like [{shown[0][0]}]):")
            reply = self.client.chat(user, system=p.system_prompt, question=question,
                                     evidence=tuple((d, t) for d, t, _ in shown))
            answer = reply.text.strip()
        else:
            answer = NO_EVIDENCE_ANSWER
        valid_ids = {d for d, _, _ in shown} | {h.id for h in hits}
        doc_of = {h.id: h.doc_id for h in hits}
        used, invalid = parse_citations(answer, valid_ids, doc_of)
        abstained = is_abstention(answer)
        return {ANSWER: answer, CITATIONS: used + invalid, USED_DOCUMENTS: used, INVALID_CITATIONS: invalid,
                ABSTAINED: abstained, ANSWER_EVIDENCE: hits, GENERATOR: self.client.identity,
                OUTCOME: OUTCOME_ABSTAINED if abstained else OUTCOME_ANSWERED}


class FallbackParams(NodeParams):
    answer: str = NO_EVIDENCE_ANSWER


@register_node
class Fallback(Node[FallbackParams]):
    type = "fallback"
    role = Role.GENERATOR
    reads = ()
    writes = (ANSWER, CITATIONS, USED_DOCUMENTS, INVALID_CITATIONS, ABSTAINED, ANSWER_EVIDENCE, OUTCOME)
    Params = FallbackParams

    def run(self, state: Mapping[str, Any]) -> dict[str, Any]:
        return {ANSWER: self.params.answer, CITATIONS: [], USED_DOCUMENTS: [], INVALID_CITATIONS: [],
                ABSTAINED: True, ANSWER_EVIDENCE: [], OUTCOME: OUTCOME_FALLBACK}
