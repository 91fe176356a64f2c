"""Stand-ins the tests share (importable as ``fakes``: pyproject puts tests/ on the path).

``BagOfWords`` replaces a bi-encoder where a test needs instant, deterministic vectors; the
real embedders are tested on their own in tests/models. ``ReverseRerank`` (node type
``test_reverse``) is a stand-in reranker whose final ranking is the retrieval ranking
reversed, so the two stages of a run differ in a known way; the real rerankers are tested
in tests/nodes. ``DOCS`` / ``QUESTIONS`` are the seven-document set the scoring and export
tests count their expected numbers by hand on.
"""
from __future__ import annotations

import hashlib
import re

import numpy as np

from evalkit.graph import Node, NodeParams, register_node
from evalkit.records import Hit

DOCS = [("doc-a", "Invoices", "Electronic invoices above 5000 need director approval."),
        ("doc-b", "Hotels", "Hotel allowance is 600 per night in tier one cities."),
        ("doc-c", "Laptops", "Broken laptops are repaired by IT within three days."),
        ("doc-d", "Errors", "Error E-4012 means the battery controller failed."),
        ("doc-e", "Retry", "retry.max_attempts defaults to 3 and timeout defaults to 30."),
        ("doc-f", "Leave", "Parents get ten days of leave after a birth."),
        ("doc-g", "Travel", "Travel hotel nights need an invoice for the allowance.")]
QUESTIONS = [("q1", "invoice approval above 5000", ["doc-a"], "single"),
             ("q2", "error E-4012 battery", ["doc-d"], "exact_term"),
             ("q3", "hotel allowance invoice per night", ["doc-b", "doc-g", "doc-e"], "multi_hop"),
             ("q4", "laptop repair days", ["doc-c"], "colloquial"),
             ("q5", "salary of the CEO", [], "unanswerable"),
             ("q6", "quantum chromodynamics", ["doc-c"], "single")]


class BagOfWords:
    """Hashed bag-of-words vectors (words and CJK characters), L2-normalised: deterministic and instant."""

    dim = 64

    def __init__(self, identity: str):
        self.identity = identity

    def _encode(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            for w in re.findall(r"[a-z0-9]+|[\u4e00-\u9fff]", t.lower()):
                out[i, int(hashlib.md5(w.encode()).hexdigest(), 16) % self.dim] += 1.0
            out[i, 0] += 0.1  # never a zero vector
        return out / np.linalg.norm(out, axis=1, keepdims=True)

    encode_queries = _encode
    encode_passages = _encode


class ReverseParams(NodeParams):
    pass


@register_node
class ReverseRerank(Node):
    """Test node: the final ranking is the retrieval ranking reversed (a stand-in reranker)."""

    type = "test_reverse"
    reads = ("retrieved",)
    writes = ("reranked", "rerank_scores")
    Params = ReverseParams

    def run(self, state):
        hits = list(reversed(state["retrieved"]))
        scores = [float(len(hits) - i) for i in range(len(hits))]
        return {"reranked": [Hit(h.id, h.doc_id, s) for h, s in zip(hits, scores, strict=True)],
                "rerank_scores": scores}
