"""The BM25 score matrix built column-ready from token ids, in passage chunks: bm25s's matrix, in less memory.

What it is for: :mod:`evalkit.index.bm25` keeps one (term, passage) score per posting in a CSC
matrix, the format bm25s saves and memory-maps. bm25s builds it from a list of token lists,
then three arrays of every posting (score, passage, term: 16 bytes each), then scipy's CSC
copy of them: 3.5 GB at peak for 1M synthetic passages (``benchmarks/scaling.py --kinds
bm25-build``). :func:`csc_scores` writes each posting's score straight into its column's slot:
a first pass over passage chunks counts each term's passages (its column length), a second
computes the chunk's scores and scatters them. Only the token ids, the result and one chunk are
in memory.

The values are bm25s's own, bit for bit (``tests/index/test_bm25_matrix.py`` compares every
array): its ``atire`` term-frequency part ``tf (k1 + 1) / (tf + k1 (1 - b + b |d| / avgdl))``
evaluated in the same order on float64, its Lucene IDF through its ``_build_idf_array``, the
mean length as ``np.mean`` of the lengths, passages in increasing order within a column.
"""
from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["CHUNK", "bm25s_index_scores", "csc_scores"]

CHUNK = 65_536  # passages per chunk: bounds the temporary arrays, never a value


def _pairs(token_ids: np.ndarray, offsets: np.ndarray, lo: int, hi: int, n_vocab: int
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The (term, passage, tf) postings of passages ``lo..hi-1``, sorted by term, then passage."""
    start, end = int(offsets[lo]), int(offsets[hi])
    lengths = np.diff(offsets[lo:hi + 1])
    passage = np.repeat(np.arange(lo, hi, dtype=np.int64), lengths)
    keys = token_ids[start:end].astype(np.int64) * (hi - lo) + (passage - lo)
    uniq, tf = np.unique(keys, return_counts=True)  # sorted: term-major, passage within a term
    return uniq // (hi - lo), uniq % (hi - lo) + lo, tf


def csc_scores(token_ids: np.ndarray, offsets: np.ndarray, n_vocab: int, k1: float, b: float) -> dict[str, Any]:
    """The bm25s score dict (``data``, ``indices``, ``indptr``, ``num_docs``) of ``method="atire"``,
    ``idf_method="lucene"``, float64 scores, for passages ``token_ids[offsets[i]:offsets[i+1]]``."""
    from bm25s.scoring import _build_idf_array, _select_idf_scorer, _select_tfc_scorer

    n = len(offsets) - 1
    lengths = np.diff(offsets)
    avg_doc_len = np.array(lengths.tolist()).mean() if n else 0.0  # as bm25s: the mean of a list of ints
    chunks = [(lo, min(n, lo + CHUNK)) for lo in range(0, n, CHUNK)]
    df = np.zeros(n_vocab, dtype=np.int64)
    for lo, hi in chunks:
        terms, _, _ = _pairs(token_ids, offsets, lo, hi, n_vocab)
        df += np.bincount(terms, minlength=n_vocab)
    nnz = int(df.sum())
    index_dtype = np.int32 if max(nnz, n, n_vocab) < np.iinfo(np.int32).max else np.int64  # as bm25s's
    indptr = np.zeros(n_vocab + 1, dtype=np.int64)
    np.cumsum(df, out=indptr[1:])
    idf = _build_idf_array({t: int(c) for t, c in enumerate(df.tolist())}, n, _select_idf_scorer("lucene"), "float64")
    tfc = _select_tfc_scorer("atire")
    data = np.empty(nnz, dtype=np.float64)
    indices = np.empty(nnz, dtype=index_dtype)
    fill = indptr[:-1].astype(np.int64)
    for lo, hi in chunks:
        terms, passages, tf = _pairs(token_ids, offsets, lo, hi, n_vocab)
        if not len(terms):
            continue
        # bm25s computes each passage's vector with its length as a Python int: the same float64 operations
        scores = idf[terms] * tfc(tf_array=tf.astype(np.float64), l_d=lengths[passages], l_avg=avg_doc_len, k1=k1, b=b)
        first = np.r_[0, np.flatnonzero(np.diff(terms)) + 1]  # where each term's run starts in this chunk
        rank = np.arange(len(terms)) - np.repeat(first, np.diff(np.r_[first, len(terms)]))
        at = fill[terms] + rank
        data[at], indices[at] = scores, passages
        np.add.at(fill, terms[first], np.diff(np.r_[first, len(terms)]))
    return {"data": data, "indices": indices, "indptr": indptr, "num_docs": n}


def bm25s_index_scores(token_ids: np.ndarray, offsets: np.ndarray, n_vocab: int, k1: float, b: float
                       ) -> dict[str, Any]:
    """The same dict built the old way, through bm25s's ``index()`` (all postings in memory at once).

    Kept so the scaling benchmark can measure old against new in one run (``--kinds bm25-build-old``)
    and tests can compare whole searches; evalkit's index never calls it.
    """
    import bm25s

    model = bm25s.BM25(k1=k1, b=b, method="atire", idf_method="lucene", dtype="float64", int_dtype="int32")
    docs = [token_ids[s:e].tolist() for s, e in zip(offsets[:-1], offsets[1:])]
    model.index((docs, {f"t{i}": i for i in range(n_vocab)}), create_empty_token=False, show_progress=False)
    return dict(model.scores)
