"""The ``rerank`` node: re-score the top retrieved passages with a second-stage model.

Takes the first ``top_k`` passages of ``retrieved``, scores each (query, passage) pair
with the configured reranker (see ``evalkit.models.rerankers``; the offline default is
the multilingual e5 bi-encoder, not a cross-encoder), and writes them best first
(ties by passage id) as ``reranked``, their scores as ``rerank_scores``, the best score
as ``rerank_top1`` (None when there was nothing to rerank; routes compare it) and the
model's identity as ``rerank_model`` (score scales differ between models; thresholds must
know which model produced a score). The query scored is the user's original question.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import Field, field_validator

from evalkit.graph.node import Node, NodeParams, register_node
from evalkit.graph.schema import (
    QUESTION,
    RERANK_MODEL,
    RERANK_SCORES,
    RERANK_TOP1,
    RERANKED,
    RETRIEVED,
    Role,
)
from evalkit.models.embedders import ModelSpec, check_model_name
from evalkit.models.rerankers import RERANKERS
from evalkit.records import Hit


class RerankParams(NodeParams):
    model: str | ModelSpec = Field(default="e5", description="the second-stage model: e5 (bi-encoder), "
                                   "minilm (bi-encoder), or {name: flag | cross-encoder, path: a local model folder}")
    top_k: int = Field(default=50, ge=1, description="how many retrieved passages to re-score")

    @field_validator("model", mode="before")
    @classmethod
    def _known_reranker(cls, value: Any) -> Any:
        return check_model_name(value, RERANKERS, "reranker")


@register_node
class Rerank(Node[RerankParams]):
    type = "rerank"
    role = Role.RERANKER
    reads = (QUESTION, RETRIEVED)
    writes = (RERANKED, RERANK_SCORES, RERANK_MODEL, RERANK_TOP1)
    Params = RerankParams

    def __init__(self, name: str, params: RerankParams, resources: Any = None):
        super().__init__(name, params, resources)
        self.passages = resources.passages()
        self.model = resources.reranker(ModelSpec.of(params.model))

    def run(self, state: Mapping[str, Any]) -> dict[str, Any]:
        candidates = list(state[RETRIEVED])[: self.params.top_k]
        scores = self.model.score(state[QUESTION], [self.passages.text(h.id) for h in candidates])
        ranked = sorted((Hit(h.id, h.doc_id, s) for h, s in zip(candidates, scores)), key=lambda h: (-h.score, h.id))
        return {RERANKED: ranked, RERANK_SCORES: [h.score for h in ranked], RERANK_MODEL: self.model.identity,
                RERANK_TOP1: float(ranked[0].score) if ranked else None}
