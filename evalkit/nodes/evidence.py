"""Ranking transforms between retrieval and generation: ``mmr`` (diversity) and ``reorder`` (lost in the middle).

Both read one ranking field (``field``: ``retrieved``, ``reranked`` or ``evidence``) and
write the same field, reordered; no hit is dropped and every hit keeps its score, so a
guard's threshold still reads the scores it was calibrated on (on ``reranked``, the node
also rewrites ``rerank_scores`` in the new order). Metrics read the new order: an ``mmr``
on ``retrieved`` changes recall@k; a ``reorder`` of ``evidence`` changes only what the
generator sees, and in which order.

**mmr** (maximal marginal relevance; Carbonell and Goldstein, SIGIR 1998). Among the first
``candidates`` hits, pick greedily the hit ``d`` that maximises::

    lambda_mult * rel(d) - (1 - lambda_mult) * max_{s in selected} cos(d, s)

until ``top_k`` are picked (all candidates by default). ``rel`` is the cosine of the
question and the passage (``relevance: cosine``, the original definition) or the hit's
score min-max scaled over the candidates (``relevance: score``: keeps what fusion or a
reranker decided; the first pick is then the top hit). Vectors come from ``embedder``
through the shared embedding cache, so passages a dense index of the same model already
encoded cost nothing. Ties go to the better-ranked hit. The picked hits come first, in
pick order; the unpicked candidates and every hit after the candidates follow in their
original order. ``lambda_mult: 1`` reproduces the relevance order.

**reorder** ("lost in the middle": Liu et al., TACL 2024: models use the start and end of
a long context best). The first ``k`` hits, best first ``h1..hk``, become ``h1, h3, h5,
..., h6, h4, h2``: the best two at both ends, the weakest in the middle; hits after ``k``
stay after. Set ``k`` to the generator's ``evidence_k``: the generator shows only the
first ``evidence_k`` of the field, so a longer reordered prefix would push ``h2`` out.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np
from pydantic import Field, model_validator

from evalkit.graph.node import Node, NodeParams, register_node
from evalkit.graph.schema import (
    EVIDENCE,
    QUESTION,
    RERANK_SCORES,
    RERANKED,
    RETRIEVED,
    Contract,
    Role,
)
from evalkit.models.embedders import ModelSpec
from evalkit.records import Hit

RankingField = Literal["retrieved", "reranked", "evidence"]
_FIELDS = {"retrieved": RETRIEVED, "reranked": RERANKED, "evidence": EVIDENCE}


def _contract(field: str, reads: frozenset[str] = frozenset()) -> Contract:
    """Reads and writes ``field`` (and ``rerank_scores`` with it when the field is ``reranked``)."""
    f = _FIELDS[field]
    writes = {f, RERANK_SCORES} if f == RERANKED else {f}
    return Contract(reads | {f}, frozenset(), frozenset(writes), frozenset())


def _written(field: str, hits: list[Hit]) -> dict[str, Any]:
    out: dict[str, Any] = {_FIELDS[field]: hits}
    if _FIELDS[field] == RERANKED:
        out[RERANK_SCORES] = [h.score for h in hits]
    return out


class MMRParams(NodeParams):
    field: RankingField = Field(default="retrieved", description="the ranking to reorder (read and written)")
    lambda_mult: float = Field(default=0.5, ge=0, le=1, description="lambda: weight of relevance against "
                               "novelty (1: relevance order, 0: most diverse)")
    candidates: int = Field(default=50, ge=1, description="the first hits MMR chooses among")
    top_k: int | None = Field(default=None, ge=1, description="hits picked by MMR (default: all candidates); "
                              "the rest follow in their original order")
    embedder: str | ModelSpec = Field(default="e5", description="the model whose cosines measure relevance "
                                      "and similarity (passage vectors from the shared embedding cache)")
    relevance: Literal["cosine", "score"] = Field(
        default="cosine", description="cosine: question-passage cosine; score: the hit's score, min-max "
                                      "scaled over the candidates")

    @model_validator(mode="after")
    def _top_k_within_candidates(self) -> MMRParams:
        if self.top_k is not None and self.top_k > self.candidates:
            raise ValueError(f"top_k ({self.top_k}) cannot exceed candidates ({self.candidates})")
        return self


def mmr_order(rel: np.ndarray, sim: np.ndarray, lambda_mult: float, k: int) -> list[int]:
    """Indices picked by MMR, in pick order: ``rel`` relevance per item, ``sim`` item-item similarity.

    Ties go to the lower index (the better-ranked hit)."""
    n = len(rel)
    picked: list[int] = []
    max_sim = np.full(n, -np.inf)
    free = np.ones(n, dtype=bool)
    for _ in range(min(k, n)):
        novelty = np.where(np.isfinite(max_sim), max_sim, 0.0) if picked else np.zeros(n)
        score = lambda_mult * rel - (1 - lambda_mult) * novelty
        score = np.where(free, score, -np.inf)
        best = int(np.flatnonzero(score == score.max())[0])
        picked.append(best)
        free[best] = False
        max_sim = np.maximum(max_sim, sim[best])
    return picked


@register_node
class MMR(Node[MMRParams]):
    type = "mmr"
    role = Role.TRANSFORM
    reads = (QUESTION, RETRIEVED)
    writes = (RETRIEVED,)
    Params = MMRParams

    @classmethod
    def contract(cls, params: MMRParams) -> Contract:
        return _contract(params.field, frozenset({QUESTION}))

    def __init__(self, name: str, params: MMRParams, resources: Any = None):
        super().__init__(name, params, resources)
        self.passages = resources.passages()
        self.embedder = resources.embedder(ModelSpec.of(params.embedder))

    def run(self, state: Mapping[str, Any]) -> dict[str, Any]:
        p = self.params
        hits = list(state[_FIELDS[p.field]])
        cands = hits[: p.candidates]
        if len(cands) < 2:
            return _written(p.field, hits)
        vecs = self.embedder.encode_passages([self.passages.text(h.id) for h in cands]).astype(np.float64)
        if p.relevance == "cosine":
            rel = vecs @ self.embedder.encode_queries([state[QUESTION]])[0].astype(np.float64)
        else:
            rel = _minmax([h.score for h in cands])
        picked = mmr_order(rel, vecs @ vecs.T, p.lambda_mult, p.top_k or len(cands))
        chosen = set(picked)
        order = [cands[i] for i in picked] + [h for i, h in enumerate(cands) if i not in chosen]
        return _written(p.field, order + hits[p.candidates:])


def _minmax(values: Sequence[float]) -> np.ndarray:
    v = np.asarray(values, dtype=np.float64)
    span = v.max() - v.min()
    return np.ones_like(v) if span == 0 else (v - v.min()) / span


class ReorderParams(NodeParams):
    field: RankingField = Field(default="evidence", description="the ranking to reorder (read and written)")
    k: int = Field(default=5, ge=1, description="how many of the first hits to reorder; set it to the "
                   "generator's evidence_k")


def lost_in_the_middle(hits: Sequence[Hit], k: int) -> list[Hit]:
    """``h1, h3, h5, ..., h6, h4, h2`` for the first ``k`` hits (best at both ends), the rest unchanged."""
    head = list(hits[:k])
    return head[0::2] + head[1::2][::-1] + list(hits[k:])


@register_node
class Reorder(Node[ReorderParams]):
    type = "reorder"
    role = Role.TRANSFORM
    reads = (EVIDENCE,)
    writes = (EVIDENCE,)
    Params = ReorderParams

    @classmethod
    def contract(cls, params: ReorderParams) -> Contract:
        return _contract(params.field)

    def run(self, state: Mapping[str, Any]) -> dict[str, Any]:
        return _written(self.params.field, lost_in_the_middle(list(state[_FIELDS[self.params.field]]),
                                                              self.params.k))
