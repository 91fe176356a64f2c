"""``generate``'s ``reference_only`` rule: weak evidence passages are shown as background, never quoted.

Passages ranked into the first ``evidence_k`` only because there were ``evidence_k`` slots
can carry a score far below the top one. With ``reference_only`` a passage whose score is
below ``min_score`` (absolute), or below ``min_share`` of the top passage's score (relative;
only when the top score is positive: a share of a non-positive score means nothing, and no
passage is marked), is *reference only*:

- the prompt labels it ``(score 0.123, reference only)`` and tells the model such passages
  are background, not a basis for the answer;
- it is left out of the quotable evidence (``ChatRequest.evidence``), so the ``extractive``
  backend never quotes it (with every passage marked, it answers that evidence is
  insufficient);
- it stays in ``answer_evidence`` (the judges check the answer against everything shown) and
  stays citable;
- ``evidence_tiers`` (in the trace) lists every shown passage with its score and whether it
  was marked, with the threshold applied.

YAML::

    generate:
      type: generate
      params:
        evidence_k: 5
        reference_only: {min_share: 0.5}     # or {min_score: 0.3}
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

from pydantic import Field, model_validator

from evalkit.graph.node import NodeParams
from evalkit.records import Hit

REFERENCE_NOTE = ("Passages marked \"reference only\" scored low: use them as background only; base the answer "
                  "on the other passages.")


class ReferenceOnly(NodeParams):
    """Which shown passages are reference only: score below ``min_score``, or below ``min_share`` x the top score."""

    min_score: float | None = Field(default=None, description="absolute: a passage scoring below this is "
                                    "reference only")
    min_share: float | None = Field(default=None, gt=0, le=1, description="relative: a passage scoring below this "
                                    "share of the top passage's score is reference only (top score > 0 only)")

    @model_validator(mode="after")
    def _exactly_one(self) -> ReferenceOnly:
        if (self.min_score is None) == (self.min_share is None):
            raise ValueError("set exactly one of min_score (absolute) or min_share (share of the top score)")
        return self


@dataclass(frozen=True)
class Tier:
    """One shown passage's tier: the ``evidence_tiers`` entry of the trace."""

    id: str
    doc_id: str
    score: float
    reference_only: bool
    threshold: float | None  # the score it was compared with (None: nothing was compared, no positive top score)

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def threshold(rule: ReferenceOnly, scores: Sequence[float]) -> float | None:
    """The score below which a passage is reference only (None: the rule marks nothing here)."""
    if rule.min_score is not None:
        return rule.min_score
    top = max(scores, default=0.0)
    return rule.min_share * top if rule.min_share is not None and top > 0 else None


def tiers(hits: Sequence[Hit], rule: ReferenceOnly) -> list[Tier]:
    """Each shown passage, in order, with whether it is reference only under ``rule``."""
    scores = [float(h.score) for h in hits]
    cut = threshold(rule, scores)
    return [Tier(h.id, h.doc_id, s, cut is not None and s < cut, cut) for h, s in zip(hits, scores)]
