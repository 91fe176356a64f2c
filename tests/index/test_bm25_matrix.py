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


ZH_TEXTS = ["检索增强生成 评估 部署", "检索 评估", "部署 门禁 检索", "评估 评估 检索", "检索 评估",
            "", "门禁 部署 检索增强生成", "retrieval 检索 eval", "检索 评估"]  # three identical passages: ties


@pytest.mark.parametrize("idf", ["lucene", "okapi"])
def test_searches_are_the_same_with_the_old_bm25s_build(monkeypatch, tmp_path, idf):
    """Whole searches (Chinese text, tied scores, every k) give the same (id, score) lists from both builds."""
    from evalkit.index import bm25
    from evalkit.text.tokenize import Tokenizer

    ids = [f"p{i}" for i in range(len(ZH_TEXTS))]
    key = {"corpus_sha256": "zh-ties"}
    new = bm25.build_or_load_bm25(ZH_TEXTS, ids, Tokenizer("zh"), key, tmp_path / "new", idf=idf)
    monkeypatch.setattr(bm25, "csc_scores", bm25_matrix.bm25s_index_scores)
    old = bm25.build_or_load_bm25(ZH_TEXTS, ids, Tokenizer("zh"), key, tmp_path / "old", idf=idf)
    queries = ["检索 评估", "部署门禁", "检索增强生成 retrieval", "评估", "没有的词"]
    tied = [s for _, s in new.search("检索 评估", 9)]
    assert len(tied) > len(set(tied))  # the corpus does produce ties
    for q in queries:
        assert np.array_equal(new.scores(q), old.scores(q)), q
        for k in (1, 3, 9):
            assert new.search(q, k) == old.search(q, k), (q, k)
