"""Lexical retrieval: BM25 (rank-bm25) over tokenised passages.

Defaults follow Anserini/Lucene, the usual published baseline: ``k1=0.9``, ``b=0.4``
and the Lucene IDF ``log(1 + (N - n + 0.5) / (n + 0.5))``, which is never negative.
``idf: okapi`` selects rank-bm25's own BM25Okapi IDF instead (negative IDFs floored at
``epsilon`` x the mean IDF). Passages that share no term with the query score 0 and are
not returned. Tokenised passages are cached on disk (corpus hash + chunking + tokenizer).
"""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from evalkit.errors import UnknownNameError
from evalkit.index.store import cache_dir_for, read_meta, write_meta
from evalkit.index.tokenize import Tokenizer


def _bm25_class(idf: str) -> Any:
    from rank_bm25 import BM25Okapi

    if idf == "okapi":
        return BM25Okapi
    if idf != "lucene":
        raise UnknownNameError(f"unknown idf '{idf}'; valid: lucene, okapi")

    class LuceneBM25(BM25Okapi):
        """BM25Okapi scoring with Lucene's always-positive IDF."""

        def _calc_idf(self, nd: dict[str, int]) -> None:
            for word, freq in nd.items():
                self.idf[word] = math.log(1.0 + (self.corpus_size - freq + 0.5) / (freq + 0.5))

    return LuceneBM25


class BM25Index:
    """Tokenised passages and a BM25 scorer; ``search`` returns top-k (id, score), ties by id."""

    def __init__(self, ids: list[str], tokens: list[list[str]], tokenizer: Tokenizer, meta: dict[str, Any],
                 k1: float, b: float, idf: str):
        self.ids, self.tokenizer, self.meta = ids, tokenizer, meta
        self._bm25 = _bm25_class(idf)(tokens, k1=k1, b=b)

    def search(self, query: str, k: int, allowed: np.ndarray | None = None) -> list[tuple[str, float]]:
        """Top-k passages with a positive score; ``allowed`` (positions in ``ids``) restricts them
        to a metadata filter's pre-filtered id set (every other passage scores 0)."""
        terms = self.tokenizer(query)
        if not terms or not self.ids:
            return []
        scores = np.asarray(self._bm25.get_scores(terms), dtype=np.float64)
        if allowed is not None:
            keep = np.zeros(len(scores), dtype=bool)
            keep[np.asarray(allowed, dtype=np.int64)] = True
            scores = np.where(keep, scores, 0.0)
        positive = np.flatnonzero(scores > 0)
        if len(positive) > k:
            # keep everything tied with the k-th score so the id tie-break is exact
            kth = np.partition(scores[positive], len(positive) - k)[len(positive) - k]
            positive = positive[scores[positive] >= kth]
        hits = sorted(((self.ids[i], float(scores[i])) for i in positive), key=lambda h: (-h[1], h[0]))
        return hits[:k]


def build_or_load_bm25(texts: list[str], ids: list[str], tokenizer: Tokenizer, key_meta: dict[str, Any],
                       cache_root: Path, k1: float = 0.9, b: float = 0.4, idf: str = "lucene") -> BM25Index:
    """Load cached tokens for ``key_meta`` (or tokenise ``texts``) and build the scorer."""
    meta = {**key_meta, "tokenizer": tokenizer.identity, "n": len(ids)}
    folder = cache_dir_for(cache_root, "bm25", meta)
    stored = read_meta(folder)
    if stored is not None:
        tokens = json.loads((folder / "tokens.json").read_text(encoding="utf-8"))
        meta = stored
    else:
        tokens = [tokenizer(t) for t in texts]
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "tokens.json").write_text(json.dumps(tokens, ensure_ascii=False), encoding="utf-8")
        meta = write_meta(folder, meta)
    return BM25Index(ids, tokens, tokenizer, {**meta, "k1": k1, "b": b, "idf": idf}, k1, b, idf)
