"""The ``answer_each`` node: answer every sub-question from its own evidence, then compose one answer.

Decomposition happens in ``query_rewrite`` (``sub_queries``: one per compared item, offline by
``split``; one per hop with an ``llm``), and ``retrieve`` searches every sub-query and fuses them
into one ranking. ``generate`` then answers the whole question from the top of that fused
ranking, where one item of a comparison can crowd out the other. ``answer_each`` is the planner's
"answer each, then combine" step instead:

1. **Evidence per sub-question**: the first ``pool_k`` passages of ``pool_from`` (the fused
   ranking holds every sub-query's hits) are ordered by ``embedder`` cosine with the
   sub-question (ties: the pool's order) and its first ``evidence_k`` are its evidence.
2. **Sub-answers**: the ``generate`` node's own logic (prompt, citations by document id,
   abstention) answers the sub-question from that evidence with ``llm`` (default: the
   ``extractive`` backend, offline). An LLM that fails answers that sub-question
   extractively instead, recorded in ``llm_fallback``.
3. **Compose**: with the ``extractive`` backend, the sub-answers that did not abstain, one
   per line, in the sub-questions' order (``compose: join``); with a model, one more call
   writes the final answer from the sub-answers, keeping their citations (``compose: llm``).
   A compose call that fails, or whose reply cites none of the sub-answers' documents (an
   answer of garbage), is replaced by the join (``compose: join (llm failed)``,
   ``llm_fallback``). Every sub-answer abstaining gives the refusal. Whether the final answer
   abstained is read as ``generate`` reads it with its defaults (the rules, then the learned
   stage: :mod:`evalkit.models.abstention`; an eval set's ``model: none`` turns it off).

Without sub-queries (a question that was not decomposed) the node is exactly ``generate``
over the first ``evidence_k`` of ``pool_from``: same answer, same fields (``compose: single``).

Writes the ``generate`` fields (``answer``, ``citations``, ``used_documents``,
``invalid_citations``, ``abstained``, ``abstention``, ``answer_evidence`` = every step's
evidence, ``generator``, ``outcome``) and ``plan``: ``{"compose": ..., "steps": [{"sub_question",
"evidence" (passage ids), "doc_ids", "answer", "used_documents", "abstained", "by"}]}``.

YAML::

    answer_each:
      type: answer_each
      params: {pool_from: retrieved, pool_k: 20, evidence_k: 2, llm: {backend: extractive}}
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import Field

from evalkit.graph.node import Node, NodeParams, register_node
from evalkit.graph.schema import (
    ABSTAINED,
    ABSTENTION,
    ANSWER,
    ANSWER_EVIDENCE,
    ATTEMPT,
    CITATIONS,
    EVIDENCE,
    GENERATOR,
    INVALID_CITATIONS,
    LLM_FALLBACK,
    OUTCOME,
    OUTCOME_ABSTAINED,
    OUTCOME_ANSWERED,
    QUESTION,
    RERANKED,
    RETRIEVED,
    SUB_QUERIES,
    USED_DOCUMENTS,
    Contract,
    Role,
    declare_field,
)
from evalkit.llm.base import LLMError, LLMSpec
from evalkit.llm.extractive import INSUFFICIENT_EVIDENCE
from evalkit.models import abstention as learned_abstention
from evalkit.models.embedders import ModelSpec
from evalkit.nodes.generate import Generate, GenerateParams, parse_citations
from evalkit.nodes.rewrite import fallback_record
from evalkit.records import Hit

PLAN = declare_field("plan", dict, "answer_each's plan: how the answer was composed and, per sub-question, its "
                     "evidence ids, documents, sub-answer, citations and who answered it")

COMPOSE_PROMPT = (
    "You combine the answers to the parts of a question into one answer to the whole question. "
    "Use ONLY the partial answers given; keep every citation in square brackets exactly as written, "
    "e.g. [fin-004]. Answer in the language of the question, briefly."
)
_POOLS = {"retrieved": RETRIEVED, "reranked": RERANKED, "evidence": EVIDENCE}


class AnswerEachParams(NodeParams):
    pool_from: Literal["retrieved", "reranked", "evidence"] = Field(
        default="retrieved", description="the ranking the sub-questions' evidence is chosen from")
    pool_k: int = Field(default=20, ge=1, description="passages of the ranking considered for each sub-question")
    evidence_k: int = Field(default=2, ge=1, description="passages each sub-question is answered from")
    embedder: str | ModelSpec = Field(default="e5", description="orders the pool by cosine with each "
                                      "sub-question")
    llm: LLMSpec = Field(default=LLMSpec(backend="extractive"), description="answers each sub-question and, "
                         "unless extractive, composes the final answer (docs/llm.md)")
    max_chars_per_passage: int = Field(default=600, ge=50, description="a longer passage is cut here in a prompt")
    compose_prompt: str = Field(default=COMPOSE_PROMPT, description="the composing model's instructions")


@register_node
class AnswerEach(Node[AnswerEachParams]):
    type = "answer_each"
    role = Role.GENERATOR
    reads = (QUESTION, RETRIEVED)
    optional_reads = (SUB_QUERIES, ATTEMPT)  # absent without a rewriter: the question is its only step
    writes = (ANSWER, CITATIONS, USED_DOCUMENTS, INVALID_CITATIONS, ABSTAINED, ABSTENTION, ANSWER_EVIDENCE,
              GENERATOR, OUTCOME, PLAN)
    optional_writes = (LLM_FALLBACK,)
    Params = AnswerEachParams

    @classmethod
    def contract(cls, params: AnswerEachParams) -> Contract:
        base = super().contract(params)
        return Contract(frozenset({QUESTION, _POOLS[params.pool_from]}), base.optional_reads, base.writes,
                        base.optional_writes)

    def __init__(self, name: str, params: AnswerEachParams, resources: Any = None):
        super().__init__(name, params, resources)
        self.passages = resources.passages()
        self.embedder = resources.embedder(ModelSpec.of(params.embedder))
        self._answer = Generate(f"{name}.answer", self._generate_params(params.llm), resources)
        self._extractive = params.llm.backend == "extractive"
        self._offline = None if self._extractive else Generate(  # answers a sub-question when the model fails
            f"{name}.offline", self._generate_params(LLMSpec(backend="extractive")), resources)
        self.client = None if self._extractive else self.llm_client(params.llm, "compose")

    def _generate_params(self, llm: LLMSpec) -> GenerateParams:
        return GenerateParams(llm=llm, evidence_from="evidence", evidence_k=self.params.evidence_k,
                              max_chars_per_passage=self.params.max_chars_per_passage)

    def run(self, state: Mapping[str, Any]) -> dict[str, Any]:
        p = self.params
        question = state[QUESTION]
        pool = list(state[_POOLS[p.pool_from]])[: p.pool_k]
        subs = [s for s in state.get(SUB_QUERIES) or [] if isinstance(s, str) and s.strip()]
        fallbacks: list[dict[str, Any]] = []
        attempt = int(state.get(ATTEMPT) or 0) or 1
        if not subs:  # not decomposed: generate over the pool's top, unchanged
            out, by = self._sub_answer(question, pool[: p.evidence_k], fallbacks)
            steps = [self._step(question, pool[: p.evidence_k], out, by)]
            return self._finish(out, steps, "single", fallbacks, attempt)
        steps, outs = [], []
        for sub, hits in zip(subs, self.evidence_for(subs, pool)):
            out, by = self._sub_answer(sub, hits, fallbacks)
            steps.append(self._step(sub, hits, out, by))
            outs.append(out)
        evidence = _union([h for o in outs for h in o[ANSWER_EVIDENCE]])
        answer, how = self._compose(question, subs, outs, fallbacks)
        used, invalid = parse_citations(answer, [(h.id, h.doc_id) for h in evidence])
        finding = learned_abstention.detect(answer, model=learned_abstention.DEFAULT,
                                            evidence=[self.passages.text(h.id) for h in evidence], question=question)
        out = {ANSWER: answer, CITATIONS: used + invalid, USED_DOCUMENTS: used, INVALID_CITATIONS: invalid,
               ABSTAINED: finding.abstained, ABSTENTION: {**finding.to_dict(), "finish_reason": None},
               ANSWER_EVIDENCE: evidence, GENERATOR: outs[0][GENERATOR],
               OUTCOME: OUTCOME_ABSTAINED if finding.abstained else OUTCOME_ANSWERED}
        return self._finish(out, steps, how, fallbacks, attempt)

    def evidence_for(self, subs: Sequence[str], pool: Sequence[Hit]) -> list[list[Hit]]:
        """Each sub-question's evidence: the pool's ``evidence_k`` passages of highest cosine with it
        (ties: the pool's order), each with its cosine as score."""
        if not pool:
            return [[] for _ in subs]
        vecs = self.embedder.encode_passages([self.passages.text(h.id) for h in pool])
        out = []
        for q in self.embedder.encode_queries(list(subs)):
            cos = [float(x) for x in vecs @ q]
            order = sorted(range(len(pool)), key=lambda i: (-cos[i], i))[: self.params.evidence_k]
            out.append([Hit(pool[i].id, pool[i].doc_id, round(cos[i], 6)) for i in order])
        return out

    def _sub_answer(self, question: str, hits: list[Hit], fallbacks: list[dict[str, Any]]
                    ) -> tuple[dict[str, Any], str]:
        """The generate fields for one (sub-)question, and who answered: the llm, or ``extractive (llm
        failed)`` when the model could not be used."""
        state: dict[str, Any] = {QUESTION: question, EVIDENCE: hits}
        try:
            return self._answer.run(state), self.params.llm.backend
        except Exception as exc:
            if self._extractive:
                raise
            fallbacks.append(fallback_record(self.name, 0, exc))  # the attempt: see _finish
            assert self._offline is not None  # built with every non-extractive llm
            return self._offline.run(state), "extractive (llm failed)"

    def _compose(self, question: str, subs: Sequence[str], outs: Sequence[Mapping[str, Any]],
                 fallbacks: list[dict[str, Any]]) -> tuple[str, str]:
        """The final answer and how it was made (``join``, ``llm``, ``join (llm failed)``)."""
        answered = [(s, o) for s, o in zip(subs, outs) if not o[ABSTAINED]]
        if not answered:
            return INSUFFICIENT_EVIDENCE, "none answered"
        joined = "\n".join(o[ANSWER] for _, o in answered)
        if self.client is None:
            return joined, "join"
        parts = "\n".join(f"Part {i}: {s}\nAnswer: {o[ANSWER]}" for i, (s, o) in enumerate(answered, start=1))
        try:
            reply = self.client.chat(f"Question: {question}\n\n{parts}\n\nAnswer to the whole question:",
                                     system=self.params.compose_prompt, question=question)
            text = reply.text.strip()
            cited = {d for _, o in answered for d in o[USED_DOCUMENTS]}
            if not text or (cited and not cited & set(parse_citations(text, [(d, d) for d in cited])[0])):
                raise LLMError(f"compose reply cites none of the sub-answers' documents: {text[:120]!r}",
                               kind="uncited")
            return text, "llm"
        except Exception as exc:  # noqa: BLE001 - degrade to the join, never crash
            fallbacks.append(fallback_record(self.name, 0, exc))  # the attempt: see _finish
            return joined, "join (llm failed)"

    @staticmethod
    def _step(question: str, hits: Sequence[Hit], out: Mapping[str, Any], by: str) -> dict[str, Any]:
        return {"sub_question": question, "evidence": [h.id for h in hits],
                "doc_ids": list(dict.fromkeys(h.doc_id for h in hits)), "answer": out[ANSWER],
                "used_documents": list(out[USED_DOCUMENTS]), "abstained": bool(out[ABSTAINED]), "by": by}

    def _finish(self, out: dict[str, Any], steps: list[dict[str, Any]], how: str,
                fallbacks: list[dict[str, Any]], attempt: int) -> dict[str, Any]:
        """The answer fields, the plan and, when a model call failed, one ``llm_fallback`` record (the first
        failure, and how many calls failed)."""
        out = {**out, PLAN: {"compose": how, "steps": steps}}
        if fallbacks:
            out[LLM_FALLBACK] = {**fallbacks[0], "attempt": attempt, "failed_calls": len(fallbacks)}
        return out


def _union(hits: Sequence[Hit]) -> list[Hit]:
    """``hits`` without repeated passages, first occurrence kept."""
    seen: set[str] = set()
    out = []
    for h in hits:
        if h.id not in seen:
            seen.add(h.id)
            out.append(h)
    return out
