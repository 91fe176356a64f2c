"""The entity graph index: entities extracted from every passage, linked by their relations.

``build_or_load_entity_graph`` runs the configured extractor (``evalkit.index.entities``)
over the retrievable passages (parents under parent-child chunking, else the chunks)
and builds a ``networkx.MultiDiGraph``:

- a node per normalised entity id, with ``name`` (its most frequent spelling), ``key``
  (the normalised form used for matching), ``label``, ``surfaces``, ``chunks``
  (passage id -> mentions), ``docs`` and ``freq``;
- an edge per (entity pair, relation type), keyed by the relation type, with
  ``weight`` (summed over passages), ``sentences``, ``chunks`` and ``docs``.

Why a *Multi* *Di* graph: parallel edges keep relation types apart (``co_occurs`` from
the ``fast`` mode, typed relations such as ``supplies`` from the ``llm`` mode, each with
its own weight and provenance), and direction matters for typed relations ("A supplies
B": stored from source to target, ``directed=True``; their edges also carry
``evidence``, passage id -> the spans that state it, and ``confidence``, the highest
seen). ``co_occurs`` is symmetric: it is stored once, from the smaller id to the
larger, with ``directed=False``. Retrieval walks every edge both ways.

The graph is cached on disk like the dense and BM25 indexes: the folder name hashes the
corpus, the chunking, the extraction mode and parameters, the alias table and the
extractor identity (jieba version, extractor version; in ``llm`` mode also the prompt
version, the LLM's identity and sampling settings, never its API key variable).
``meta`` carries graph quality statistics: nodes, edges, isolated-node share, mean
degree, largest component share, extraction time and LLM calls/tokens (0 in ``fast``
mode; ``llm`` mode adds failures, cache hits and the relations it dropped, see
``evalkit.index.llm_entities``). The runner puts ``meta`` (with these ``stats``) in the
run summary and on the MLflow run as the ``index.entity_graph`` tag. An ``llm`` build in
which a passage failed transiently (HTTP error, timeout) is not cached: the next run
tries those passages again (the others come from the LLM answer cache).

``llm`` mode in a graph YAML (under a ``graph_local``/``graph_global`` node's params)::

    graph:
      mode: llm
      llm: {backend: openai, base_url: http://localhost:8000/v1, model: qwen2.5-7b-instruct,
            api_key_env: OPENAI_API_KEY, max_tokens: 1024}   # or {backend: local}
      entity_types: [organization, person, product, component, location]
      relation_types: [supplies, made_by, part_of, uses, located_in]
      min_confidence: 0.5     # below: dropped
      full_confidence: 0.8    # [0.5, 0.8): kept, weight = confidence (or grey_weight)
      aliases: {Acme Corp: [ACME, 艾克美]}
"""
from __future__ import annotations

import json
import logging
import math
import time
from collections import Counter
from pathlib import Path
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

from evalkit.cachestore import Uncached, load_or_build
from evalkit.index.entities import (
    EXTRACTORS,
    PLANNED_MODES,
    AliasTable,
    Mention,
    Relation,
    ident,
    make_extractor,
    normalise,
    split_sentences,
)
from evalkit.index.llm_entities import (
    DEFAULT_ENTITY_TYPES,
    DEFAULT_RELATION_TYPES,
    NEEDS_LLM,
    llm_key,
    needs_model,
)
from evalkit.llm.base import LLMSpec

INDEX_TYPE = "entity_graph"
# parameters of the llm mode only: not part of a fast graph's cache key
LLM_FIELDS = frozenset({"llm", "entity_types", "relation_types", "min_confidence", "full_confidence", "grey_weight",
                        "max_chars"})
logger = logging.getLogger(__name__)


class GraphSpec(BaseModel):
    """How the entity graph is built: extraction ``mode`` and its parameters, plus aliases."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    mode: str = Field(default="fast", description="extraction mode: fast (rules, offline) or llm (an LLM reads "
                                                   "every passage; needs llm)")
    sentence_weight: float = Field(default=1.0, gt=0, description="edge weight per shared sentence")
    chunk_weight: float = Field(default=0.3, ge=0, description="edge weight when two entities share only the chunk")
    noun_compounds: bool = Field(default=True, description="mode fast: English noun compounds are entities")
    title_as_entity: bool = Field(default=False, description="the document title is an entity in every sentence")
    strip_legal_suffixes: bool = Field(default=True, description="Ltd., 有限公司... are dropped when naming "
                                       "entities")
    min_chars: int = Field(default=2, ge=1, description="shorter names are not entities")
    aliases: dict[str, list[str]] = Field(default_factory=dict, description="{canonical: [variant, ...]}")
    # -- mode llm ------------------------------------------------------------------------------
    llm: LLMSpec | None = Field(default=None, validate_default=True,
                                description="mode llm: the LLM that extracts entities and relations")
    entity_types: list[str] = Field(default_factory=lambda: list(DEFAULT_ENTITY_TYPES),
                                    description="mode llm: entity types named in the prompt (others become 'other')")
    relation_types: list[str] = Field(default_factory=lambda: list(DEFAULT_RELATION_TYPES),
                                      description="mode llm: relation types kept ([] = any)")
    min_confidence: float = Field(default=0.5, ge=0, le=1, description="mode llm: relations below are dropped")
    full_confidence: float = Field(default=0.8, ge=0, le=1,
                                   description="mode llm: relations below (grey zone) get a lower weight")
    grey_weight: float | None = Field(default=None, gt=0, le=1,
                                      description="mode llm: weight of a grey-zone relation (unset: its confidence)")
    max_chars: int = Field(default=4000, ge=200, description="mode llm: passage characters shown to the LLM")

    @field_validator("mode")
    @classmethod
    def _known_mode(cls, mode: str) -> str:
        if mode in PLANNED_MODES:
            raise ValueError(PLANNED_MODES[mode])
        if mode not in EXTRACTORS:
            from evalkit.errors import did_you_mean

            raise ValueError(f"unknown extraction mode '{mode}'{did_you_mean(mode, EXTRACTORS)}")
        return mode

    @field_validator("llm")
    @classmethod
    def _llm_for_llm_mode(cls, llm: LLMSpec | None, info: ValidationInfo) -> LLMSpec | None:
        if info.data.get("mode") == "llm":
            if llm is None:
                raise ValueError(NEEDS_LLM)
            if problem := needs_model(llm):
                raise ValueError(problem)
        return llm

    @model_validator(mode="after")
    def _aliases_ok(self) -> GraphSpec:
        self.alias_table()  # raises ValueError on an empty or doubly-listed alias
        if self.full_confidence < self.min_confidence:
            raise ValueError(f"full_confidence ({self.full_confidence}) is below min_confidence "
                             f"({self.min_confidence}); the grey zone is [min_confidence, full_confidence)")
        return self

    def alias_table(self) -> AliasTable:
        return AliasTable(self.aliases, self.strip_legal_suffixes)

    def extraction(self) -> dict[str, Any]:
        """Mode and parameters, as in the cache key and ``meta`` (the alias table is keyed by its
        hash instead; of the LLM only what changes its answers, see ``llm_key``)."""
        if self.mode != "llm":
            return self.model_dump(exclude={"aliases", *LLM_FIELDS})
        if self.llm is None:  # _llm_for_llm_mode refuses this; a spec built with model_construct may not
            raise ValueError(NEEDS_LLM)
        return {**self.model_dump(exclude={"aliases", "llm"}), "llm": llm_key(self.llm)}

    def extractor_params(self) -> dict[str, Any]:
        """What ``make_extractor`` needs: every parameter, the LLM spec as is."""
        return {**self.model_dump(exclude={"aliases", "llm"}), "llm": self.llm}

    def key(self) -> str:
        return self.model_dump_json()


class EntityGraph:
    """The graph plus the lookups retrieval needs; ``meta`` describes it (and is the cache key)."""

    def __init__(self, graph: Any, sentences: dict[str, list[list[Any]]], passage_doc: dict[str, str],
                 meta: dict[str, Any], spec: GraphSpec, folder: Path | None = None):
        self.graph, self.sentences, self.passage_doc = graph, sentences, passage_doc
        self.meta, self.spec, self.folder = meta, spec, folder
        self.aliases = spec.alias_table()
        self.extractor = make_extractor(spec.mode, spec.extractor_params(), self.aliases)  # query-time mentions
        self.n_passages = max(1, int(meta.get("n", len(passage_doc))))
        self.adjacency: dict[str, list[tuple[str, str, float]]] = {n: [] for n in graph.nodes}
        for u, v, rel, data in graph.edges(keys=True, data=True):
            self.adjacency[u].append((v, rel, float(data["weight"])))
            if u != v:
                self.adjacency[v].append((u, rel, float(data["weight"])))
        for lst in self.adjacency.values():
            lst.sort(key=lambda t: (-t[2], t[0], t[1]))

    def name(self, node: str) -> str:
        return self.graph.nodes[node]["name"]

    def df(self, node: str) -> int:
        """In how many passages the entity occurs."""
        return len(self.graph.nodes[node]["chunks"])

    def idf(self, node: str) -> float:
        return math.log(1.0 + self.n_passages / max(1, self.df(node)))


def graph_passage_ids(passages: Any) -> list[str]:
    """The passages the graph is built over: parents under parent-child chunking, else the chunks."""
    return list(passages.parents) if passages.parents else [u.id for u in passages.units]


def build_entity_graph(passages: Any, spec: GraphSpec,
                       extractor: Any = None) -> tuple[Any, dict[str, list[list[Any]]], dict[str, str]]:
    """Extract every passage and assemble the MultiDiGraph (deterministic: sorted nodes and edges).

    An extractor with ``extract_all`` (the ``llm`` one) gets all passages at once (it runs
    its LLM calls concurrently); the others are called passage by passage.
    """
    import networkx as nx

    aliases = spec.alias_table()
    extract = extractor if extractor is not None else make_extractor(spec.mode, spec.extractor_params(), aliases)
    nodes: dict[str, dict[str, Any]] = {}
    edges: dict[tuple[str, str, str], dict[str, Any]] = {}
    sentences: dict[str, list[list[Any]]] = {}
    passage_doc: dict[str, str] = {}
    ids = graph_passage_ids(passages)
    texts = [passages.text(pid) for pid in ids]
    batch = getattr(extract, "extract_all", None)
    extracted = batch(texts) if batch is not None else [extract(t) for t in texts]
    for pid, text, (mentions, relations) in zip(ids, texts, extracted):
        doc = passages.doc_of(pid)
        passage_doc[pid] = doc
        sents = split_sentences(text)
        title = passages.titles.get(doc, "") if spec.title_as_entity else ""
        if title:
            tid = aliases.resolve(ident(normalise(title, spec.strip_legal_suffixes)))
            relations = _title_relations(tid, mentions, relations, len(sents), spec)
            mentions = [m for m in mentions if m.id != tid] + [
                Mention(title, tid, normalise(title, spec.strip_legal_suffixes), "title", i) for i in range(len(sents))]
        per_sentence: dict[int, list[str]] = {}
        for m in mentions:
            node = nodes.setdefault(m.id, {"surfaces": Counter(), "labels": Counter(), "keys": Counter(),
                                           "chunks": Counter(), "docs": set()})
            node["surfaces"][m.surface] += 1
            node["labels"][m.label] += 1
            node["keys"][m.key] += 1
            node["chunks"][pid] += 1
            node["docs"].add(doc)
            per_sentence.setdefault(m.sentence, [])
            if m.id not in per_sentence[m.sentence]:
                per_sentence[m.sentence].append(m.id)
        sentences[pid] = [[s, sorted(per_sentence.get(i, []))] for i, s in enumerate(sents)]
        for r in relations:
            e = edges.setdefault((r.source, r.target, r.type), {"weight": 0.0, "sentences": 0, "chunks": {},
                                                                "docs": set()})
            e["weight"] += r.weight
            e["sentences"] += r.sentences
            e["chunks"][pid] = round(e["chunks"].get(pid, 0.0) + r.weight, 6)
            e["docs"].add(doc)
            if r.evidence:
                spans = e.setdefault("evidence", {}).setdefault(pid, [])
                if r.evidence not in spans:
                    spans.append(r.evidence)
            if r.confidence is not None:
                e["confidence"] = max(e.get("confidence", 0.0), r.confidence)
    g = nx.MultiDiGraph()
    for nid in sorted(nodes):
        n = nodes[nid]
        g.add_node(nid, name=_most_common(n["surfaces"]), key=_most_common(n["keys"]),
                   label=_most_common(n["labels"]), surfaces=dict(sorted(n["surfaces"].items())),
                   chunks=dict(sorted(n["chunks"].items())), docs=sorted(n["docs"]),
                   freq=sum(n["chunks"].values()))
        if nid in aliases.names:
            g.nodes[nid]["name"] = aliases.names[nid]
    for (u, v, rel) in sorted(edges):
        e = edges[(u, v, rel)]
        extra = {"evidence": dict(sorted(e["evidence"].items()))} if "evidence" in e else {}
        if "confidence" in e:
            extra["confidence"] = e["confidence"]
        g.add_edge(u, v, key=rel, relation=rel, directed=rel != "co_occurs", weight=round(e["weight"], 6),
                   sentences=e["sentences"], chunks=dict(sorted(e["chunks"].items())), docs=sorted(e["docs"]),
                   **extra)
    return g, sentences, passage_doc


def _title_relations(tid: str, mentions: list, relations: list, n_sentences: int, spec: GraphSpec) -> list:
    """The title entity co-occurs with every entity in every sentence that entity is in."""
    counts: Counter[str] = Counter()
    for m in {(m.id, m.sentence) for m in mentions if m.id != tid}:
        counts[m[0]] += 1
    kept = [r for r in relations if tid not in (r.source, r.target)]
    for other, n in sorted(counts.items()):
        a, b = sorted((tid, other))
        kept.append(Relation(a, b, "co_occurs", n * spec.sentence_weight, n))
    return kept


def _most_common(counter: Counter) -> str:
    return min(counter.items(), key=lambda kv: (-kv[1], -len(kv[0]), kv[0]))[0]


def graph_stats(g: Any) -> dict[str, Any]:
    """Quality statistics of a graph (on its undirected simple projection)."""
    import networkx as nx

    h = nx.Graph()
    h.add_nodes_from(g.nodes)
    h.add_edges_from((u, v) for u, v in g.edges() if u != v)
    n = h.number_of_nodes()
    comps = [len(c) for c in nx.connected_components(h)] if n else []
    labels = Counter(d["label"] for _, d in g.nodes(data=True))
    return {"nodes": n, "edges": g.number_of_edges(), "node_pairs": h.number_of_edges(),
            "isolated_share": round(sum(1 for _, d in h.degree() if d == 0) / n, 4) if n else 0.0,
            "mean_degree": round(2 * h.number_of_edges() / n, 3) if n else 0.0,
            "largest_component_share": round(max(comps) / n, 4) if comps else 0.0,
            "components": len(comps), "labels": dict(sorted(labels.items()))}


def build_or_load_entity_graph(passages: Any, spec: GraphSpec, key_meta: dict[str, Any],
                               cache_root: Path) -> EntityGraph:
    """Load the cached graph for this corpus/chunking/spec, or extract and build it."""
    extractor = make_extractor(spec.mode, spec.extractor_params(), spec.alias_table(), cache_root)
    try:
        return _build_or_load(passages, spec, key_meta, Path(cache_root), extractor)
    finally:
        closer = getattr(extractor, "close", None)
        if closer is not None:
            closer()


def _build_or_load(passages: Any, spec: GraphSpec, key_meta: dict[str, Any], cache_root: Path,
                   extractor: Any) -> EntityGraph:
    import networkx as nx

    ids = graph_passage_ids(passages)
    meta = {**key_meta, "index_type": INDEX_TYPE, "extraction": spec.extraction(),
            "aliases_sha256": spec.alias_table().sha256(), "tokenizer": extractor.identity, "n": len(ids)}

    def load(folder: Path, stored: dict[str, Any]) -> EntityGraph:
        data = json.loads((folder / "graph.json").read_text(encoding="utf-8"))
        g = nx.MultiDiGraph()
        for nid, attrs in data["nodes"]:
            g.add_node(nid, **attrs)
        for u, v, key, attrs in data["edges"]:
            g.add_edge(u, v, key=key, **attrs)
        sentences = json.loads((folder / "sentences.json").read_text(encoding="utf-8"))
        return EntityGraph(g, sentences, data["passage_doc"], stored, spec, folder)

    def build(staging: Path) -> dict[str, Any] | Uncached:
        t0 = time.perf_counter()
        g, sentences, passage_doc = build_entity_graph(passages, spec, extractor)
        extraction_s = time.perf_counter() - t0
        stats = {**graph_stats(g), "extraction_s": round(extraction_s, 3), "llm_calls": 0, "llm_tokens": 0,
                 **dict(getattr(extractor, "stats", None) or {}),
                 "mentions": sum(d["freq"] for _, d in g.nodes(data=True))}
        if stats.get("llm_failures_transient"):  # not cached: the next run retries the failed passages
            logger.warning("entity graph not cached: %d passages failed transiently (see stats.llm_failures)",
                           stats["llm_failures_transient"])
            return Uncached(EntityGraph(g, sentences, passage_doc, {**meta, "stats": {
                **stats, "build_s": round(time.perf_counter() - t0, 3)}, "path": None}, spec, None))
        payload = {"nodes": [[n, d] for n, d in g.nodes(data=True)],
                   "edges": [[u, v, k, d] for u, v, k, d in g.edges(keys=True, data=True)], "passage_doc": passage_doc}
        (staging / "graph.json").write_text(json.dumps(payload, ensure_ascii=False), encoding="utf-8")
        (staging / "sentences.json").write_text(json.dumps(sentences, ensure_ascii=False), encoding="utf-8")
        return {"stats": {**stats, "build_s": round(time.perf_counter() - t0, 3)}}

    return load_or_build(cache_root, "graph", meta, load=load, build=build)
