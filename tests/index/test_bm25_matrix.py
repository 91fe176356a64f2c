"""evalkit's chunked BM25 matrix equals the one bm25s builds, array for array and bit for bit (the memory fix
changes no score): several corpora, empty passages, repeated terms, unused vocabulary, chunks smaller than the
corpus."""
from __future__ import annotations

import bm25s
import numpy as np
import pytest

from evalkit.index import bm25_matrix
from evalkit.index.bm25_matrix import csc_scores


def _bm25s(token_ids, offsets, n_vocab, k1, b):
    m = bm25s.BM25(k1=k1, b=b, method="atire", idf_method="lucene", dtype="float64", int_dtype="int32")
    docs = [token_ids[s:e].tolist() for s, e in zip(offsets[:-1], offsets[1:])]
    m.index((docs, {f"t{i}": i for i in range(n_vocab)}), create_empty_token=False, show_progress=False)
    return m.scores


@pytest.mark.parametrize(("seed", "n", "vocab", "chunk", "k1", "b"),
                         [(1, 300, 50, 64, 0.9, 0.4), (2, 1000, 400, 100, 1.2, 0.75), (3, 57, 1000, 10, 0.9, 0.4)])
def test_the_chunked_matrix_is_bm25s_matrix(monkeypatch, seed, n, vocab, chunk, k1, b):
    monkeypatch.setattr(bm25_matrix, "CHUNK", chunk)
    rng = np.random.default_rng(seed)
    lengths = rng.integers(0, 40, size=n)
    lengths[[0, n // 2, n - 1]] = 0
    token_ids = (rng.zipf(1.3, size=int(lengths.sum())) % vocab).astype(np.int32)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    want, got = _bm25s(token_ids, offsets, vocab, k1, b), csc_scores(token_ids, offsets, vocab, k1, b)
    assert got["num_docs"] == want["num_docs"] == n
    for key in ("data", "indices", "indptr"):
        assert got[key].dtype == want[key].dtype, key
        assert np.array_equal(got[key], want[key]), key  # exact: equal floats, not close ones
