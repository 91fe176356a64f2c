"""evalkit's bm25s-backed BM25 against rank-bm25 (the implementation it replaced), query by query.

rank-bm25 (a dev dependency) is the independent reference: its ``BM25Okapi`` for ``idf:
okapi`` and the same class with Lucene's IDF, exactly as evalkit scored before bm25s.
Every ranking and every score must be *equal* (not close), ties at the cut included,
on corpora large enough that the MaxScore pruning path does the work.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from evalkit.index import bm25
from evalkit.index.bm25 import build_or_load_bm25
from evalkit.text.tokenize import Tokenizer

rank_bm25 = pytest.importorskip("rank_bm25", reason="rank-bm25 is the reference implementation (pip install -e .[dev])")

KEY = {"corpus_sha256": "parity", "chunking": {"method": "document"}}


class LuceneReference(rank_bm25.BM25Okapi):
    """rank-bm25 scoring with Lucene's IDF: evalkit's BM25 before bm25s."""

    def _calc_idf(self, nd):
        for word, freq in nd.items():
            self.idf[word] = math.log(1.0 + (self.corpus_size - freq + 0.5) / (freq + 0.5))


def reference_top(ref, ids: list[str], terms: list[str], k: int) -> list[tuple[str, float]]:
    scores = np.asarray(ref.get_scores(terms), dtype=np.float64)
    hits = sorted(((ids[i], float(scores[i])) for i in np.flatnonzero(scores > 0)), key=lambda h: (-h[1], h[0]))
    return hits[:k]


def zipf_corpus(seed: int, n: int, vocab: int, dup_share: float = 0.2) -> tuple[list[str], list[str], list[str]]:
    """Passages of Zipf-distributed words (common words in most passages), some passages duplicated
    (exact ties), ids shuffled so id order differs from row order; and queries with repeated terms."""
    rng = np.random.default_rng(seed)
    words = [f"w{i}" for i in range(vocab)]
    p = 1.0 / np.arange(1, vocab + 1) ** 1.1
    p /= p.sum()
    texts = [" ".join(words[j] for j in rng.choice(vocab, size=rng.integers(1, 30), p=p)) for _ in range(n)]
    for i in rng.choice(n, size=int(n * dup_share), replace=False):
        texts[i] = texts[rng.integers(0, n)]
    ids = [f"p{j:05d}" for j in rng.permutation(n)]
    queries = []
    for _ in range(60):
        q = list(rng.choice(vocab, size=rng.integers(1, 7), p=p)) + list(rng.integers(0, vocab, size=2))
        queries.append(" ".join(words[j] for j in q) + (" unknownterm" if rng.random() < 0.2 else ""))
    return texts, ids, queries


# How a search does its work at scale (scatter into a buffer, or sort and binary search; ties by a
# rank of all ids, or by comparing the tied ids) must never change what it returns: each test
# that takes ``shape`` runs with every choice forced one way, then the other.
SHAPES = {
    "as_configured": {},
    "always_scatter": {"SCATTER_LOOKUP_MIN": 0, "SCATTER_LOOKUP_RATIO": 10**9, "SCATTER_UNION_RATIO": 10**9,
                       "FEW_TIES": 0, "FLOOR_FROM": 0},
    "never_scatter": {"SCATTER_LOOKUP_MIN": 10**9, "SCATTER_UNION_RATIO": 0, "FEW_TIES": 10**9, "FLOOR_FROM": 10**9},
}


@pytest.fixture(params=sorted(SHAPES))
def shape(request, monkeypatch):
    for name, value in SHAPES[request.param].items():
        monkeypatch.setattr(bm25, name, value)
    return request.param


@pytest.mark.parametrize("idf", ["lucene", "okapi"])
@pytest.mark.parametrize("seed,n,vocab", [(0, 3000, 400), (1, 800, 40), (2, 200, 2000)])
def test_equal_to_rank_bm25_every_query(tmp_path, idf, seed, n, vocab, shape):
    texts, ids, queries = zipf_corpus(seed, n, vocab)
    tok = Tokenizer("whitespace")
    index = build_or_load_bm25(texts, ids, tok, KEY, tmp_path, k1=0.9, b=0.4, idf=idf)
    ref = (LuceneReference if idf == "lucene" else rank_bm25.BM25Okapi)([tok(t) for t in texts], k1=0.9, b=0.4)
    for q in queries:
        want = reference_top(ref, ids, tok(q), 100)
        for k in (1, 5, 10, 100):
            assert index.search(q, k) == want[:k], (q, k)
    # the exhaustive vector is rank-bm25's to the last bit as well
    for q in queries[:10]:
        np.testing.assert_array_equal(index.scores(q), np.asarray(ref.get_scores(tok(q)), dtype=np.float64))
    if n >= 3000:
        assert index.paths["pruned"] > 0  # the MaxScore path was exercised, not only the exhaustive one


@pytest.mark.parametrize("fillers", [2000, 5000])  # below and above FEW_TIES tied passages
def test_ties_at_the_cut_are_settled_by_id(tmp_path, shape, fillers):
    # 50 identical passages: every one ties; the k smallest ids win, whatever their row order
    rng = np.random.default_rng(3)
    ids = [f"id{j:03d}" for j in rng.permutation(50)]
    texts = ["alpha beta"] * 50 + [f"filler{i} alpha" for i in range(fillers)]
    ids += [f"zz{j:05d}" for j in rng.permutation(fillers)]  # filler ids out of row order too
    index = build_or_load_bm25(texts, ids, Tokenizer("whitespace"), KEY, tmp_path)
    for k in (1, 7, 50, 60):
        got = index.search("beta", k)
        assert [h[0] for h in got] == sorted(ids[:50])[:k]
        assert len({h[1] for h in got}) == 1
    ref = LuceneReference([t.split() for t in texts], k1=0.9, b=0.4)
    for k in (55, 100):  # 50 tied leaders, then ties among the fillers
        assert index.search("alpha beta", k) == reference_top(ref, ids, ["alpha", "beta"], k)


def test_ties_between_ids_numpy_cannot_tell_apart(tmp_path, shape):
    # numpy's string arrays drop trailing NULs: "a" and "a\x00" must still order as Python orders them
    ids = [f"p{i % 300}" + "\x00" * (i // 300) for i in range(5000)][::-1]
    texts = ["alpha"] * 5000
    index = build_or_load_bm25(texts, ids, Tokenizer("whitespace"), KEY, tmp_path)
    assert [h[0] for h in index.search("alpha", 40)] == sorted(ids)[:40]


def test_search_many_equals_search(tmp_path):
    texts, ids, queries = zipf_corpus(4, 1500, 300)
    index = build_or_load_bm25(texts, ids, Tokenizer("whitespace"), KEY, tmp_path)
    batch = index.search_many([*queries, queries[0]], 20)
    assert batch == [index.search(q, 20) for q in [*queries, queries[0]]]


def test_searches_from_several_threads_share_no_buffer(tmp_path, monkeypatch):
    # a node overrunning its budget_s keeps searching on a daemon thread while the next query starts
    from concurrent.futures import ThreadPoolExecutor

    for name, value in SHAPES["always_scatter"].items():
        monkeypatch.setattr(bm25, name, value)
    texts, ids, queries = zipf_corpus(6, 3000, 400)
    index = build_or_load_bm25(texts, ids, Tokenizer("whitespace"), KEY, tmp_path)
    serial = [index.search(q, 30) for q in queries]
    with ThreadPoolExecutor(max_workers=4) as pool:
        for _ in range(3):
            assert list(pool.map(lambda q: index.search(q, 30), queries)) == serial


def test_pruned_and_exhaustive_paths_agree(tmp_path, shape):
    texts, ids, queries = zipf_corpus(5, 4000, 600)
    index = build_or_load_bm25(texts, ids, Tokenizer("whitespace"), KEY, tmp_path)
    for q in queries:
        terms = index.term_ids(q)
        dense = index.scores(q)
        rows = np.flatnonzero(dense > 0)
        assert index._top(terms, 10) == index._select(rows, dense[rows], 10)
    assert index.paths["pruned"] > 0


def test_the_floor_of_the_kth_score_keeps_the_top_k_and_its_ties():
    """_kth_floor / _in_reach cut a long scores array before selecting: what they keep must hold every
    score from the k-th largest up (ties included), and _kth must not change."""
    rng = np.random.default_rng(11)
    for trial in range(300):
        n = int(rng.integers(1, 60_000))
        k = int(rng.integers(1, 150))
        kind = trial % 3  # continuous, heavily tied, mostly zero
        s = (rng.random(n) if kind == 0 else rng.integers(0, 4, n).astype(np.float64) if kind == 1
             else np.where(rng.random(n) < 0.999, 0.0, rng.random(n)))
        kth = np.sort(s)[::-1][k - 1] if n >= k else None
        floor = bm25._kth_floor(s, k)
        if floor is not None:
            assert kth is not None and floor <= kth
        kept = set(bm25._in_reach(s, k).tolist())
        assert kept <= set(np.flatnonzero(s > 0).tolist())
        want = np.flatnonzero((s > 0) & (s >= kth)) if kth is not None else np.flatnonzero(s > 0)
        assert set(want.tolist()) <= kept
        if kth is not None:
            assert bm25._kth(s, k) == kth
