"""Graph retrieval nodes: ``graph_local`` (entities and their neighbourhood) and ``graph_global`` (communities).

Both build (or load from the cache) the entity graph of the variant's passages
(``evalkit.index.entity_graph``; parameters under ``graph:``) and write ``retrieved``
(passage-level ``Hit`` list, best first, ties by id) and ``channel_hits``.

``graph_local`` links the query's entities to graph nodes (exact, alias, then e5
embedding similarity), expands breadth-first up to ``depth`` hops with a per-hop
``decay`` and per-relation weights, and scores passages by the entities they contain
(see ``evalkit.index.graph_search``). It also writes ``graph_entities`` (what linked,
and how) and ``graph_evidence`` (``A [co_occurs] B (doc-id)`` lines, at most
``max_evidence``).

``graph_global`` detects communities (Leiden when installed, else Louvain; seeded),
matches the query against each community's extractive summary with e5, and ranks the
passages of the ``top_communities`` best communities by ``sum_c sim(q, c) * (l *
membership(p, c) + (1 - l) * closeness(q, p))``, where ``l`` is ``membership_weight``
(default 0.5) and ``closeness`` the e5 query-passage cosine min-max scaled over the
candidates (passage vectors come from the shared embedding cache, so a dense index over
the same chunks costs nothing extra; ``membership_weight: 1`` skips them). It writes ``graph_communities`` (the matched
communities).

**Fusion with dense/BM25.** Either node can fuse its own ranking with a ranking an
earlier node wrote: ``fuse_with: retrieved`` RRF-fuses (``fusion: {k, weight,
fuse_weight}``) the graph ranking with the incoming ``retrieved`` list, so a hybrid
``retrieve`` node followed by ``graph_local`` is "hybrid + graph". ``channel_hits`` then
holds the earlier channels plus ``graph`` (the graph's own ranking), so per-channel
analysis sees the graph as one more channel. ``dedupe: {by: document, keep: best_rank |
most_hits}`` keeps one passage per document of the final ranking before the ``top_k`` cut
(``evalkit.nodes.dedupe``). ``filters:`` (as on ``retrieve``, ``evalkit.index.filters``) keeps
the ranking written, the fused one included, and ``graph_evidence`` to the documents it lets
through: a tenant-filtered ``retrieve`` followed by an unfiltered graph node leaks. YAML::

    nodes:
      retrieve: {type: retrieve, params: {dense: {}, bm25: {}}}
      graph:
        type: graph_local
        params:
          graph: {mode: fast, chunk_weight: 0.3, aliases: {Acme Corp: [ACME, 艾克美]}}
          depth: 2
          decay: 0.5
          fuse_with: retrieved
    edges: {start: retrieve, retrieve: graph, graph: end}
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import Field

from evalkit.graph.node import Node, NodeParams, register_node
from evalkit.graph.schema import (
    CHANNEL_HITS,
    GRAPH_COMMUNITIES,
    GRAPH_ENTITIES,
    GRAPH_EVIDENCE,
    QUERIES,
    QUESTION,
    RETRIEVED,
    Contract,
    Role,
)
from evalkit.index.communities import CommunitySpec
from evalkit.index.entity_graph import GraphSpec
from evalkit.index.filters import (
    DocumentFilter,
    parse_filters,
    record_values,
    state_fields,
)
from evalkit.index.graph_search import LocalGraphSearch, cosine_top
from evalkit.models.embedders import ModelSpec
from evalkit.nodes.dedupe import Dedupe, dedupe
from evalkit.nodes.filtering import Filtered
from evalkit.nodes.fusion import rrf
from evalkit.records import Hit


class LinkParams(NodeParams):
    """Entity linking: exact and alias always; e5 similarity for what is still unlinked."""

    embedding: bool = Field(default=True, description="link still-unlinked mentions by embedding similarity")
    embedder: str | ModelSpec = Field(default="e5", description="the model of embedding links")
    threshold: float = Field(default=0.9, ge=-1, le=1, description="minimum cosine (e5, name vs mention)")
    candidates: int = Field(default=10, ge=1, description="nodes compared per mention (by character bigrams)")


class GraphFusion(NodeParams):
    """RRF of this node's ranking (``weight``) with the ``fuse_with`` ranking (``fuse_weight``)."""

    k: int = Field(default=60, ge=0, description="RRF k")
    weight: float = Field(default=1.0, ge=0, description="RRF weight of this node's own ranking")
    fuse_weight: float = Field(default=1.0, ge=0, description="RRF weight of the fuse_with ranking")


class GraphSearchParams(NodeParams):
    """The local graph search (shared by ``graph_local`` and the scheduler's graph tool)."""

    graph: GraphSpec = Field(default=GraphSpec(), description="how the entity graph is built (cached per "
                             "corpus, chunking and these settings)")
    depth: int = Field(default=2, ge=0, le=4, description="hops from the linked entities")
    decay: float = Field(default=0.5, gt=0, le=1, description="score factor per hop")
    relation_weights: dict[str, float] = Field(default_factory=lambda: {"co_occurs": 1.0},
                                               description="per relation type; unlisted types weigh 1.0")
    max_neighbors: int = Field(default=30, ge=1, description="strongest edges followed per expanded node")
    hub_share: float = Field(default=0.05, gt=0, le=1,
                             description="entities in more than this share of passages are not expanded through")
    hub_min_passages: int = Field(default=5, ge=1, description="...unless they are in at most this many passages")
    link: LinkParams = Field(default=LinkParams(), description="how the query's entities are linked to the graph")
    top_k: int = Field(default=100, ge=1, description="passages in the graph ranking")


_DEDUPE_DOC = ("keep one passage per document of the final ranking before the top_k cut "
               "(omit: keep every passage)")


def node_filter(name: str, params: Any, resources: Any) -> DocumentFilter | None:
    """The bound filter of a graph node (None without ``filters``)."""
    if params.filters is None:
        return None
    return DocumentFilter(params.filters, resources.corpus.documents, f"node '{name}': filters")


def allowed_docs(flt: DocumentFilter | None, state: Mapping[str, Any]) -> frozenset[str] | None:
    """The document ids this query may see (None: no filter)."""
    return None if flt is None else flt.allowed(record_values(flt.cond, state))


class GraphLocalParams(GraphSearchParams, Filtered):
    max_evidence: int = Field(default=20, ge=0, description="graph_evidence lines written (0: none)")
    fuse_with: str | None = Field(default=None, description="state field holding a ranking to RRF-fuse with")
    fusion: GraphFusion = Field(default=GraphFusion(), description="the RRF with fuse_with")
    dedupe: Dedupe | None = Field(default=None, description=_DEDUPE_DOC)


class GlobalSearchParams(NodeParams):
    """The global (community) search (shared by ``graph_global`` and the scheduler's graph_global tool)."""

    graph: GraphSpec = Field(default=GraphSpec(), description="how the entity graph is built (shared with "
                             "graph_local when the settings are equal)")
    communities: CommunitySpec = Field(default=CommunitySpec(), description="community detection and summaries")
    embedder: str | ModelSpec = Field(default="e5", description="matches the query to community summaries "
                                      "and passages")
    top_communities: int = Field(default=3, ge=1, description="communities whose passages are ranked")
    membership_weight: float = Field(default=0.5, ge=0, le=1,
                                     description="share of community membership (vs query similarity) in scores")
    top_k: int = Field(default=100, ge=1, description="passages in the graph ranking")


class GraphGlobalParams(GlobalSearchParams, Filtered):
    fuse_with: str | None = Field(default=None, description="state field holding a ranking to RRF-fuse with")
    fusion: GraphFusion = Field(default=GraphFusion(), description="the RRF with fuse_with")
    dedupe: Dedupe | None = Field(default=None, description=_DEDUPE_DOC)


def local_searcher(params: GraphSearchParams, resources: Any) -> LocalGraphSearch:
    """The local graph search for these params (graph from the cache, e5 for embedding links)."""
    graph = resources.graph_index(params.graph)
    embedder = resources.embedder(ModelSpec.of(params.link.embedder)) if params.link.embedding else None
    return LocalGraphSearch(graph, params, embedder)


def with_fuse_read(base: Contract, params: GraphLocalParams | GraphGlobalParams) -> Contract:
    """A graph node's reads plus, with ``fuse_with``, the ranking it fuses with (config loading checks
    that an upstream node writes it) and the channels that ranking came from (when present)."""
    extra = frozenset(state_fields(parse_filters(params.filters))) if params.filters is not None else frozenset()
    if not params.fuse_with:
        return Contract(base.reads | extra, base.optional_reads, base.writes, base.optional_writes)
    return Contract(base.reads | {params.fuse_with} | extra, base.optional_reads | {CHANNEL_HITS}, base.writes,
                    base.optional_writes)


def fuse(node: Any, own: list[Hit], state: Mapping[str, Any],
         allowed: frozenset[str] | None = None) -> tuple[list[Hit], dict[str, list[Hit]]]:
    """``retrieved`` and ``channel_hits`` of a graph node: its own ranking, or RRF with ``fuse_with``;
    ``allowed`` (a filter's document ids) also applies to the ranking fused with."""
    p = node.params
    if allowed is not None:
        own = [h for h in own if h.doc_id in allowed]
    if not p.fuse_with:
        return dedupe(own, p.dedupe)[: p.top_k], {"graph": own}
    other = state[p.fuse_with]
    if not isinstance(other, (list, tuple)) or not all(isinstance(h, Hit) for h in other):
        from evalkit.graph.graph import GraphError

        raise GraphError(f"node '{node.name}': fuse_with field '{p.fuse_with}' is not a ranking (a list of Hit)")
    if allowed is not None:
        other = [h for h in other if h.doc_id in allowed]
    fused = rrf([list(other), own], [p.fusion.fuse_weight, p.fusion.weight], p.fusion.k)
    return dedupe(fused, p.dedupe)[: p.top_k], {**dict(state.get(CHANNEL_HITS) or {}), "graph": own}


@register_node
class GraphLocal(Node[GraphLocalParams]):
    type = "graph_local"
    role = Role.RETRIEVER
    reads = (QUERIES, QUESTION)
    writes = (RETRIEVED, CHANNEL_HITS, GRAPH_ENTITIES, GRAPH_EVIDENCE)
    Params = GraphLocalParams

    @classmethod
    def contract(cls, params: GraphLocalParams) -> Contract:
        return with_fuse_read(super().contract(params), params)

    def __init__(self, name: str, params: GraphLocalParams, resources: Any = None):
        super().__init__(name, params, resources)
        self.searcher = local_searcher(params, resources)
        self._filter = node_filter(name, params, resources)

    def run(self, state: Mapping[str, Any]) -> dict[str, Any]:
        queries = list(state["queries"]) or [state["question"]]
        allowed = allowed_docs(self._filter, state)
        found = self.searcher.search(queries, self.params.max_evidence, allowed)
        own = [Hit(pid, doc, score) for pid, doc, score in found.passages]
        retrieved, channels = fuse(self, own, state, allowed)
        return {"retrieved": retrieved, "channel_hits": channels, "graph_entities": found.entities,
                "graph_evidence": found.evidence}


@register_node
class GraphGlobal(Node[GraphGlobalParams]):
    type = "graph_global"
    role = Role.RETRIEVER
    reads = (QUERIES, QUESTION)
    writes = (RETRIEVED, CHANNEL_HITS, GRAPH_COMMUNITIES)
    Params = GraphGlobalParams

    @classmethod
    def contract(cls, params: GraphGlobalParams) -> Contract:
        return with_fuse_read(super().contract(params), params)

    def __init__(self, name: str, params: GraphGlobalParams, resources: Any = None):
        super().__init__(name, params, resources)
        self.graph = resources.graph_index(params.graph)
        self.communities = resources.graph_communities(params.graph, params.communities).items
        self.embedder = resources.embedder(ModelSpec.of(params.embedder))
        self.vectors = self.embedder.encode_passages([c.summary for c in self.communities])
        self.passages = resources.passages()
        self._pids = sorted({pid for c in self.communities for pid in c.passages})
        self._row = {pid: i for i, pid in enumerate(self._pids)}
        self._pvecs = (self.embedder.encode_passages([self.passages.text(pid) for pid in self._pids])
                       if params.membership_weight < 1 else None)
        self._filter = node_filter(name, params, resources)

    def run(self, state: Mapping[str, Any]) -> dict[str, Any]:
        queries = list(state["queries"]) or [state["question"]]
        allowed = allowed_docs(self._filter, state)
        own, matched = self.search(queries, allowed)
        retrieved, channels = fuse(self, own, state, allowed)
        return {"retrieved": retrieved, "channel_hits": channels, "graph_communities": matched}

    def search(self, queries: list[str], allowed: frozenset[str] | None = None) -> tuple[list[Hit], list[dict]]:
        """The passages of the best-matching communities, ranked (only ``allowed`` documents' when given),
        and the matched communities as ``graph_communities`` records them."""
        qvecs = self.embedder.encode_queries(queries)
        sims = cosine_top(qvecs, self.vectors)
        order = sorted(range(len(self.communities)), key=lambda i: (-float(sims[i]), self.communities[i].id))
        chosen = order[: self.params.top_communities]
        lam = self.params.membership_weight
        closeness = self._closeness(qvecs, [p for i in chosen for p in self.communities[i].passages])
        scores: dict[str, float] = {}
        for i in chosen:
            for pid, membership in self.communities[i].passages.items():
                part = lam * membership + (1 - lam) * closeness.get(pid, 0.0)
                scores[pid] = scores.get(pid, 0.0) + float(sims[i]) * part
        ranked = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))[: self.params.top_k]
        if allowed is not None:
            ranked = [(pid, s) for pid, s in scores.items() if self.graph.passage_doc[pid] in allowed]
            ranked = sorted(ranked, key=lambda kv: (-kv[1], kv[0]))[: self.params.top_k]
        own = [Hit(pid, self.graph.passage_doc[pid], s) for pid, s in ranked]
        matched = [{"id": self.communities[i].id, "score": round(float(sims[i]), 6), "size": self.communities[i].size,
                    "top_entities": [self.graph.name(e) for e in self.communities[i].top_entities],
                    "summary": self.communities[i].summary.split("\n")[0]} for i in chosen]
        return own, matched

    def _closeness(self, qvecs: Any, pids: list[str]) -> dict[str, float]:
        """Query-passage cosine, min-max scaled over the candidate passages (empty without vectors)."""
        if self._pvecs is None or not pids:
            return {}
        pids = sorted(set(pids))
        cos = cosine_top(qvecs, self._pvecs[[self._row[p] for p in pids]])
        lo, hi = float(cos.min()), float(cos.max())
        return {p: (float(c) - lo) / (hi - lo) if hi > lo else 1.0 for p, c in zip(pids, cos)}
