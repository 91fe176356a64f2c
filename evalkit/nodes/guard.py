"""The ``guard`` node: stop when there is no reliable evidence.

After rerank, the guard trips when fewer than ``min_documents`` passages remain, or
when the top rerank score is below the threshold. The threshold is either ``absolute``
(``threshold``) or ``relative``: the ``percentile``-th percentile of the top-1 rerank
scores of answerable queries on a calibration set (``calibration``: a JSON list of
scores, or a ``per_query.jsonl`` of an earlier run, whose answerable queries'
``rerank_top1`` values are used). A relative threshold adapts to a reranker's scale;
an absolute one must be re-calibrated whenever the reranker changes.

Writes ``guard_triggered`` (bool), ``guard_reason``, ``guard_threshold``, ``evidence``
(the top ``evidence_k`` passages, empty when tripped) and ``outcome``
(``no_reliable_evidence`` or ``evidence_found``). Route on ``guard_triggered``.
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import Field, model_validator

from evalkit.errors import EvalkitError
from evalkit.fileio import jsonl_lines
from evalkit.graph.node import Node, NodeParams, register_node
from evalkit.graph.schema import (
    EVIDENCE,
    GUARD_REASON,
    GUARD_THRESHOLD,
    GUARD_TRIGGERED,
    OUTCOME,
    OUTCOME_EVIDENCE_FOUND,
    OUTCOME_NO_EVIDENCE,
    RERANKED,
    Role,
)


class GuardParams(NodeParams):
    mode: Literal["absolute", "relative"] = Field(
        default="absolute", description="absolute: threshold as given; relative: a percentile of calibration")
    threshold: float | None = Field(default=None, description="absolute: the minimum top rerank score (on "
                                    "the reranker's scale)")
    percentile: float = Field(default=10.0, ge=0, le=100, description="relative: this percentile of the "
                              "answerable queries' top-1 scores is the threshold")
    calibration: str | None = Field(default=None, description="relative: a JSON list of top-1 scores, or a "
                                    "per_query.jsonl of an earlier run (relative to the config's folder)")
    min_documents: int = Field(default=1, ge=0, description="trip when fewer passages remain")
    evidence_k: int = Field(default=5, ge=1, description="passages passed on as evidence")

    @model_validator(mode="after")
    def _complete(self) -> GuardParams:
        if self.mode == "absolute" and self.threshold is None:
            raise ValueError("absolute mode needs 'threshold' (a score on the reranker's scale)")
        if self.mode == "relative" and not self.calibration:
            raise ValueError("relative mode needs 'calibration': a JSON list of top-1 scores or a per_query.jsonl")
        return self


def calibration_scores(path: Path) -> list[float]:
    """Top-1 scores from a JSON list, or from answerable queries of a per_query.jsonl."""
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".jsonl":
        rows = [json.loads(line) for line in jsonl_lines(text) if line.strip()]
        scores = [r["rerank_top1"] for r in rows if r.get("gold_doc_ids") and r.get("rerank_top1") is not None]
    else:
        scores = json.loads(text)
    if not isinstance(scores, list) or not scores or not all(isinstance(s, (int, float)) for s in scores):
        raise EvalkitError(f"{path}: no calibration scores (need a non-empty list of numbers, "
                         "or a per_query.jsonl with rerank_top1 for answerable queries)")
    return [float(s) for s in scores]


@register_node
class Guard(Node[GuardParams]):
    type = "guard"
    role = Role.GUARD
    reads = (RERANKED,)
    writes = (GUARD_TRIGGERED, GUARD_REASON, GUARD_THRESHOLD, EVIDENCE, OUTCOME)
    Params = GuardParams

    def __init__(self, name: str, params: GuardParams, resources: Any = None):
        super().__init__(name, params, resources)
        if params.threshold is not None and params.mode == "absolute":
            self.threshold = float(params.threshold)
        else:
            path = Path(str(params.calibration))
            base = getattr(resources, "base_dir", None)
            if not path.is_absolute() and base is not None and not path.exists():
                path = Path(base) / path
            self.threshold = float(np.percentile(calibration_scores(path), params.percentile))

    def fingerprint(self) -> dict[str, Any]:
        # a relative threshold comes from a calibration file: two variants naming the same relative path
        # in different folders differ here, so their results are never shared
        return {"threshold": self.threshold}

    def run(self, state: Mapping[str, Any]) -> dict[str, Any]:
        ranked = list(state[RERANKED])
        p = self.params
        if len(ranked) < max(p.min_documents, 1):
            reason = f"{len(ranked)} passage(s) after rerank, fewer than min_documents={max(p.min_documents, 1)}"
        elif ranked[0].score < self.threshold:
            reason = f"top score {ranked[0].score:.4f} < threshold {self.threshold:.4f}"
        else:
            return {GUARD_TRIGGERED: False, GUARD_REASON: "", GUARD_THRESHOLD: self.threshold,
                    EVIDENCE: ranked[: p.evidence_k], OUTCOME: OUTCOME_EVIDENCE_FOUND}
        return {GUARD_TRIGGERED: True, GUARD_REASON: reason, GUARD_THRESHOLD: self.threshold,
                EVIDENCE: [], OUTCOME: OUTCOME_NO_EVIDENCE}
