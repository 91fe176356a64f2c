"""Dense retrieval: a faiss inner-product index over normalised passage vectors.

``flat`` (exact search, the default) or ``ivf`` (``nlist`` clusters trained with a
fixed seed, ``nprobe`` searched). The index is cached on disk under a key made of the
corpus hash, the chunking, the embedder identity and the index settings; ``meta.json``
beside it records them. ``search`` refuses query vectors from any other embedder.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from evalkit.errors import IndexMismatchError
from evalkit.index.store import cache_dir_for, read_meta, write_meta

INDEX_KINDS = ("flat", "ivf")


class DenseIndex:
    """Passage ids plus a faiss index; ``meta`` says exactly what it was built from."""

    def __init__(self, index: Any, ids: list[str], meta: dict[str, Any], nprobe: int = 8):
        self.index, self.ids, self.meta = index, ids, meta
        if meta.get("kind") == "ivf":
            index.nprobe = nprobe

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
        (an ``IDSelectorBatch``: a metadata filter's pre-filtered id set, ``evalkit.index.filters``).
        """
        self.check_query_model(query_model)
        pool = len(self.ids) if allowed is None else len(allowed)
        k = min(k, pool)
        if k <= 0 or len(query_vecs) == 0:
            return [[] for _ in range(len(query_vecs))]
        vecs = np.ascontiguousarray(query_vecs, dtype=np.float32)
        # ask for a few extra so ties at the cut are settled by id, not by faiss's order
        if allowed is None:
            scores, idx = self.index.search(vecs, min(pool, k + 10))
        else:
            import faiss

            selector = faiss.IDSelectorBatch(np.ascontiguousarray(allowed, dtype=np.int64))
            params = (faiss.SearchParametersIVF(sel=selector, nprobe=self.index.nprobe)
                      if self.meta.get("kind") == "ivf" else faiss.SearchParameters(sel=selector))
            scores, idx = self.index.search(vecs, min(pool, k + 10), params=params)
        out = []
        for row_s, row_i in zip(scores, idx):
            hits = [(self.ids[i], float(s)) for s, i in zip(row_s, row_i) if i >= 0]
            hits.sort(key=lambda h: (-h[1], h[0]))
            out.append(hits[:k])
        return out


def build_or_load_dense(texts: list[str], ids: list[str], embedder: Any, key_meta: dict[str, Any],
                        cache_root: Path, kind: str = "flat", nlist: int = 64, nprobe: int = 8,
                        seed: int = 0) -> DenseIndex:
    """Load the cached index for ``key_meta`` or encode ``texts`` and build it."""
    import faiss

    meta = {**key_meta, "embedder": embedder.identity, "kind": kind, "dim": embedder.dim, "n": len(ids)}
    if kind == "ivf":
        meta.update(nlist=nlist, seed=seed)
    folder = cache_dir_for(cache_root, "dense", meta)
    stored = read_meta(folder)
    if stored is not None:
        index = faiss.read_index(str(folder / "index.faiss"))
        stored_ids = json.loads((folder / "ids.json").read_text())
        return DenseIndex(index, stored_ids, stored, nprobe)
    vecs = embedder.encode_passages(texts).astype(np.float32)
    if kind == "flat":
        index = faiss.IndexFlatIP(embedder.dim)
    elif kind == "ivf":
        nlist = max(1, min(nlist, len(ids) // 4 or 1))
        quantizer = faiss.IndexFlatIP(embedder.dim)
        index = faiss.IndexIVFFlat(quantizer, embedder.dim, nlist, faiss.METRIC_INNER_PRODUCT)
        index.cp.seed = seed
        index.train(vecs)
        meta["nlist_effective"] = nlist
    else:
        raise ValueError(f"unknown dense index kind '{kind}'; valid: {', '.join(INDEX_KINDS)}")
    index.add(vecs)
    folder.mkdir(parents=True, exist_ok=True)
    faiss.write_index(index, str(folder / "index.faiss"))
    (folder / "ids.json").write_text(json.dumps(ids))
    meta = write_meta(folder, meta)
    return DenseIndex(index, ids, meta, nprobe)
