"""The ``generate`` and ``fallback`` nodes: an answer with citations, or an honest refusal.

``generate`` renders the evidence passages (``citation_style: id``: by their document
ids, ``[fin-004]``; ``numbered``: ``[1]``, ``[2]``... in rank order) with their scores,
the user's original question, and an instruction to answer only from the evidence, cite
passages in square brackets, and say so when the evidence is insufficient. It parses the
citations in every form :mod:`evalkit.text.citations` reads (``[fin-004]``, ``[1]``,
``[1, 2]``, ``【1】``, ``（来源：fin-004）``...); a number names the passage shown at that
position, an id the passage or document with that id; references that resolve become
``used_documents``, the others are invalid citations. Whether the answer is a refusal is
decided by :func:`evalkit.models.abstention.detect` (the bilingual rules, the reply's
``finish_reason`` and this node's ``abstention`` patterns, then the learned stage named by
``abstention.model``, ``e5`` unless set to ``none``). Writes ``answer``,
``citations``, ``used_documents``, ``invalid_citations``, ``abstained``, ``abstention``
(the finding: reason and the words that decided it), ``answer_evidence`` (the passages
shown, in the order shown, which the judges check the answer against), ``generator`` and
``outcome`` (``answered`` or ``abstained``).

**Compressed evidence.** A passage whose id is in ``evidence_text`` (written by a
``compress`` node) is shown with that text instead of the whole passage. The judges still
check the answer against the whole passages (a superset of what was shown).

**Graph triples.** With ``graph_evidence: true`` the generator is also shown the graph
triples a ``graph_local`` node wrote (``graph_evidence``: ``A [relation] B (doc-id)``
lines; at most ``max_triples``; absent on a path without a graph node: passages only),
each rendered as ``[doc-id] A --relation--> B`` under "Graph facts" in the prompt a model
reads. A triple's source document is a valid citation (it joins ``used_documents``), and
the passage of that document the triple was most likely read from (one holding both names,
else one, else its first) joins ``answer_evidence``, so the judges can check claims taken
from the triple. The *quotable* evidence (``ChatRequest.evidence``, what the ``extractive``
backend answers from) holds the shown passages and those source passages, never the
relation lines: ``A --co_occurs--> B`` says only that two names share a passage, and quoted
as an answer it was a claim the judges found unsupported (faithfulness 0.5 on two demo
queries). An extractive generator quotes the source passage's sentence instead.

**Reference-only passages.** With ``reference_only: {min_score}`` or ``{min_share}``, shown
passages scoring below the threshold are labelled "reference only" in the prompt (the model
is told they are background), are left out of the quotable evidence (the ``extractive``
backend never quotes them) and are listed in ``evidence_tiers`` (see
``evalkit.nodes.reference_only``).

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
        abstention: {patterns: ["暂无该数据"], not_patterns: ["不提供住宿补贴"]}   # model: e5 adds the learned stage
        graph_evidence: true                 # optional: also show graph_local's triples
"""
from __future__ import annotations

import re
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
    EVIDENCE_TEXT,
    EVIDENCE_TIERS,
    GENERATOR,
    GRAPH_EVIDENCE,
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
from evalkit.llm.extractive import (
    INSUFFICIENT_EVIDENCE as NO_EVIDENCE_ANSWER,  # one wording everywhere
)
from evalkit.models import abstention as learned_abstention
from evalkit.nodes.reference_only import REFERENCE_NOTE, ReferenceOnly, tiers
from evalkit.records import Hit
from evalkit.text.abstention import compile_patterns, detect_abstention
from evalkit.text.citations import find_markers, resolve_all

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

    ``evidence`` = [(passage id, document id), ...] as shown; see :func:`evalkit.text.citations.resolve`.
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
    """True when an answer declines to answer (or is empty): :func:`evalkit.text.abstention.detect_abstention`."""
    return detect_abstention(answer).abstained


def render_evidence(passages: list[tuple[str, str, float]], max_chars: int, style: str = "id",
                    reference: Sequence[bool] = ()) -> str:
    """``[doc-id] (score 0.912) text`` blocks (``style="numbered"``: ``[1] (score ...)``), in rank order;
    a passage whose ``reference`` flag is set reads ``(score 0.120, reference only)``."""
    blocks = []
    for i, (doc_id, text, score) in enumerate(passages, start=1):
        body = text if len(text) <= max_chars else text[:max_chars] + "..."
        label = str(i) if style == "numbered" else doc_id
        note = ", reference only" if i <= len(reference) and reference[i - 1] else ""
        blocks.append(f"[{label}] (score {score:.3f}{note})\n{body}")
    return "\n\n".join(blocks)


class AbstentionParams(NodeParams):
    """Refusal wordings of your system (``patterns``) and answers that only look like refusals
    (``not_patterns``): Python regular expressions, case-insensitive, added to the defaults."""

    patterns: tuple[str, ...] = Field(default=(), description="regular expressions of your refusals "
                                      "(\"暂无该数据\")")
    not_patterns: tuple[str, ...] = Field(default=(), description="regular expressions of answers that only look "
                                          "like refusals or error messages (\"不提供住宿补贴\")")
    model: str = Field(default=learned_abstention.DEFAULT, description="the learned second stage "
                       "(evalkit.models.abstention: e5) on replies the rules call an answer; none turns it off")

    @field_validator("patterns", "not_patterns")
    @classmethod
    def _valid(cls, v: tuple[str, ...], info: Any) -> tuple[str, ...]:
        compile_patterns(v, f"abstention.{info.field_name}")
        return v

    @field_validator("model", mode="before")
    @classmethod
    def _known(cls, v: Any) -> str:
        return learned_abstention.config_name(v)


_TRIPLE = re.compile(r"^(?P<a>.+?) \[(?P<rel>[^\[\]]+)\] (?P<b>.+) \((?P<doc>[^()]+)\)$")


def parse_triples(lines: list[str]) -> list[tuple[str, str, str, str]]:
    """``(A, relation, B, doc-id)`` of each ``A [relation] B (doc-id)`` line with a known source, in order."""
    out = []
    for line in lines:
        m = _TRIPLE.match(str(line).strip())
        if m and m.group("doc") != "?":
            out.append((m.group("a"), m.group("rel"), m.group("b"), m.group("doc")))
    return out


def triple_text(a: str, rel: str, b: str) -> str:
    """How a triple reads to the generator (no square brackets: those are citations)."""
    return f"{a} --{rel}--> {b}"


def quotable(shown: Sequence[tuple[str, str, float]], sources: Sequence[tuple[str, str]],
             reference: Sequence[bool] = ()) -> tuple[tuple[str, str], ...]:
    """The (doc id, text) pairs a generator may quote: the passages shown but those flagged reference only in
    ``reference``, then the source passages of the graph triples (not the ``A --relation--> B`` lines
    themselves, which are no statements)."""
    flags = list(reference) + [False] * (len(shown) - len(reference))
    return tuple((d, t) for (d, t, _), ref in zip(shown, flags) if not ref) + tuple(sources)


class GenerateParams(NodeParams):
    llm: LLMSpec = Field(default=LLMSpec(backend="local", max_tokens=160),
                         description="the model: {backend: local | extractive | openai, ...} (docs/llm.md)")
    evidence_from: Literal["evidence", "reranked", "retrieved"] = Field(
        default="evidence", description="the ranking whose first evidence_k passages are shown")
    evidence_k: int = Field(default=5, ge=1, description="passages shown to the model")
    max_chars_per_passage: int = Field(default=600, ge=50, description="a longer passage is cut here in the prompt")
    citation_style: Literal["id", "numbered"] = Field(
        default="id", description="how passages are labelled and cited: [doc-id], or [1], [2]... in rank order")
    system_prompt: str | None = Field(default=None, description="the model's instructions (default: the prompt "
                                      "of the citation style)")
    abstention: AbstentionParams = Field(default=AbstentionParams(), description="your system's refusal "
                                         "wordings (patterns) and look-alikes that are answers (not_patterns)")
    graph_evidence: bool = Field(default=False, description="also show the graph triples of graph_evidence "
                                 "(when a graph node wrote them), citable by their source document")
    max_triples: int = Field(default=10, ge=1, description="graph triples shown at most")
    reference_only: ReferenceOnly | None = Field(
        default=None, description="shown passages scoring below min_score, or below min_share of the top score, "
        "are background: labelled in the prompt, never quoted, listed in evidence_tiers")


@register_node
class Generate(Node[GenerateParams]):
    type = "generate"
    role = Role.GENERATOR
    reads = (QUESTION, EVIDENCE)
    optional_reads = (EVIDENCE_TEXT,)  # a compress node's texts; GRAPH_EVIDENCE too with graph_evidence: true
    writes = (ANSWER, CITATIONS, USED_DOCUMENTS, INVALID_CITATIONS, ABSTAINED, ABSTENTION, ANSWER_EVIDENCE,
              GENERATOR, OUTCOME)
    Params = GenerateParams

    @classmethod
    def contract(cls, params: GenerateParams) -> Contract:
        base = super().contract(params)
        evidence = {"evidence": EVIDENCE, "reranked": RERANKED, "retrieved": RETRIEVED}[params.evidence_from]
        optional = base.optional_reads | ({GRAPH_EVIDENCE} if params.graph_evidence else set())
        writes = base.writes | ({EVIDENCE_TIERS} if params.reference_only is not None else set())
        return Contract(frozenset({QUESTION, evidence}), optional, writes, base.optional_writes)

    def __init__(self, name: str, params: GenerateParams, resources: Any = None):
        super().__init__(name, params, resources)
        self.passages = resources.passages()
        self.client = self.llm_client(params.llm, "generate")
        self._doc_passages: dict[str, list[str]] | None = None

    def run(self, state: Mapping[str, Any]) -> dict[str, Any]:
        p = self.params
        hits = list(state[p.evidence_from])[: p.evidence_k]
        texts = state.get(EVIDENCE_TEXT) or {}
        shown = [(h.doc_id, texts[h.id] if h.id in texts else self.passages.text(h.id), float(h.score)) for h in hits]
        triples = parse_triples(list(state.get(GRAPH_EVIDENCE) or []))[: p.max_triples] if p.graph_evidence else []
        facts = [(doc, triple_text(a, rel, b)) for a, rel, b, doc in triples]
        sources = self._triple_sources(triples, hits)
        tiered = tiers(hits, p.reference_only) if p.reference_only is not None else []
        reference = [t.reference_only for t in tiered]
        question = state[QUESTION]
        finish_reason = None
        if shown or facts:
            rendered = render_evidence(shown, p.max_chars_per_passage, p.citation_style, reference)
            note = f"{REFERENCE_NOTE}\n\n" if any(reference) else ""
            blocks = [f"{note}Evidence:\n{rendered}"] if shown else []
            if facts:
                blocks.append("Graph facts (each from the document in brackets):\n"
                              + "\n".join(f"[{doc}] {fact}" for doc, fact in facts))
            example = ("1" if p.citation_style == "numbered" else shown[0][0]) if shown else facts[0][0]
            user = "\n\n".join(blocks) + f"\n\nQuestion: {question}\nAnswer (cite like [{example}]):"
            reply = self.client.chat(user, system=p.system_prompt or PROMPTS[p.citation_style], question=question,
                                     evidence=quotable(shown, [(h.doc_id, self.passages.text(h.id))
                                                               for h in sources], reference))
            answer, finish_reason = reply.text.strip(), reply.finish_reason or None
        else:
            answer = NO_EVIDENCE_ANSWER
        # passages by position or id, then the triples' source documents (after them: positions unchanged)
        cited = [(h.id, h.doc_id) for h in hits] + [(doc, doc) for doc, _ in facts]
        used, invalid = parse_citations(answer, cited)
        quoted = [text for _, text, _ in shown] + [self.passages.text(h.id) for h in sources] + [f for _, f in facts]
        finding = learned_abstention.detect(answer, finish_reason=finish_reason, extra_patterns=p.abstention.patterns,
                                            not_patterns=p.abstention.not_patterns, model=p.abstention.model,
                                            evidence=quoted, question=question)
        out: dict[str, Any] = {
            ANSWER: answer, CITATIONS: used + invalid, USED_DOCUMENTS: used, INVALID_CITATIONS: invalid,
            ABSTAINED: finding.abstained, ABSTENTION: {**finding.to_dict(), "finish_reason": finish_reason},
            ANSWER_EVIDENCE: hits + sources, GENERATOR: self.client.identity,
            OUTCOME: OUTCOME_ABSTAINED if finding.abstained else OUTCOME_ANSWERED}
        if p.reference_only is not None:
            out[EVIDENCE_TIERS] = [t.to_dict() for t in tiered]
        return out

    def _triple_sources(self, triples: list[tuple[str, str, str, str]], hits: list[Hit]) -> list[Hit]:
        """For each triple, the passage of its source document it was most likely read from (one holding
        both names, else one of them, else the document's first passage), unless already among ``hits``."""
        if not triples:
            return []
        if self._doc_passages is None:
            by_doc: dict[str, list[str]] = {}
            for u in self.passages.units:
                pid = self.passages.parent_of(u.id)
                if pid not in by_doc.setdefault(u.doc_id, []):
                    by_doc[u.doc_id].append(pid)
            self._doc_passages = by_doc
        seen = {h.id for h in hits}
        out: list[Hit] = []
        for a, _, b, doc in triples:
            pids = self._doc_passages.get(doc, [])
            if not pids:
                continue
            texts = [self.passages.text(pid) for pid in pids]
            both = [pid for pid, t in zip(pids, texts) if a in t and b in t]
            either = [pid for pid, t in zip(pids, texts) if a in t or b in t]
            pid = (both or either or pids)[0]
            if pid not in seen:
                seen.add(pid)
                out.append(Hit(pid, doc, 0.0))
        return out


class FallbackParams(NodeParams):
    answer: str = Field(default=NO_EVIDENCE_ANSWER, description="the fixed refusal written as the answer")


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
