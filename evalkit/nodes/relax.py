"""The ``relax`` rule of ``retrieve``: a second, looser retrieval when the first finds too few passages.

A strict metadata filter (one department, one version) or a small ``top_k`` can leave a
query with fewer candidates than the later stages need. With ``relax`` configured, the
``retrieve`` node counts the passages of its fused ranking; below ``min_hits`` it searches
again with the looser settings and writes that ranking instead. Every query's
``retrieval_relaxed`` field (kept in the trace) says whether the rule fired, how many
passages each retrieval found, and what it changed (``top_k`` from/to, the filter dropped or
replaced), so a reviewer can tell a relaxed answer from a strict one.

YAML::

    retrieve:
      type: retrieve
      params:
        bm25: {tokenizer: auto, top_k: 20}
        top_k: 20
        filters: {field: dept, eq: {from_record: dept}}
        relax:
          min_hits: 3        # fewer fused passages than this: search again
          top_k: 100         # the looser top_k (fused ranking and every channel); omit: keep
          filters: drop      # drop: no filter; keep; or a looser filter (same grammar)
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from evalkit.graph.node import NodeParams
from evalkit.nodes.filters import parse_filters


class Relax(NodeParams):
    """When (``min_hits``) and how (``top_k``, ``filters``) ``retrieve`` searches a second time."""

    min_hits: int = Field(ge=1, description="search again when the fused ranking has fewer passages than this")
    top_k: int | None = Field(default=None, ge=1, description="the second search's top_k, for the fused ranking "
                              "and every channel (never lowers a channel's own); omit: keep")
    filters: Literal["keep", "drop"] | dict[str, Any] | list[Any] = Field(
        default="drop", description="drop: search without the filter; keep: keep it; or a looser filter "
        "(evalkit.nodes.filters grammar)")

    @field_validator("filters")
    @classmethod
    def _filter_grammar(cls, value: Any) -> Any:
        if not isinstance(value, str):
            parse_filters(value)
        return value

    @model_validator(mode="after")
    def _changes_something(self) -> Relax:
        if self.top_k is None and self.filters == "keep":
            raise ValueError("relax changes nothing: set top_k, or filters: drop (or a looser filter)")
        return self


@dataclass(frozen=True)
class RelaxRecord:
    """What the relax rule did for one query (the ``retrieval_relaxed`` state field, as a dict)."""

    fired: bool
    min_hits: int
    hits_before: int
    hits_after: int | None = None  # None: the rule did not fire
    changed: dict[str, Any] = field(default_factory=dict)  # {"top_k": {from, to}, "filters": {from, to}}

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def should_relax(rule: Relax, hits: int) -> bool:
    """Whether a ranking of ``hits`` passages is too short under ``rule``."""
    return hits < rule.min_hits


def relaxed_settings(params: Any, rule: Relax) -> dict[str, Any]:
    """The ``retrieve`` params (a dict for ``RetrieveParams``) of the second, looser search.

    ``params`` is the node's ``RetrieveParams``; the result keeps everything but ``top_k``
    (raised, never lowered) and ``filters`` (dropped, kept or replaced), and has no ``relax``.
    """
    out = params.model_dump(exclude={"relax"}, exclude_unset=True)  # unset: a channel's kind-specific defaults
    out["top_k"] = params.top_k
    out["filters"] = params.filters
    if rule.top_k is not None:
        out["top_k"] = max(params.top_k, rule.top_k)
        for channel in ("dense", "bm25", "title"):
            c = getattr(params, channel)
            if c is not None:
                out[channel]["top_k"] = max(c.top_k, rule.top_k)
                if channel == "dense" and c.index == "hnsw":
                    out[channel]["ef_search"] = max(c.ef_search, out[channel]["top_k"])
    if rule.filters == "drop":
        out["filters"] = None
    elif rule.filters != "keep":
        out["filters"] = rule.filters
    return out


def changes(params: Any, rule: Relax) -> dict[str, Any]:
    """What the second search changes: ``{"top_k": {"from", "to"}, "filters": {"from", "to"}}`` (only the
    settings it really changes)."""
    looser = relaxed_settings(params, rule)
    out: dict[str, Any] = {}
    if looser["top_k"] != params.top_k:
        out["top_k"] = {"from": params.top_k, "to": looser["top_k"]}
    if looser["filters"] != params.filters:
        out["filters"] = {"from": params.filters, "to": looser["filters"]}
    return out


def looser_filter(rule: Relax | None) -> dict[str, Any] | list[Any] | None:
    """The looser filter a relax rule searches with (None: none, or no rule): its record fields are read too."""
    return rule.filters if rule is not None and not isinstance(rule.filters, str) else None


Ranking = tuple[list[Any], dict[str, Any]]  # (fused ranking, channel hits), as retrieve writes them


def relax(params: Any, first: Ranking, search_looser: Callable[[], Ranking]) -> tuple[list[Any], dict[str, Any],
                                                                                     RelaxRecord]:
    """The ranking ``retrieve`` writes under its relax rule: ``first`` (fused ranking, channel hits) when it is
    long enough, else the looser search's; and the record of what happened. ``params``: ``RetrieveParams``."""
    rule: Relax = params.relax
    fused, channel_hits = first
    if not should_relax(rule, len(fused)):
        return fused, channel_hits, RelaxRecord(False, rule.min_hits, len(fused))
    looser, looser_hits = search_looser()
    return looser, looser_hits, RelaxRecord(True, rule.min_hits, len(fused), len(looser), changes(params, rule))
