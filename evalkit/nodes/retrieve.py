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

``prepare`` (called by the runner once per variant with every question) searches all
questions in one batch per channel: query vectors encoded in batches (for
batch-invariant models, see ``evalkit.models.embedders``), one faiss call, one BM25
call. ``run`` then takes a query's hits from there; a query it was not given (a
rewritten query) is searched as before. The hits are the same either way, bit for bit.

YAML::

    retrieve:
      type: retrieve
      params:
        dense: {embedder: e5, top_k: 100}
        bm25: {tokenizer: auto, top_k: 100}
        fusion: {method: rrf, k: 60}        # or {method: weighted, norm: minmax, weights: ...}
        top_k: 100
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

from pydantic import Field, model_validator

from evalkit.graph.node import Node, NodeParams, register_node
from evalkit.graph.schema import CHANNEL_HITS, QUERIES, QUESTION, RETRIEVED, Role
from evalkit.models.embedders import ModelSpec
from evalkit.nodes.fusion import rrf, weighted
from evalkit.records import Hit


INDEX_PARAMS = {"flat": (), "ivf": ("nlist", "nprobe"), "hnsw": ("hnsw_m", "ef_construction", "ef_search")}


class DenseChannel(NodeParams):
    """Dense channel: a bi-encoder and a faiss index: ``flat`` (exact), ``ivf`` or ``hnsw``
    (approximate; for big corpora, see docs/scaling.md), each with its own parameters."""

    embedder: str | ModelSpec = "e5"
    query_embedder: str | ModelSpec | None = Field(
        default=None, description="query-side model; must equal the index's (checked) - leave unset")
    top_k: int = Field(default=100, ge=1)
    weight: float = Field(default=1.0, ge=0)
    index: Literal["flat", "ivf", "hnsw"] = "flat"
    nlist: int = Field(default=64, ge=1, description="ivf: clusters")
    nprobe: int = Field(default=8, ge=1, description="ivf: clusters searched per query")
    hnsw_m: int = Field(default=32, ge=4, le=128, description="hnsw: links per node")
    ef_construction: int = Field(default=100, ge=8, description="hnsw: candidate list while building")
    ef_search: int = Field(default=128, ge=1, description="hnsw: candidate list while searching")

    @model_validator(mode="after")
    def _params_of_the_kind(self) -> DenseChannel:
        for kind, names in INDEX_PARAMS.items():
            stray = [n for n in names if n in self.model_fields_set and kind != self.index]
            if stray:
                raise ValueError(f"{', '.join(stray)} applies to index: {kind}, not to index: {self.index}")
        if self.index == "ivf" and self.nprobe > self.nlist:
            raise ValueError(f"nprobe ({self.nprobe}) cannot exceed nlist ({self.nlist})")
        if self.index == "hnsw" and self.ef_search < self.top_k:
            raise ValueError(f"ef_search ({self.ef_search}) must be at least top_k ({self.top_k}): HNSW returns "
                             "at most ef_search candidates")
        return self

    def index_settings(self) -> dict[str, Any]:
        """The keyword arguments of ``resources.dense_index`` for this channel's index kind."""
        return {n: getattr(self, n) for n in INDEX_PARAMS[self.index]}


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

    def __init__(self, name: str, params: RetrieveParams, resources: Any = None):
        super().__init__(name, params, resources)
        self.passages = resources.passages()
        self._dense = self._bm25 = None
        if params.dense is not None:
            spec = ModelSpec.of(params.dense.embedder)
            self._dense = resources.dense_index(spec, params.dense.index, **params.dense.index_settings())
            self._query_model = resources.embedder(ModelSpec.of(params.dense.query_embedder or spec))
            self._dense.check_query_model(self._query_model.identity)  # refuse a mismatch before any query
        if params.bm25 is not None:
            c = params.bm25
            self._bm25 = resources.bm25_index(c.tokenizer, c.k1, c.b, c.idf, c.stem, c.stopwords)
        self._prepared: dict[str, dict[str, list[Hit]]] = {}  # channel -> query -> hits (see prepare)

    def prepare(self, questions: Sequence[str]) -> None:
        """Search every question in one batch per channel, before the query loop (see the module docstring).

        Each question still goes through :meth:`shared` once per channel, as in ``run``, so
        variants share these searches and the sharing counts are what they would be without
        prepare; on the first miss the questions not yet searched are searched in one batch.
        """
        searches = {"dense": self._dense_search, "bm25": self._bm25_search}
        unique = list(dict.fromkeys(questions))
        for part, _ in self.shared_parts(self.params):
            channel = part["search"]
            batch: dict[str, list[Hit]] = {}

            def hits(q: str, search: Callable[[list[str]], list[list[Hit]]] = searches[channel],
                     batch: dict[str, list[Hit]] = batch) -> list[Hit]:
                if q not in batch:
                    todo = [x for x in unique if x not in batch]
                    batch.update(zip(todo, search(todo)))
                return batch[q]

            ready = self._prepared.setdefault(channel, {})
            for q in questions:  # every occurrence, as the query loop would ask
                ready[q] = self.shared(part, (q,), lambda q=q: [hits(q)])[0]

    @classmethod
    def shared_parts(cls, params: RetrieveParams) -> list[tuple[dict[str, Any], tuple[str, ...]]]:
        """One channel search each: what other variants (other fusion settings) may share."""
        parts: list[tuple[dict[str, Any], tuple[str, ...]]] = []
        for channel in ("dense", "bm25"):
            c = getattr(params, channel)
            if c is not None:
                parts.append(({"search": channel, **c.model_dump(mode="json", exclude={"weight"})},
                              (QUERIES, QUESTION)))
        return parts

    def run(self, state: Mapping[str, Any]) -> dict[str, Any]:
        queries = list(state[QUERIES]) or [state[QUESTION]]
        searches = {"dense": self._dense_search, "bm25": self._bm25_search}
        channels: dict[str, list[list[Hit]]] = {}
        for part, _ in self.shared_parts(self.params):
            channel = part["search"]
            ready = self._prepared.get(channel)
            if ready is not None and all(q in ready for q in queries):
                channels[channel] = [ready[q] for q in queries]  # searched (and counted) by prepare
                continue
            search = searches[channel]
            channels[channel] = self.shared(part, tuple(queries), lambda s=search: s(queries))  # type: ignore[misc]
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

    def _dense_search(self, queries: list[str]) -> list[list[Hit]]:
        dense = self.params.dense
        assert dense is not None and self._dense is not None
        vecs = self._query_model.encode_queries(queries)
        found = self._dense.search(vecs, self._unit_k(dense.top_k), self._query_model.identity)
        return [self._to_hits(r, dense.top_k) for r in found]

    def _bm25_search(self, queries: list[str]) -> list[list[Hit]]:
        bm25 = self.params.bm25
        assert bm25 is not None and self._bm25 is not None
        found = self._bm25.search_many(queries, self._unit_k(bm25.top_k))
        return [self._to_hits(f, bm25.top_k) for f in found]

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
