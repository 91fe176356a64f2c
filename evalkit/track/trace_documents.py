"""What an evalkit MLflow trace holds for scorers: the ``documents`` RETRIEVER span and its bounds.

:mod:`evalkit.track.traces` adds one span of type RETRIEVER, ``documents``, to each query's
trace: the documents the answer was written from, in the form MLflow's scorers and
:mod:`evalkit.integrations.mlflow` read (``[{id, page_content, metadata}]``). The bounds below
keep a trace small (on the demo slice, 16.5 KB per trace instead of 12.5 KB).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from evalkit.graph.events import event_role
from evalkit.graph.schema import Role
from evalkit.records import QueryResult
from evalkit.track.secrets import mask_text

TEXT_CHARS = 4000           # characters kept of the question (request) and the answer (response)
PASSAGE_CHARS = 2000        # characters kept of each passage text in the documents span
EVIDENCE_DOCS = 20          # passages listed in the documents span (evidence, or the ranking's top documents)
DOCUMENTS = "documents"     # name of the RETRIEVER span holding the documents
EXPECTED_IDS = "expected_document_ids"  # the Expectation holding the gold ids (evalkit.integrations.mlflow reads it)
__all__ = ["DOCUMENTS", "EVIDENCE_DOCS", "EXPECTED_IDS", "PASSAGE_CHARS", "TEXT_CHARS", "documents_at",
           "documents_of"]


def documents_of(result: QueryResult, secrets: Sequence[str] = ()) -> tuple[list[dict[str, Any]], str]:
    """The documents of a query's ``documents`` span, and which they are (``evidence`` or ``ranking``).

    A query that generated an answer: the passages the generator was shown (its evidence, at
    most :data:`EVIDENCE_DOCS`), each ``{id: document id, page_content: passage text (first
    PASSAGE_CHARS characters), metadata: {doc_id, chunk_id, score, chars}}``: the
    question, the answer and these texts are what the judge read. A retrieval-only query:
    the final ranking's first EVIDENCE_DOCS documents, ids only (no passage text is kept).
    Each text is masked (``secrets``, :func:`mask_text`) before it is cut, so a cut never
    keeps the start of a secret the mask would have caught whole.
    """
    generation = result.generation or {}
    if result.generation is not None:
        texts = generation.get("evidence_text") or []
        docs = []
        for i, e in enumerate((generation.get("evidence") or [])[:EVIDENCE_DOCS]):
            doc: dict[str, Any] = {"id": str(e[1]), "metadata": {"doc_id": str(e[1]), "chunk_id": str(e[0]),
                                                                  "score": e[2]}}
            if i < len(texts) and isinstance(texts[i], str):
                text = mask_text(texts[i], secrets)
                doc["page_content"] = text[:PASSAGE_CHARS]
                doc["metadata"]["chars"] = len(text)
            docs.append(doc)
        return docs, "evidence"
    ranking = result.reranked or result.retrieved
    return [{"id": str(d["doc_id"]), "metadata": {"doc_id": str(d["doc_id"]), "rank": i + 1, "score": d.get("score")}}
            for i, d in enumerate(ranking[:EVIDENCE_DOCS])], "ranking"


def documents_at(events: Sequence[dict[str, Any]], times: Sequence[tuple[int, int]]) -> int:
    """When the documents were handed on: the start of the first generator step, else the end of the last step."""
    for e, (start, _) in zip(events, times, strict=True):
        if event_role(e) == Role.GENERATOR:
            return start
    return max(end for _, end in times)
