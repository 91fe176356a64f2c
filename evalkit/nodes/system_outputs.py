"""The user's system's outputs as evalkit state: one converter for the ``http`` and ``python`` nodes.

See :mod:`evalkit.nodes.external` for what each output becomes. Declares the state fields
these nodes add to the schema (``http_call``, ``external_failure``, ``evidence_texts``).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from evalkit.errors import EvalkitError
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
    QUESTION,
    RERANKED,
    RETRIEVED,
    USED_DOCUMENTS,
    declare_field,
)
from evalkit.index.corpus import context_id
from evalkit.models import abstention as learned_abstention
from evalkit.records import Hit
from evalkit.runfile import first_ranks, parse_ranked

HTTP_CALL = declare_field("http_call", dict, "the http node's call: status, latency_ms, attempts, cache_hit, url "
                          "(secrets masked)")
EXTERNAL_FAILURE = declare_field("external_failure", list[dict], "every call to the user's system that failed "
                                 "after its retries and was recorded instead of raised (node, kind, attempts, "
                                 "status, message); each write appends one", "append")
EVIDENCE_TEXTS = declare_field("evidence_texts", dict[str, str], "texts of answer_evidence passages that an "
                               "external system returned itself (not corpus passages), by passage id")


def evidence_text(passage_id: str, texts: Mapping[str, str], passages: Any) -> str | None:
    """The text an answer's evidence passage showed: the one the system returned for it (``EVIDENCE_TEXTS``), else
    the corpus's; None when neither has it (no corpus). What the learned abstention stage's quote check and the
    judge read."""
    if passage_id in texts:
        return texts[passage_id]
    return None if passages is None else str(passages.text(passage_id))


RANKINGS = (RETRIEVED, RERANKED, EVIDENCE)
ANSWER_AUX = ("contexts", "citations")
ANSWER_FIELDS = (ANSWER, ABSTAINED, CITATIONS, USED_DOCUMENTS, INVALID_CITATIONS, ANSWER_EVIDENCE, EVIDENCE_TEXTS,
                 GENERATOR, OUTCOME)

class ExternalCallError(EvalkitError):
    """The user's system gave no usable output for this query (after retries): what, how often, where."""

    def __init__(self, message: str, kind: str, attempts: int = 1, status: int | None = None):
        super().__init__(message)
        self.kind, self.attempts, self.status = kind, attempts, status

    def record(self, node: str) -> dict[str, Any]:
        return {"node": node, "kind": self.kind, "attempts": self.attempts, "status": self.status,
                "message": str(self)}


# ---------------------------------------------------------------------------- outputs -> state


class PassageIds:
    """The variant's passage ids, their documents, and each document's first passage (id resolution)."""

    def __init__(self, passages: Any = None):
        self.passages = passages
        self.doc_of: dict[str, str] = {}
        self.first: dict[str, str] = {}
        if passages is not None:
            for u in passages.units:
                pid = passages.parent_of(u.id)
                self.doc_of.setdefault(u.id, u.doc_id)
                self.doc_of.setdefault(pid, u.doc_id)
                self.first.setdefault(u.doc_id, pid)

    def hits(self, value: Any, where: str) -> list[Hit]:
        """A ranking (``Hit``s, ids or ``{doc_id, score}``) as hits: passages kept, documents -> first passage."""
        if isinstance(value, (list, tuple)) and all(isinstance(h, Hit) for h in value):
            return list(value)
        try:
            ranked = first_ranks(parse_ranked(value, where, 0, where.rsplit(":", 1)[-1]))
        except EvalkitError as exc:
            raise ExternalCallError(str(exc), "bad_response") from None
        return [Hit(d, self.doc_of[d], s) if d in self.doc_of else Hit(self.first.get(d, d), d, s)
                for d, s in ranked]


def _passage_ids(resources: Any) -> PassageIds:
    return PassageIds(resources.passages() if resources is not None and hasattr(resources, "passages") else None)


def to_state(outputs: Mapping[str, Any], writes: Sequence[str], ids: PassageIds, generator: str, where: str,
             evidence_k: int = 5, upstream: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The user's outputs (module docstring) as the state fields ``writes``.

    ``upstream`` holds what the node read: an answer without contexts is judged against the
    ranking this node produced, else the one it read (``evidence``, ``reranked``, ``retrieved``).
    """
    state: dict[str, Any] = {}
    for f in writes:
        if f in ANSWER_FIELDS:
            continue
        value = outputs.get(f)
        if f in RANKINGS:
            state[f] = ids.hits(value if value is not None else [], f"{where}:{f}")
        elif f == "queries" and (not isinstance(value, list) or not value
                                 or not all(isinstance(x, str) and x.strip() for x in value)):
            raise ExternalCallError(f"{where}: 'queries' must be a non-empty list of strings, got {value!r:.80}",
                                    "bad_response")
        else:
            state[f] = value
    if ANSWER in writes:
        state.update(_answer(outputs, state, ids, generator, where, evidence_k, upstream or {}))
    return state


def _answer(outputs: Mapping[str, Any], produced: Mapping[str, Any], ids: PassageIds, generator: str, where: str,
            evidence_k: int, upstream: Mapping[str, Any]) -> dict[str, Any]:
    """The generator fields of an answer, its contexts and its citations."""
    from evalkit.nodes.generate import parse_citations

    answer = outputs.get("answer")
    if not isinstance(answer, str):
        raise ExternalCallError(f"{where}: 'answer' must be a string, got {answer!r:.80}", "bad_response")
    seen = {**upstream, **produced}
    ranking: list[Hit] = next((seen[f] for f in (EVIDENCE, RERANKED, RETRIEVED) if seen.get(f)), [])
    contexts = outputs.get("contexts")
    texts: dict[str, str] = {}
    if contexts is not None:
        if not isinstance(contexts, list):
            raise ExternalCallError(f"{where}: 'contexts' must be a list, got {contexts!r:.80}", "bad_response")
        evidence = []
        for i, c in enumerate(contexts):
            doc, text = (c.get("doc_id") or c.get("id"), c.get("text")) if isinstance(c, dict) else (None, c)
            if not isinstance(text, str):
                raise ExternalCallError(f"{where}: contexts[{i}] must be a text or {{doc_id, text}}", "bad_response")
            if doc is None and len(ranking) == len(contexts):
                doc = ranking[i].doc_id
            cid = context_id(text)
            texts[cid] = text
            evidence.append(Hit(cid, str(doc) if doc is not None else cid, 0.0))
    else:  # no texts given: the top of the ranking, whose texts the corpus holds
        evidence = [h for h in ranking if h.id in ids.doc_of][:evidence_k]
    valid = {h.id for h in evidence} | {h.doc_id for h in evidence}
    doc_of = {h.id: h.doc_id for h in evidence}
    given = outputs.get("citations")
    used: list[str]
    invalid: list[str]
    if given is not None:
        if not isinstance(given, list) or not all(isinstance(c, str) for c in given):
            raise ExternalCallError(f"{where}: 'citations' must be a list of ids", "bad_response")
        used = list(dict.fromkeys(str(doc_of.get(c, c)) for c in given if c in valid))
        invalid = list(dict.fromkeys(c for c in given if c not in valid))
    else:
        used, invalid = parse_citations(answer, [(h.id, h.doc_id) for h in evidence])
    shown = [t for t in (evidence_text(h.id, texts, ids.passages) for h in evidence) if t is not None]
    asked = seen.get(QUESTION)
    abstained = learned_abstention.detect(answer, model=learned_abstention.DEFAULT, evidence=shown,  # as evalkit
                                          question=asked if isinstance(asked, str) else None).abstained  # score reads it
    return {ANSWER: answer, ABSTAINED: abstained, CITATIONS: used + invalid, USED_DOCUMENTS: used,
            INVALID_CITATIONS: invalid, ANSWER_EVIDENCE: evidence, EVIDENCE_TEXTS: texts, GENERATOR: generator,
            OUTCOME: OUTCOME_ABSTAINED if abstained else OUTCOME_ANSWERED}
