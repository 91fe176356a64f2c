"""Document-level de-duplication of a passage ranking: the one function every retrieval node uses.

A fused ranking often holds several passages of one document (overlapping chunks, a
document that matches every query of a rewrite). ``dedupe: {by: document, keep: ...}``
on a retrieval node (``retrieve``, ``graph_local``, ``graph_global``, ``agent_scheduler``)
keeps one passage per document before the node's ``top_k`` cut, so the ranking (and the
evidence a generator is shown) holds more distinct documents:

- ``keep: best_rank``: each document's best-ranked passage, at its own rank; the others
  are dropped. The document order is that of the ranking's first occurrences, so a
  document-level metric (recall@k, hit@k: evalkit ranks documents by first occurrence)
  changes only through the ``top_k`` cut and through later nodes.
- ``keep: most_hits``: documents ordered by how many passages of theirs the ranking holds
  (a document many of whose passages matched is taken as more relevant), ties by the
  rank of their best passage; each document is represented by its best-ranked passage,
  with that passage's score (the scores are then not sorted).

The ``agent_scheduler``'s older ``dedupe_documents: true`` is ``keep: best_rank``.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import Field

from evalkit.graph.node import NodeParams
from evalkit.records import Hit


class Dedupe(NodeParams):
    """Keep one passage per document of a ranking (see :mod:`evalkit.nodes.dedupe`)."""

    by: Literal["document"] = Field(default="document",
                                    description="what counts as a duplicate: passages of the same document")
    keep: Literal["best_rank", "most_hits"] = Field(
        default="best_rank",
        description="best_rank: each document's best-ranked passage, at its rank; most_hits: documents ordered "
                    "by how many of their passages the ranking holds (ties by best rank), each represented by "
                    "its best-ranked passage")


def dedupe(hits: Sequence[Hit], spec: Dedupe | None) -> list[Hit]:
    """``hits`` with one passage per document as ``spec`` says (unchanged when ``spec`` is None)."""
    if spec is None:
        return list(hits)
    best: dict[str, Hit] = {}
    count: dict[str, int] = {}
    for h in hits:
        best.setdefault(h.doc_id, h)
        count[h.doc_id] = count.get(h.doc_id, 0) + 1
    order = list(best)  # documents by the rank of their best passage
    if spec.keep == "most_hits":
        rank = {d: i for i, d in enumerate(order)}
        order.sort(key=lambda d: (-count[d], rank[d]))
    return [best[d] for d in order]


def dedupe_by_document(hits: Sequence[Hit]) -> list[Hit]:
    """The best-ranked passage of each document, in ranking order (``keep: best_rank``)."""
    return dedupe(hits, Dedupe())
