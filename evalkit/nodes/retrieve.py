"""The ``retrieve`` node: dense, BM25 or hybrid retrieval of passages.

Each configured channel (``dense``, ``bm25``) retrieves ``top_k`` passages for every
query in ``state["queries"]``; with parent-child chunking, children are mapped to their
parent passage (best child's score, first occurrence kept). One ranking alone is passed
through; several (channels x queries) are fused by ``fusion`` (RRF or weighted sum, see
``evalkit.nodes.fusion``). Writes ``retrieved`` (the fused top ``top_k``) and
``channel_hits`` (each channel's own ranking, for the trace and for fusion analysis).
``dedupe: {by: document, keep: best_rank | most_hits}`` keeps one passage per document
of the fused ranking before the ``top_k`` cut (``evalkit.nodes.dedupe``).
A channel's search is a shared part (``shared_parts``): every other variant of the
invocation that runs the same search (same channel settings, chunking and queries) reuses
it through the work memo, so a sweep over fusion settings searches each query once.

``prepare`` (called by the runner once per variant with every question) readies one
batch per channel: on the first query that misses the work memo, every question no
other variant has searched yet is searched at once (query vectors encoded in batches for
batch-invariant models, see ``evalkit.models.embedders``; one faiss call; one BM25
call). A query it was not given (a rewritten query) is searched as before. The hits and
the sharing counts are the same either way, bit for bit.

YAML::

    retrieve:
      type: retrieve
      params:
        dense: {embedder: e5, top_k: 100}
        bm25: {tokenizer: auto, top_k: 100}
        fusion: {method: rrf, k: 60}        # or {method: weighted, norm: minmax, weights: ...}
        top_k: 100
        dedupe: {by: document, keep: best_rank}   # optional
        filters: {field: dept, eq: {from_record: dept}}    # optional, evalkit.nodes.filters

``filters`` (a condition over document metadata, values from the config or the eval
record; grammar and semantics in ``evalkit.nodes.filters``) restricts every channel's
search to the matching documents' passages (a pre-filtered id set, applied inside BM25
and faiss), so ``top_k`` is filled with matching passages. The filter, resolved with the
query's record values, is part of each channel search's shared-part key, and the record
fields it reads (``tenant``, ``lang``, ``attributes``) are part of the node's reads.
A filtered node is not batched by ``prepare`` (each query has its own id set).

``title: {tokenizer, top_k, weight}`` adds a third channel: the query matched against document
titles only (``evalkit.nodes.title_channel``), fused like the others.

``relax: {min_hits, top_k, filters}`` searches a second time with looser settings when the
fused ranking has fewer than ``min_hits`` passages, and writes ``retrieval_relaxed`` (whether
it fired and what it changed; ``evalkit.nodes.relax``).
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any

import numpy as np
from pydantic import Field, model_validator

from evalkit.graph.node import Node, register_node
from evalkit.graph.schema import (
    CHANNEL_HITS,
    QUERIES,
    QUESTION,
    RETRIEVAL_RELAXED,
    RETRIEVED,
    Contract,
    Role,
)
from evalkit.models.embedders import ModelSpec
from evalkit.nodes.channels import (
    CHANNELS,
    INDEX_PARAMS,
    BM25Channel,
    DenseChannel,
    Fusion,
)
from evalkit.nodes.dedupe import Dedupe, dedupe
from evalkit.nodes.filtering import Filtered
from evalkit.nodes.filters import (
    DocumentFilter,
    parse_filters,
    record_values,
    state_fields,
)
from evalkit.nodes.fusion import rrf, weighted
from evalkit.nodes.relax import Relax, looser_filter, relax, relaxed_settings
from evalkit.nodes.search_batch import SearchBatch, Searched, searched, timed
from evalkit.nodes.title_channel import TitleChannel, TitleSearch
from evalkit.records import Hit

__all__ = ["INDEX_PARAMS", "BM25Channel", "DenseChannel", "Fusion", "Retrieve", "RetrieveParams"]

class RetrieveParams(Filtered):
    dense: DenseChannel | None = Field(default=None, description="the dense channel (omit: no dense search)")
    bm25: BM25Channel | None = Field(default=None, description="the BM25 channel (omit: no lexical search)")
    title: TitleChannel | None = Field(default=None, description="the title channel: BM25 over document titles, "
                                       "a match enters as the document's first passage (evalkit.nodes.title_channel)")
    fusion: Fusion = Field(default=Fusion(), description="how several rankings (channels x queries) are fused")
    top_k: int = Field(default=100, ge=1, description="length of the fused ranking written to retrieved")
    dedupe: Dedupe | None = Field(default=None, description="keep one passage per document of the fused "
                                  "ranking before the top_k cut (omit: keep every passage)")
    filters: dict[str, Any] | list[Any] | None = Field(  # grammar checked by Filtered
        default=None, description="metadata filter: a condition over document fields (evalkit.nodes.filters)")
    relax: Relax | None = Field(default=None, description="search again with looser settings (top_k, filters) "
                                "when fewer than min_hits passages come back (evalkit.nodes.relax)")

    @model_validator(mode="after")
    def _one_channel(self) -> RetrieveParams:
        if self.dense is None and self.bm25 is None and self.title is None:
            raise ValueError("configure at least one channel: 'dense', 'bm25' and/or 'title'")
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
        filters = [f for f in (params.filters, looser_filter(params.relax)) if f is not None]
        extra = [name for f in filters for name in state_fields(parse_filters(f))]
        writes = base.writes | ({RETRIEVAL_RELAXED} if params.relax is not None else frozenset())
        return Contract(base.reads | frozenset(extra), base.optional_reads, writes, base.optional_writes)

    def __init__(self, name: str, params: RetrieveParams, resources: Any = None):
        super().__init__(name, params, resources)
        self.passages = resources.passages()
        self._filter = None
        self._allowed: dict[tuple[str, str], np.ndarray] = {}
        if params.filters is not None:
            self._filter = DocumentFilter(params.filters, resources.corpus.documents, f"node '{name}': filters")
        self._dense = self._bm25 = None
        self._title = TitleSearch(resources, params.title) if params.title is not None else None
        if params.dense is not None:
            spec = ModelSpec.of(params.dense.embedder)
            self._dense = resources.dense_index(spec, params.dense.index, **params.dense.index_settings())
            self._query_model = resources.embedder(ModelSpec.of(params.dense.query_embedder or spec))
            self._dense.check_query_model(self._query_model.identity)  # refuse a mismatch before any query
        if params.bm25 is not None:
            c = params.bm25
            self._bm25 = resources.bm25_index(c.tokenizer, c.k1, c.b, c.idf, c.stem, c.stopwords,
                                              accents=c.accents, letters=c.letters)
        self._prepared: dict[str, SearchBatch] = {}  # channel -> the prepared questions' batch (see prepare)
        self._looser: Retrieve | None = None  # the relax rule's second search (its filter checked here, at load)
        if params.relax is not None:
            looser = RetrieveParams(**relaxed_settings(params, params.relax))
            self._looser = Retrieve(f"{name}.relax", looser, resources)

    def prepare(self, questions: Sequence[str]) -> None:
        """Search the questions in one batch per channel, when the query loop first needs one.

        Nothing is searched or counted here: ``run`` still asks :meth:`shared` once per
        channel and query, and only on a miss does the batch run, for every prepared question
        no other variant has searched yet. So sharing counts, and every number, are what
        they are without prepare; a variant whose searches are all reused searches nothing.
        """
        searches = self._searches()
        unique = list(dict.fromkeys(questions))
        self._prepared = {}
        if self._filter is not None:
            return  # each query searches its own allowed id set
        for part, _ in self.parts():
            skip: Callable[[str], bool] = partial(self._searched_elsewhere, part)
            self._prepared[part["search"]] = SearchBatch(unique, searches[part["search"]], skip)

    def _searched_elsewhere(self, part: dict[str, Any], question: str) -> bool:
        return self.has_shared(part, (question,))

    @classmethod
    def shared_parts(cls, params: RetrieveParams) -> list[tuple[dict[str, Any], tuple[str, ...]]]:
        """One channel search each: what other variants (other fusion settings) may share."""
        parts: list[tuple[dict[str, Any], tuple[str, ...]]] = []
        filtered = {"filters": params.filters} if params.filters is not None else {}
        deps = (QUERIES, QUESTION, *(state_fields(parse_filters(params.filters)) if filtered else ()))
        for channel in CHANNELS:
            c = getattr(params, channel)
            if c is not None:
                parts.append(({"search": channel, **c.model_dump(mode="json", exclude={"weight"}), **filtered},
                              deps))
        return parts

    def run(self, state: Mapping[str, Any]) -> dict[str, Any]:
        queries = list(state[QUERIES]) or [state[QUESTION]]
        fused, channel_hits, _ = self.search(queries, self._allowed_for(state))
        if self.params.relax is None:
            return {RETRIEVED: fused, CHANNEL_HITS: channel_hits}
        fused, channel_hits, record = relax(self.params, (fused, channel_hits), partial(self._looser_search, queries,
                                                                                        state))
        return {RETRIEVED: fused, CHANNEL_HITS: channel_hits, RETRIEVAL_RELAXED: record.to_dict()}

    def _looser_search(self, queries: list[str], state: Mapping[str, Any]) -> tuple[list[Hit], dict[str, list[Hit]]]:
        """The relax rule's second search, by a node of the loosened settings (built with this one; same memo and
        context, so variants running the same looser search share it)."""
        looser = self._looser
        assert looser is not None  # run() searches again only with a relax rule
        looser.work, looser.context = self.work, self.context
        return looser.search(queries, looser._allowed_for(state))[:2]

    def _allowed_for(self, state: Mapping[str, Any]) -> tuple[str, frozenset[str]] | None:
        """The filter resolved with the query's record values: (its key, the allowed document ids)."""
        if self._filter is None:
            return None
        values = record_values(self._filter.cond, state)
        return self._filter.key(values), self._filter.allowed(values)

    def search(self, queries: list[str], allowed: tuple[str, frozenset[str]] | None = None
               ) -> tuple[list[Hit], dict[str, list[Hit]], float]:
        """The fused (and deduplicated) top ``top_k``, each channel's ranking, and the milliseconds the
        channel searches took when they were computed (a search another variant ran counts its own time,
        so the figure does not depend on which variant ran first). ``allowed``: a resolved filter."""
        searches = self._searches()
        inputs: Any = tuple(queries) if allowed is None else (tuple(queries), allowed[0])
        channels: dict[str, list[list[Hit]]] = {}
        found: dict[str, Searched] = {}
        search_ms = 0.0
        for part, _ in self.parts():
            channel = part["search"]
            batch = self._prepared.get(channel)
            if batch is not None and allowed is None and len(queries) == 1 and queries[0] in batch:
                compute = partial(batch.timed_hits, queries[0])
            else:
                compute = partial(timed, partial(searches[channel], allowed=allowed), queries)
            found[channel] = self.shared(part, inputs, partial(searched, compute))
            channels[channel] = found[channel].lists
            search_ms += found[channel].ms
        p = self.params
        rankings = [r for lists in channels.values() for r in lists]
        weights = [getattr(p, ch).weight for ch, lists in channels.items() for _ in lists]
        limit = None if p.dedupe is not None else p.top_k  # dedupe needs the whole fused ranking
        # fusion's array path takes two rankings at most: only then are the shared columns built
        columns = [c for f in found.values() for c in f.columns] if len(rankings) == 2 else None
        if len(rankings) == 1:
            fused = rankings[0]
        elif p.fusion.method == "rrf":
            fused = rrf(rankings, weights, p.fusion.k, limit=limit, columns=columns)
        else:
            fused = weighted(rankings, weights, p.fusion.norm, p.fusion.missing, limit=limit, columns=columns)
        channel_hits = {ch: (lists[0] if len(lists) == 1 else
                             rrf(lists, [1.0] * len(lists), p.fusion.k,
                                 columns=found[ch].columns if len(lists) == 2 else None))
                        for ch, lists in channels.items()}
        return dedupe(fused, p.dedupe)[:p.top_k], channel_hits, search_ms

    def _searches(self) -> dict[str, Callable[..., list[list[Hit]]]]:
        """Each channel's search by name (a configured channel only is ever asked for)."""
        out: dict[str, Callable[..., list[list[Hit]]]] = {"dense": self._dense_search, "bm25": self._bm25_search}
        if self._title is not None:
            out["title"] = self._title.search
        return out

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
        if positions is None:
            found = self._bm25.search_many(queries, self._unit_k(bm25.top_k))
        else:
            found = [self._bm25.search(q, self._unit_k(bm25.top_k), allowed=positions) for q in queries]
        return [self._to_hits(f, bm25.top_k) for f in found]

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
