"""What nodes may ask for: passages, indexes and models, built once and shared.

One ``Resources`` object serves a whole invocation (every variant over one corpus):
models load once, indexes build once per (corpus, chunking, model, settings) and are
cached on disk. ``for_variant`` binds the variant's chunking and seed, which is the
view a node receives as ``self.resources``.
"""
from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalkit.cachestore import default_cache_root
from evalkit.index.bm25 import build_or_load_bm25
from evalkit.index.chunking import Passages, chunk_corpus, chunking_id, chunking_key
from evalkit.index.communities import detect_communities
from evalkit.index.corpus import Corpus
from evalkit.index.dense import build_or_load_dense
from evalkit.index.entity_graph import build_or_load_entity_graph
from evalkit.llm.client import LLMClient
from evalkit.models.cache import EmbeddingCache
from evalkit.models.embedders import CachedEmbedder, ModelSpec
from evalkit.models.rerankers import load_reranker
from evalkit.text.tokenize import Tokenizer


@dataclass
class Resources:
    """Shared, lazily built passages, indexes and models for one corpus.

    ``make_judge`` builds a claim judge by name (``evalkit.judges.make_judge``, which the
    runner passes): a node that checks its own answer (``self_check``) asks for one through
    :meth:`VariantResources.judge`, so that nodes never import the evaluator (docs/concepts.md, Layers).
    """

    corpus: Corpus
    cache_root: Path = field(default_factory=default_cache_root)
    make_judge: Callable[..., Any] | None = field(default=None, repr=False)
    _lock: threading.RLock = field(default_factory=threading.RLock, repr=False)
    _built: dict[tuple, Any] = field(default_factory=dict, repr=False)

    def _once(self, key: tuple, build: Any) -> Any:
        """Build a model, index or client once per invocation (results of queries are shared by
        ``evalkit.graph.memo``, not here)."""
        with self._lock:
            if key not in self._built:
                self._built[key] = build()
            return self._built[key]

    def embedding_cache(self) -> EmbeddingCache:
        return self._once(("emb_cache",), lambda: EmbeddingCache(Path(self.cache_root) / "embeddings.sqlite"))

    def embedder(self, spec: ModelSpec) -> CachedEmbedder:
        return self._once(("embedder", spec.key()), lambda: CachedEmbedder.lazy(spec, self.embedding_cache()))

    def reranker(self, spec: ModelSpec) -> Any:
        return self._once(("reranker", spec.key()), lambda: load_reranker(spec, self.embedder))

    def passages(self, chunking: dict[str, Any]) -> Passages:
        return self._once(("passages", chunking_id(chunking)),
                          lambda: chunk_corpus(self.corpus, chunking, self.embedder))

    def index_key(self, chunking: dict[str, Any]) -> dict[str, Any]:
        return {"corpus_sha256": self.corpus.sha256, "chunking": chunking_key(chunking)}

    def dense_index(self, spec: ModelSpec, chunking: dict[str, Any], kind: str = "flat", nlist: int = 64,
                    nprobe: int = 8, seed: int = 0, **hnsw: int) -> Any:
        """The faiss index (``evalkit.index.dense``); ``hnsw`` holds hnsw_m, ef_construction, ef_search."""
        def build() -> Any:
            p = self.passages(chunking)
            return build_or_load_dense(p.unit_texts(), [u.id for u in p.units], self.embedder(spec),
                                       self.index_key(chunking), Path(self.cache_root), kind, nlist, nprobe, seed,
                                       **hnsw)

        return self._once(("dense", spec.key(), chunking_id(chunking), kind, nlist, nprobe, seed,
                           tuple(sorted(hnsw.items()))), build)

    def bm25_index(self, tokenizer: str, chunking: dict[str, Any], k1: float, b: float, idf: str,
                   stem: bool = True, stopwords: bool = True, accents: str = "keep", letters: str = "unicode") -> Any:
        def build() -> Any:
            p = self.passages(chunking)
            tok = Tokenizer(tokenizer, stem, stopwords, accents=accents, letters=letters)
            return build_or_load_bm25(p.unit_texts(), [u.id for u in p.units], tok,
                                      self.index_key(chunking), Path(self.cache_root), k1, b, idf)

        return self._once(("bm25", tokenizer, stem, stopwords, accents, letters, chunking_id(chunking), k1, b, idf),
                          build)

    def graph_index(self, spec: Any, chunking: dict[str, Any]) -> Any:
        """The entity graph (``evalkit.index.entity_graph``) built with ``spec`` over these passages."""
        def build() -> Any:
            return build_or_load_entity_graph(self.passages(chunking), spec, self.index_key(chunking),
                                              Path(self.cache_root))

        return self._once(("graph", spec.key(), chunking_id(chunking)), build)

    def graph_communities(self, spec: Any, community: Any, chunking: dict[str, Any], seed: int = 0) -> Any:
        """Communities (with summaries) of the entity graph; ``.meta`` describes them."""
        return self._once(("graph_communities", spec.key(), community.model_dump_json(), chunking_id(chunking), seed),
                          lambda: detect_communities(self.graph_index(spec, chunking), community, seed))

    def llm(self, spec: Any, purpose: str) -> Any:
        """The ``LLMClient`` for ``spec`` and ``purpose``, built once (its concurrency limit is shared)."""
        return self._once(("llm", spec.model_dump_json(), purpose),
                          lambda: LLMClient(spec, Path(self.cache_root), purpose=purpose))

    def index_metadata(self) -> list[dict[str, Any]]:
        """Metadata of every index built so far (for run tags and the summary)."""
        with self._lock:
            return [v.meta for k, v in self._built.items() if k[0] in ("dense", "bm25", "graph", "graph_communities")]

    def for_variant(self, chunking: dict[str, Any], seed: int = 0, base_dir: Path | None = None) -> VariantResources:
        return VariantResources(self, chunking, seed, base_dir)


@dataclass
class VariantResources:
    """``Resources`` with one variant's chunking and seed bound: what a node sees."""

    shared: Resources
    chunking: dict[str, Any]
    seed: int = 0
    base_dir: Path | None = None  # the graph config's folder: relative paths in params resolve here
    used: list[dict[str, Any]] = field(default_factory=list)

    @property
    def cache_root(self) -> Path:
        return Path(self.shared.cache_root)

    @property
    def corpus(self) -> Corpus:
        """The documents with their metadata (what metadata filters evaluate)."""
        return self.shared.corpus

    def passages(self) -> Passages:
        return self.shared.passages(self.chunking)

    def dense_index(self, spec: ModelSpec, kind: str = "flat", nlist: int = 64, nprobe: int = 8, **hnsw: int) -> Any:
        index = self.shared.dense_index(spec, self.chunking, kind, nlist, nprobe, self.seed, **hnsw)
        self._note(index.meta)
        return index

    def bm25_index(self, tokenizer: str, k1: float, b: float, idf: str, stem: bool = True,
                   stopwords: bool = True, accents: str = "keep", letters: str = "unicode") -> Any:
        index = self.shared.bm25_index(tokenizer, self.chunking, k1, b, idf, stem, stopwords, accents, letters)
        self._note(index.meta)
        return index

    def graph_index(self, spec: Any) -> Any:
        index = self.shared.graph_index(spec, self.chunking)
        self._note(index.meta)
        return index

    def graph_communities(self, spec: Any, community: Any) -> Any:
        found = self.shared.graph_communities(spec, community, self.chunking, self.seed)
        self._note(found.meta)
        return found

    def embedder(self, spec: ModelSpec) -> CachedEmbedder:
        return self.shared.embedder(spec)

    def llm(self, spec: Any, purpose: str) -> Any:
        return self.shared.llm(spec, purpose)

    def reranker(self, spec: ModelSpec) -> Any:
        return self.shared.reranker(spec)

    def judge(self, name: str, **options: Any) -> Any:
        """A claim judge built by the factory the runner gave ``Resources`` (``make_judge``)."""
        if self.shared.make_judge is None:
            raise ValueError(f"no claim judge can be built here (judge {name!r}): pass "
                             "Resources(..., make_judge=evalkit.judges.make_judge), as the runner does")
        return self.shared.make_judge(name, cache_root=self.cache_root, **options)

    def _note(self, meta: dict[str, Any]) -> None:
        if meta not in self.used:
            self.used.append(meta)
