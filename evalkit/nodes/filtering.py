"""``filters:``, the one metadata-filter parameter of every retrieval node (grammar: ``evalkit.nodes.filters``).

``retrieve``, ``graph_local``, ``graph_global`` and ``agent_scheduler`` params derive from
:class:`Filtered`; a node may redeclare the field to describe what it filters, and keeps the
grammar check.
"""
from __future__ import annotations

from typing import Any

from pydantic import Field, field_validator

from evalkit.graph.node import NodeParams
from evalkit.nodes.filters import parse_filters


class Filtered(NodeParams):
    """Node params with ``filters:`` (checked against the filter grammar when the config loads)."""

    filters: dict[str, Any] | list[Any] | None = Field(
        default=None, description="metadata filter over document fields (evalkit.nodes.filters): the ranking "
        "written (the fused one too) and graph_evidence hold only documents it lets through")

    @field_validator("filters")
    @classmethod
    def _filter_grammar(cls, value: Any) -> Any:
        if value is not None:
            parse_filters(value)
        return value
