"""Dense retrieval: a faiss inner-product index over normalised passage vectors.

Three kinds, chosen by the channel's ``index:``:

- ``flat`` (the default): exact search over every vector.
- ``ivf``: ``nlist`` k-means clusters (trained with a fixed seed), ``nprobe`` of them searched.
- ``hnsw``: a navigable small-world graph (``hnsw_m`` links per node, built with
  ``ef_construction``, searched with ``ef_search``), built on one thread so the graph,
  and every result, is the same on every run.

IVF and HNSW are approximate: ``benchmarks/scaling.py`` measures their recall@k against
flat. The index is cached on disk under a key made of the corpus hash, the chunking, the
embedder identity and the build settings (search settings are not part of it). Passage
vectors come from the embedding cache (``evalkit.models.cache``, keyed by text), so after
a corpus change only new or edited passages are encoded (``passages_encoded`` in
``meta.json``) and the faiss index is rebuilt from the cached vectors: an HNSW graph or
IVF clusters built by insertion into an old index would differ from a full build's. A warm
load memory-maps the vectors (flat and HNSW vectors with ``faiss.IO_FLAG_MMAP_IFC``, IVF
lists with ``IO_FLAG_MMAP``): they stay in the file and are paged in on use; HNSW's
graph links are read into memory. ``search`` refuses query vectors
from any other embedder, and returns the same hits whether queries come one at a time or
in a batch (faiss scores a batch below ``distance_compute_blas_threshold`` query by query,
with the same code as a single query; batches are cut below it).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from evalkit.cachestore import load_or_build
from evalkit.errors import IndexMismatchError

INDEX_KINDS = ("flat", "ivf", "hnsw")
SEARCH_BATCH = 1024  # queries per faiss call: far below faiss's BLAS threshold (see the module docstring)


class DenseIndex:
    """Passage ids plus a faiss index; ``meta`` says exactly what it was built from."""

    def __init__(self, index: Any, ids: list[str], meta: dict[str, Any], nprobe: int = 8, ef_search: int = 128):
        self.index, self.ids, self.meta = index, ids, meta
        if meta.get("kind") == "ivf":
            index.nprobe = nprobe
        if meta.get("kind") == "hnsw":
            index.hnsw.efSearch = ef_search

    def check_query_model(self, query_model: str) -> None:
        """Raise ``IndexMismatchError`` unless ``query_model`` is the model the index was built with."""
        if query_model != self.meta["embedder"]:
            raise IndexMismatchError(
                f"query embedder '{query_model}' differs from the index's '{self.meta['embedder']}' "
                f"(index built {self.meta.get('created', '?')} at {self.meta.get('path', '?')}); "
                "use the same model on both sides, or rebuild the index with the query model")

    def search(self, query_vecs: np.ndarray, k: int, query_model: str,
               allowed: np.ndarray | None = None) -> list[list[tuple[str, float]]]:
        """Top-k (passage id, cosine) per query, ties broken by id; refuses a foreign query model.

        ``allowed`` (positions in ``ids``) restricts the search to those passages inside faiss
        (an ``IDSelectorBatch``: a metadata filter's pre-filtered id set, ``evalkit.nodes.filters``).
        """
        self.check_query_model(query_model)
        pool = len(self.ids) if allowed is None else len(allowed)
        k = min(k, pool)
        if k <= 0 or len(query_vecs) == 0:
            return [[] for _ in range(len(query_vecs))]
        import faiss

        vecs = np.ascontiguousarray(query_vecs, dtype=np.float32)
        if faiss.cvar.distance_compute_blas_threshold <= SEARCH_BATCH:
            raise RuntimeError("faiss would score a search batch with BLAS, unlike single queries: lower SEARCH_BATCH")
        params: Any = None
        if allowed is not None:
            selector = faiss.IDSelectorBatch(np.ascontiguousarray(allowed, dtype=np.int64))
            kind = self.meta.get("kind")
            # faiss's bundled stubs declare the SearchParameters classes without the keyword arguments
            # (and without SearchParametersHNSW) that its Python wrapper accepts at run time
            if kind == "ivf":
                params = faiss.SearchParametersIVF(sel=selector, nprobe=self.index.nprobe)  # type: ignore[call-arg]
            elif kind == "hnsw":
                params = faiss.SearchParametersHNSW(  # type: ignore[attr-defined]
                    sel=selector, efSearch=self.index.hnsw.efSearch)
            else:
                params = faiss.SearchParameters(sel=selector)  # type: ignore[call-arg]
        out = []
        for i in range(0, len(vecs), SEARCH_BATCH):
            out.extend(self._search(vecs[i:i + SEARCH_BATCH], k, pool, params))
        return out

    def _search(self, vecs: np.ndarray, k: int, pool: int, params: Any = None) -> list[list[tuple[str, float]]]:
        # ask for a few extra so ties at the cut are settled by id, not by faiss's order
        if params is None:
            scores, idx = self.index.search(vecs, min(pool, k + 10))
        else:
            scores, idx = self.index.search(vecs, min(pool, k + 10), params=params)
        out = []
        for row_s, row_i in zip(scores, idx):
            hits = [(self.ids[i], float(s)) for s, i in zip(row_s, row_i) if i >= 0]
            hits.sort(key=lambda h: (-h[1], h[0]))
            out.append(hits[:k])
        return out


def build_or_load_dense(texts: list[str], ids: list[str], embedder: Any, key_meta: dict[str, Any],
                        cache_root: Path, kind: str = "flat", nlist: int = 64, nprobe: int = 8,
                        seed: int = 0, hnsw_m: int = 32, ef_construction: int = 100,
                        ef_search: int = 128) -> DenseIndex:
    """Load the cached index for ``key_meta`` or encode ``texts`` and build it."""
    import faiss

    if kind not in INDEX_KINDS:
        raise ValueError(f"unknown dense index kind '{kind}'; valid: {', '.join(INDEX_KINDS)}")
    meta = {**key_meta, "embedder": embedder.identity, "kind": kind, "dim": embedder.dim, "n": len(ids)}
    if kind == "ivf":
        meta.update(nlist=nlist, seed=seed)
    if kind == "hnsw":
        meta.update(hnsw_m=hnsw_m, ef_construction=ef_construction)

    def load(folder: Path, stored: dict[str, Any]) -> DenseIndex:
        # vectors stay in the file, paged in on use: flat codes (and HNSW's) via MMAP_IFC, IVF lists via MMAP
        mmap = faiss.IO_FLAG_MMAP if kind == "ivf" else faiss.IO_FLAG_MMAP_IFC
        index = faiss.read_index(str(folder / "index.faiss"), mmap | faiss.IO_FLAG_READ_ONLY)
        stored_ids = json.loads((folder / "ids.json").read_text())
        if len(stored_ids) != index.ntotal:
            raise ValueError(f"ids.json holds {len(stored_ids)} ids for {index.ntotal} vectors")
        return DenseIndex(index, stored_ids, stored, nprobe, ef_search)

    def build(staging: Path) -> dict[str, Any]:
        before = getattr(embedder, "encoded", None)  # a CachedEmbedder counts the texts it sends to the model
        vecs = embedder.encode_passages(texts).astype(np.float32)
        index, extra = _build_index(vecs, embedder.dim, kind, len(ids), nlist, seed, hnsw_m, ef_construction)
        faiss.write_index(index, str(staging / "index.faiss"))
        (staging / "ids.json").write_text(json.dumps(ids))
        if before is not None:  # texts the model encoded for this build; every other vector came from the cache
            extra["passages_encoded"] = embedder.encoded - before
        return extra

    return load_or_build(cache_root, "dense", meta, load=load, build=build)


def _build_index(vecs: np.ndarray, dim: int, kind: str, n: int, nlist: int, seed: int, hnsw_m: int,
                 ef_construction: int) -> tuple[Any, dict[str, Any]]:
    """A faiss index of ``kind`` holding ``vecs``, and what meta.json should add about it."""
    import faiss

    if kind == "flat":
        index = faiss.IndexFlatIP(dim)
        index.add(vecs)
        return index, {}
    if kind == "ivf":
        nlist = max(1, min(nlist, n // 4 or 1))
        quantizer = faiss.IndexFlatIP(dim)
        ivf = faiss.IndexIVFFlat(quantizer, dim, nlist, faiss.METRIC_INNER_PRODUCT)
        ivf.cp.seed = seed
        ivf.train(vecs)
        ivf.add(vecs)
        return ivf, {"nlist_effective": nlist}
    hnsw = faiss.IndexHNSWFlat(dim, hnsw_m, faiss.METRIC_INNER_PRODUCT)
    hnsw.hnsw.efConstruction = ef_construction
    threads = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)  # a parallel insert order would make the graph differ run to run
    try:
        hnsw.add(vecs)
    finally:
        faiss.omp_set_num_threads(threads)
    return hnsw, {}
