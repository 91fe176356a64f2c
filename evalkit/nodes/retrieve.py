"""The ``retrieve`` node: dense, BM25 or hybrid retrieval of passages.

Each configured channel (``dense``, ``bm25``) retrieves ``top_k`` passages for every
query in ``state["queries"]``; with parent-child chunking, children are mapped to their
parent passage (best child's score, first occurrence kept). One ranking alone is passed
through; several (channels x queries) are fused by ``fusion`` (RRF or weighted sum, see
``evalkit.nodes.fusion``). Writes ``retrieved`` (the fused top ``top_k``) and
``channel_hits`` (each channel's own ranking, for the trace and for fusion analysis).
A channel's search is a shared part (``shared_parts``): every other variant of the
invocation that runs the same search (same channel settings, chunking and queries) reuses
it through the work memo, so a sweep over fusion settings searches each query once.

YAML::

    retrieve:
      type: retrieve
      params:
        dense: {embedder: e5, top_k: 100}
        bm25: {tokenizer: auto, top_k: 100}
        fusion: {method: rrf, k: 60}        # or {method: weighted, norm: minmax, weights: ...}
        top_k: 100
        filters: {field: dept, eq: {from_record: dept}}    # optional, evalkit.index.filters

``filters`` (a condition over document metadata, values from the config or the eval
record; grammar and semantics in ``evalkit.index.filters``) restricts every channel's
search to the matching documents' passages (a pre-filtered id set, applied inside BM25
and faiss), so ``top_k`` is filled with matching passages. The filter, resolved with the
query's record values, is part of each channel search's shared-part key, and the record
fields it reads (``tenant``, ``lang``, ``attributes``) are part of the node's reads.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import numpy as np
from pydantic import Field, field_validator, model_validator

from evalkit.graph.node import Node, NodeParams, register_node
from evalkit.graph.schema import CHANNEL_HITS, QUERIES, QUESTION, RETRIEVED, Contract, Role
from evalkit.index.filters import DocumentFilter, parse_filters, record_values, state_fields
from evalkit.models.embedders import ModelSpec
from evalkit.nodes.fusion import rrf, weighted
from evalkit.records import Hit


class DenseChannel(NodeParams):
    """Dense channel: a bi-encoder and a faiss index (``flat`` exact, or ``ivf``)."""

    embedder: str | ModelSpec = "e5"
    query_embedder: str | ModelSpec | None = Field(
        default=None, description="query-side model; must equal the index's (checked) - leave unset")
    top_k: int = Field(default=100, ge=1)
    weight: float = Field(default=1.0, ge=0)
    index: Literal["flat", "ivf"] = "flat"
    nlist: int = Field(default=64, ge=1)
    nprobe: int = Field(default=8, ge=1)


class BM25Channel(NodeParams):
    """Lexical channel: BM25 (Lucene IDF and k1/b defaults) with language-aware tokenisation."""

    tokenizer: Literal["auto", "en", "zh", "whitespace"] = "auto"
    k1: float = Field(default=0.9, ge=0)
    b: float = Field(default=0.4, ge=0, le=1)
    idf: Literal["lucene", "okapi"] = "lucene"
    stem: bool = True
    stopwords: bool = True
    top_k: int = Field(default=100, ge=1)
    weight: float = Field(default=1.0, ge=0)


class Fusion(NodeParams):
    """How several rankings become one: ``rrf`` (k) or ``weighted`` (norm, missing)."""

    method: Literal["rrf", "weighted"] = "rrf"
    k: int = Field(default=60, ge=0)
    norm: Literal["minmax", "zscore"] = "minmax"
    missing: Literal["min", "zero"] = "min"


class RetrieveParams(NodeParams):
    dense: DenseChannel | None = None
    bm25: BM25Channel | None = None
    fusion: Fusion = Fusion()
    top_k: int = Field(default=100, ge=1)
    filters: dict[str, Any] | list[Any] | None = Field(
        default=None, description="metadata filter: a condition over document fields (evalkit.index.filters)")

    @field_validator("filters")
    @classmethod
    def _filter_grammar(cls, value: Any) -> Any:
        if value is not None:
            parse_filters(value)
        return value

    @model_validator(mode="after")
    def _one_channel(self) -> RetrieveParams:
        if self.dense is None and self.bm25 is None:
            raise ValueError("configure at least one channel: 'dense' and/or 'bm25'")
        return self


@register_node
class Retrieve(Node[RetrieveParams]):
    type = "retrieve"
    role = Role.RETRIEVER
    reads = (QUERIES, QUESTION)
    writes = (RETRIEVED, CHANNEL_HITS)
    Params = RetrieveParams

    @classmethod
    def contract(cls, params: RetrieveParams) -> Contract:
        base = super().contract(params)
        extra = state_fields(parse_filters(params.filters)) if params.filters is not None else []
        return Contract(base.reads | frozenset(extra), base.optional_reads, base.writes, base.optional_writes)

    def __init__(self, name: str, params: RetrieveParams, resources: Any = None):
        super().__init__(name, params, resources)
        self.passages = resources.passages()
        self._filter = None
        self._allowed: dict[tuple[str, str], np.ndarray] = {}
        if params.filters is not None:
            self._filter = DocumentFilter(params.filters, resources.corpus.documents, f"node '{name}': filters")
        self._dense = self._bm25 = None
        if params.dense is not None:
            spec = ModelSpec.of(params.dense.embedder)
            self._dense = resources.dense_index(spec, params.dense.index, params.dense.nlist, params.dense.nprobe)
            self._query_model = resources.embedder(ModelSpec.of(params.dense.query_embedder or spec))
            self._dense.check_query_model(self._query_model.identity)  # refuse a mismatch before any query
        if params.bm25 is not None:
            c = params.bm25
            self._bm25 = resources.bm25_index(c.tokenizer, c.k1, c.b, c.idf, c.stem, c.stopwords)

    @classmethod
    def shared_parts(cls, params: RetrieveParams) -> list[tuple[dict[str, Any], tuple[str, ...]]]:
        """One channel search each: what other variants (other fusion settings) may share."""
        parts: list[tuple[dict[str, Any], tuple[str, ...]]] = []
        filtered = {"filters": params.filters} if params.filters is not None else {}
        deps = (QUERIES, QUESTION, *(state_fields(parse_filters(params.filters)) if filtered else ()))
        for channel in ("dense", "bm25"):
            c = getattr(params, channel)
            if c is not None:
                parts.append(({"search": channel, **c.model_dump(mode="json", exclude={"weight"}), **filtered},
                              deps))
        return parts

    def run(self, state: Mapping[str, Any]) -> dict[str, Any]:
        queries = list(state[QUERIES]) or [state[QUESTION]]
        searches = {"dense": self._dense_search, "bm25": self._bm25_search}
        inputs: Any = tuple(queries)
        allowed: tuple[str, frozenset[str]] | None = None
        if self._filter is not None:
            values = record_values(self._filter.cond, state)
            key = self._filter.key(values)
            allowed = (key, self._filter.allowed(values))
            inputs = (tuple(queries), key)  # the resolved filter keys the shared search
        channels: dict[str, list[list[Hit]]] = {}
        for part, _ in self.shared_parts(self.params):
            channel = part["search"]
            search = searches[channel]
            channels[channel] = self.shared(part, inputs,
                                            lambda s=search: s(queries, allowed))  # type: ignore[misc]
        p = self.params
        rankings = [r for lists in channels.values() for r in lists]
        weights = [getattr(p, ch).weight for ch, lists in channels.items() for _ in lists]
        if len(rankings) == 1:
            fused = rankings[0]
        elif p.fusion.method == "rrf":
            fused = rrf(rankings, weights, p.fusion.k)
        else:
            fused = weighted(rankings, weights, p.fusion.norm, p.fusion.missing)
        channel_hits = {ch: (lists[0] if len(lists) == 1 else rrf(lists, [1.0] * len(lists), p.fusion.k))
                        for ch, lists in channels.items()}
        return {RETRIEVED: fused[:p.top_k], CHANNEL_HITS: channel_hits}

    def _dense_search(self, queries: list[str], allowed: tuple[str, frozenset[str]] | None = None) -> list[list[Hit]]:
        dense = self.params.dense
        assert dense is not None and self._dense is not None
        vecs = self._query_model.encode_queries(queries)
        positions = self._positions("dense", self._dense.ids, allowed)
        only = {} if positions is None else {"allowed": positions}  # unfiltered: the plain search call
        found = self._dense.search(vecs, self._unit_k(dense.top_k), self._query_model.identity, **only)
        return [self._to_hits(r, dense.top_k) for r in found]

    def _bm25_search(self, queries: list[str], allowed: tuple[str, frozenset[str]] | None = None) -> list[list[Hit]]:
        bm25 = self.params.bm25
        assert bm25 is not None and self._bm25 is not None
        positions = self._positions("bm25", self._bm25.ids, allowed)
        only = {} if positions is None else {"allowed": positions}  # unfiltered: the plain search call
        return [self._to_hits(self._bm25.search(q, self._unit_k(bm25.top_k), **only), bm25.top_k) for q in queries]

    def _positions(self, index: str, ids: list[str], allowed: tuple[str, frozenset[str]] | None) -> np.ndarray | None:
        """Positions in an index's ``ids`` of the passages of the allowed documents (None: no filter).

        ``allowed`` is (resolved filter key, allowed document ids); positions are cached by the key.
        """
        if allowed is None:
            return None
        key = (index, allowed[0])
        found = self._allowed.get(key)
        if found is None:
            docs = allowed[1]
            found = np.asarray([i for i, pid in enumerate(ids) if self.passages.doc_of(pid) in docs], dtype=np.int64)
            if len(self._allowed) > 1024:
                self._allowed.clear()
            self._allowed[key] = found
        return found

    def _unit_k(self, k: int) -> int:
        # parent-child: several children may share a parent; over-fetch so k parents remain
        return k * 4 if self.passages.parents else k

    def _to_hits(self, found: list[tuple[str, float]], k: int) -> list[Hit]:
        hits: list[Hit] = []
        seen: set[str] = set()
        for pid, score in found:
            pid = self.passages.parent_of(pid)
            if pid in seen:
                continue
            seen.add(pid)
            hits.append(Hit(pid, self.passages.doc_of(pid), score))
            if len(hits) == k:
                break
        return hits
