"""Lexical retrieval: BM25 over a precomputed sparse score matrix (bm25s), saved and memory-mapped.

The score of passage ``d`` for query ``q`` is the Anserini/Lucene baseline::

    score(q, d) = sum over the query's terms t, in query order (a repeated term counts again) of
                  idf(t) * tf(t, d) * (k1 + 1) / (tf(t, d) + k1 * (1 - b + b * |d| / avgdl))

with ``k1=0.9``, ``b=0.4`` by default and ``idf: lucene`` = ``log(1 + (N - n + 0.5) / (n + 0.5))``
(never negative), or ``idf: okapi``, rank-bm25's BM25Okapi IDF ``log(N - n + 0.5) - log(n + 0.5)``
with negative values replaced by ``0.25`` x the mean IDF. Passages that share no term with
the query score 0 and are not returned; ties are broken by passage id.

**How.** bm25s computes every (term, passage) score once at build time, in float64, as a
CSC matrix (one column per term: the passages containing it and their scores); its
``method="atire"`` is exactly the term-frequency part above and ``idf_method="lucene"`` the
Lucene IDF; bm25s has no okapi IDF with rank-bm25's floor, so for ``okapi`` evalkit
recomputes each entry with the same float64 operations. Both are bit-identical to the
rank-bm25 implementation evalkit used before (``tests/index/test_bm25_parity.py``).
A search adds the columns of the query's terms in query order, so each score is the same
float64 sum as scoring term by term over every passage. It is also exact when it skips work:
with MaxScore pruning (Turtle & Flood 1995) the terms with the highest possible
contribution are scored first, and passages containing only the remaining terms are never
looked at once their best possible score is below the current k-th score (see ``_top``).
Large candidate sets are merged and looked up by scattering a column into a zeroed n-length
buffer instead of sorting or binary searching (``SCATTER_*``): the same values, added in the
same order, so the choice changes the time and never a score.

**Cache.** Two folders under the cache root: ``bm25tok-*`` holds the tokenised passages
(vocabulary and token ids; key: corpus, chunking, tokenizer) so several k1/b/idf settings
tokenise once, and after a corpus change only new or edited passages are tokenised
(``evalkit.index.incremental``); ``bm25-*`` holds one bm25s matrix (key: the tokens' key plus k1, b, idf),
loaded memory-mapped: a warm load verifies the files against the checksums in ``meta.json``
(``evalkit.cachestore``) and rebuilds nothing.
"""
from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from evalkit.cachestore import load_or_build
from evalkit.errors import UnknownNameError
from evalkit.index.bm25_matrix import csc_scores
from evalkit.index.bm25_tokens import token_entry
from evalkit.text.tokenize import Tokenizer

IDF_KINDS = ("lucene", "okapi")
# Work shapes: when scattering a column into an n-length buffer beats sorting or binary searching
# (measured at 1M passages: benchmarks/scaling.py). They choose how, never what: tests force each side.
SCATTER_LOOKUP_MIN = 4096  # a term lookup scatters for more candidates than this ...
SCATTER_LOOKUP_RATIO = 8  # ... when candidates x this exceed the column's length
SCATTER_UNION_RATIO = 4  # the essential terms' union scatters when their postings x this exceed n
FEW_TIES = 4096  # up to this many tied passages at the cut are ordered by id directly
FLOOR_FROM = 1 << 14  # scores arrays this long are first cut to those above a floor of their k-th (_kth_floor)
OKAPI_EPSILON = 0.25  # rank-bm25's BM25Okapi default: negative IDFs become epsilon x the mean IDF
FORMAT = "bm25s-1"  # bump when the files or the scores of an index change


class BM25Index:
    """A loaded BM25 matrix plus the passage ids; ``search`` returns top-k (id, score), ties by id."""

    def __init__(self, model: Any, ids: list[str], tokenizer: Tokenizer, meta: dict[str, Any],
                 colmax: np.ndarray):
        self.ids, self.tokenizer, self.meta = ids, tokenizer, meta
        scores = model.scores
        self.memory_mapped = isinstance(scores["data"], np.memmap)
        # plain views of the (memory-mapped) arrays: slicing a np.memmap costs a subclass object per slice
        self._data, self._indices, self._indptr = (np.asarray(scores[k]) for k in ("data", "indices", "indptr"))
        self._vocab: dict[str, int] = model.vocab_dict
        self._colmax = colmax
        self._nonneg = bool(meta.get("min_score", 0.0) >= 0.0)  # pruning needs scores >= 0
        self.n = len(ids)
        self._rank: np.ndarray | None = None
        self._spare: list[np.ndarray] = []  # zeroed n-length buffers for _lookup (one per concurrent search)
        self.paths: Counter[str] = Counter()  # how searches were scored: dense / pruned / all_terms

    def term_ids(self, query: str) -> list[int]:
        """The query's terms as column numbers, in query order; terms absent from the corpus dropped."""
        vocab = self._vocab
        return [vocab[t] for t in self.tokenizer(query) if t in vocab]

    def search(self, query: str, k: int, allowed: np.ndarray | None = None) -> list[tuple[str, float]]:
        """The top ``k`` passages for ``query`` (score > 0), best first, ties by passage id.

        ``allowed`` (positions in ``ids``) restricts them to a metadata filter's pre-filtered
        id set: those passages are scored in full (no pruning) and every other one is left out.
        """
        if allowed is None:
            return self._top(self.term_ids(query), k)
        terms = self.term_ids(query)
        if not terms or k <= 0 or self.n == 0:
            return []
        rows = np.unique(np.asarray(allowed, dtype=np.int64))
        return self._select(rows, self._exact(terms, rows), k)

    def search_many(self, queries: Sequence[str], k: int) -> list[list[tuple[str, float]]]:
        """``search`` for every query, in one call (each distinct query is tokenised and scored once)."""
        found: dict[str, list[tuple[str, float]]] = {}
        for q in queries:
            if q not in found:
                found[q] = self.search(q, k)
        return [found[q] for q in queries]

    def scores(self, query: str) -> np.ndarray:
        """Every passage's score for ``query`` (a dense vector; for tests and diagnostics)."""
        return self._dense(self.term_ids(query))

    # -- scoring -----------------------------------------------------------------------

    def _column(self, t: int) -> tuple[np.ndarray, np.ndarray]:
        a, b = int(self._indptr[t]), int(self._indptr[t + 1])
        return self._indices[a:b], self._data[a:b]

    def _dense(self, terms: list[int]) -> np.ndarray:
        out = np.zeros(self.n, dtype=np.float64)
        for t in terms:  # query order: the same float sum whichever path scores a passage
            rows, vals = self._column(t)
            np.add.at(out, rows, vals)
        return out

    def _lookup(self, t: int, cand: np.ndarray) -> np.ndarray:
        """Term ``t``'s score in each passage of ``cand`` (sorted row numbers); 0.0 where absent."""
        rows, vals = self._column(t)
        if len(cand) > SCATTER_LOOKUP_MIN and len(cand) * SCATTER_LOOKUP_RATIO > len(rows):
            # many candidates: scatter the column into a zeroed buffer and gather (linear), where
            # the binary searches below would cost len(cand) x log(len(rows)) cache misses
            buf = self._buffer()
            buf[rows] = vals
            got = buf[cand]
            buf[rows] = 0.0
            self._spare.append(buf)  # not given back on an exception: a half-written buffer is dropped
            return got
        out = np.zeros(len(cand), dtype=np.float64)
        if len(cand) == 0 or len(rows) == 0:
            return out
        if len(rows) <= len(cand):
            pos = np.minimum(np.searchsorted(cand, rows), len(cand) - 1)
            hit = cand[pos] == rows
            out[pos[hit]] = vals[hit]
        else:
            pos = np.minimum(np.searchsorted(rows, cand), len(rows) - 1)
            hit = rows[pos] == cand
            out[hit] = vals[pos[hit]]
        return out

    def _exact(self, terms: list[int], cand: np.ndarray) -> np.ndarray:
        """Full scores of the passages ``cand`` (sorted row numbers), summed in query order."""
        out = np.zeros(len(cand), dtype=np.float64)
        looked: dict[int, np.ndarray] = {}
        for t in terms:  # adding 0.0 where a passage lacks t leaves its sum unchanged
            if t not in looked:
                looked[t] = self._lookup(t, cand)
            out += looked[t]
        return out

    def _top(self, terms: list[int], k: int) -> list[tuple[str, float]]:
        """Exact top-k of the passages' scores for the column numbers ``terms``.

        MaxScore: order the distinct terms by their largest possible contribution (count in
        the query x the column's maximum) and take the first ``e`` as "essential". Every
        passage containing an essential term is a candidate; its partial score (essential
        terms only) is a lower bound of its score, so the k-th best partial score,
        ``theta``, is at most the true k-th score. A passage with no essential term scores at
        most ``rest``, the other terms' bounds summed; once ``rest < theta`` such passages are
        never looked at, and neither are candidates whose partial score plus ``rest`` is
        below ``theta``. The few that remain are scored exactly, every term in query order.
        Bounds carry a 1e-9 relative margin, far above float rounding, so nothing that could
        enter the top k, or tie with its k-th score, is ever skipped.
        """
        if not terms or k <= 0 or self.n == 0:
            return []
        uniq, counts = np.unique(np.asarray(terms, dtype=np.int64), return_counts=True)
        lens = self._indptr[uniq + 1] - self._indptr[uniq]
        bounds = counts * self._colmax[uniq]
        order = np.argsort(-bounds, kind="stable")
        rest = np.concatenate([np.cumsum(bounds[order][::-1])[::-1][1:], [0.0]]) * (1 + 1e-9)
        for e in range(1, len(order) + 1):
            last, ess = e == len(order), order[:e]
            size = int(lens[ess].sum())
            if not self._nonneg or size >= self.n // 2:
                self.paths["dense"] += 1  # scoring the candidates would cost as much as scoring all
                scores = self._dense(terms)
                rows = _in_reach(scores, k)
                return self._select(rows, scores[rows], k)
            if not last and size < k:
                continue  # fewer than k candidates: no threshold yet
            cand, partial = self._union(uniq[ess], counts[ess])
            if last:
                self.paths["all_terms"] += 1
                return self._select(cand, self._exact(terms, cand), k)
            if len(cand) < k:
                continue
            theta = _kth(partial, k) * (1 - 1e-9)
            if rest[e - 1] >= theta:
                continue  # the other terms could still lift an unseen passage into the top k
            # refine: add the other terms one by one (best bound first) to the candidates still in reach
            for j in range(e, len(order) + 1):
                alive = partial * (1 + 1e-9) + rest[j - 1] >= theta
                cand, partial = cand[alive], partial[alive]
                if j == len(order) or len(cand) <= k:
                    break
                t = int(uniq[order[j]])
                partial = partial + counts[order[j]] * self._lookup(t, cand)
                theta = max(theta, _kth(partial, k) * (1 - 1e-9))
            self.paths["pruned"] += 1
            return self._select(cand, self._exact(terms, cand), k)
        raise AssertionError("unreachable: the last term always returns")

    def _union(self, terms: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The passages holding any of ``terms`` (sorted) and their partial scores, count x score summed."""
        if len(terms) == 1:  # one column is already sorted and unique
            rows, vals = self._column(int(terms[0]))
            return rows, counts[0] * vals
        cols = [self._column(int(t)) for t in terms]
        if sum(len(r) for r, _ in cols) * SCATTER_UNION_RATIO > self.n:  # large: accumulate, no sort
            buf = self._buffer()
            seen = np.zeros(self.n, dtype=bool)
            for (r, v), c in zip(cols, counts):  # term by term, as the sort below sums them
                buf[r] += c * v  # a column holds a passage once
                seen[r] = True
            rows = np.flatnonzero(seen).astype(cols[0][0].dtype)
            partial = buf[rows]
            buf[rows] = 0.0
            self._spare.append(buf)
            return rows, partial
        rows = np.concatenate([r for r, _ in cols])
        vals = np.concatenate([c * v for (_, v), c in zip(cols, counts)])
        by_row = np.argsort(rows, kind="stable")
        rows = rows[by_row]
        first = np.flatnonzero(np.concatenate([[True], rows[1:] != rows[:-1]]))
        return rows[first], np.add.reduceat(vals[by_row], first)

    def _select(self, rows: np.ndarray, s: np.ndarray, k: int) -> list[tuple[str, float]]:
        """The top k of passages ``rows`` with scores ``s`` (score > 0), ties at the cut settled by id."""
        keep = _in_reach(s, k)
        rows, s = rows[keep], s[keep]
        if len(s) > k:
            kth = np.partition(s, len(s) - k)[len(s) - k]
            above, tied = np.flatnonzero(s > kth), np.flatnonzero(s == kth)
            need = k - len(above)  # the k-th score may be shared by many passages: the smallest ids win
            if need < len(tied) <= FEW_TIES:
                names = [self.ids[r] for r in rows[tied].tolist()]  # few ties: compare their ids
                tied = tied[sorted(range(len(tied)), key=names.__getitem__)[:need]]
            elif len(tied) > need:
                tied = tied[np.argpartition(self._id_rank()[rows[tied]], need - 1)[:need]]
            pick = np.concatenate([above, tied])
            rows, s = rows[pick], s[pick]
        ids = self.ids
        ranked = sorted(zip((-s).tolist(), [ids[r] for r in rows.tolist()]))[:k]  # best first, then by id
        return [(pid, -neg) for neg, pid in ranked]

    def _buffer(self) -> np.ndarray:
        """A zeroed float64 buffer of n entries: a spare one, or a new one if all are in use (threads)."""
        try:
            return self._spare.pop()
        except IndexError:
            return np.zeros(self.n, dtype=np.float64)

    def _id_rank(self) -> np.ndarray:
        """Each passage's position in id order (computed on first need, for ties at the cut)."""
        if self._rank is None:
            as_array = np.asarray(self.ids)
            if as_array.tolist() == self.ids:
                order = np.argsort(as_array, kind="stable")
            else:  # numpy drops trailing NUL characters: order such ids as Python does
                order = np.asarray(sorted(range(self.n), key=self.ids.__getitem__), dtype=np.int64)
            rank = np.empty(self.n, dtype=np.int64)
            rank[order] = np.arange(self.n)
            self._rank = rank
        return self._rank


def _kth(scores: np.ndarray, k: int) -> float:
    """The k-th largest value (0.0 when there are fewer than k)."""
    if len(scores) < k:
        return 0.0
    floor = _kth_floor(scores, k)
    if floor is not None:  # the same value, partitioned out of far fewer
        scores = scores[scores >= floor]
    return float(np.partition(scores, len(scores) - k)[len(scores) - k])


def _kth_floor(s: np.ndarray, k: int) -> float | None:
    """A value at most the k-th largest of ``s``, found in one pass; None when ``s`` is too short to gain.

    The k-th largest of the maxima of 4k equal blocks: the k blocks whose maxima reach it hold k
    distinct values of ``s`` that do, so every value from the k-th largest up is at least it.
    Keeping the values ``>= floor`` keeps the top k and every tie with its k-th value; on a
    million scores it leaves a few hundred, where a partition of all of them cost ~10 ms.
    """
    blocks = 4 * k
    width = len(s) // blocks
    if len(s) < FLOOR_FROM or width < 8:
        return None
    maxima = s[:blocks * width].reshape(blocks, width).max(axis=1)
    return float(np.partition(maxima, blocks - k)[blocks - k])


def _in_reach(s: np.ndarray, k: int) -> np.ndarray:
    """Positions in ``s`` of the scores that can be in its top k: positive, and at least a floor of the k-th."""
    floor = _kth_floor(s, k) if len(s) > k else None
    return np.flatnonzero(s >= floor if floor is not None and floor > 0 else s > 0)


# -- building and caching ---------------------------------------------------------------

def _tokens(texts: list[str], tokenizer: Tokenizer, key: dict[str, Any], cache_root: Path) -> tuple[
        list[str], np.ndarray, np.ndarray]:
    """(vocabulary, token ids, offsets) of the passages: from the cache, or tokenised and cached."""
    toks, _ = token_entry(texts, tokenizer, key, cache_root)
    return toks.vocab, toks.token_ids, toks.offsets


def _okapi_idf(df: np.ndarray, n_docs: int) -> np.ndarray:
    """rank-bm25's BM25Okapi IDF, computed in the same order (terms by first use) and the same way."""
    idf = [math.log(n_docs - int(f) + 0.5) - math.log(int(f) + 0.5) for f in df]
    total = 0.0
    for v in idf:  # summed left to right, as rank-bm25 does
        total += v
    floor = OKAPI_EPSILON * (total / len(idf))
    return np.asarray([floor if v < 0 else v for v in idf], dtype=np.float64)


def _okapi_data(token_ids: np.ndarray, offsets: np.ndarray, rows: np.ndarray, df: np.ndarray, k1: float,
                b: float) -> np.ndarray:
    """The matrix entries (CSC order) with okapi IDF: ``idf * (tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl)))``,
    the same float64 operations, in the same order, as rank-bm25's ``BM25Okapi.get_scores``."""
    n_docs, n_vocab = len(offsets) - 1, len(df)
    dl = np.diff(offsets)
    doc = np.repeat(np.arange(n_docs, dtype=np.int64), dl)
    pairs, tf = np.unique(doc * n_vocab + token_ids.astype(np.int64), return_counts=True)  # by doc, then term
    order = np.lexsort((pairs // n_vocab, pairs % n_vocab))  # CSC order: by term, then doc
    pair_doc, tf = pairs[order] // n_vocab, tf[order]
    if not np.array_equal(pair_doc, rows):
        raise RuntimeError("bm25s matrix layout differs from the tokens it was built from: report this bug")
    avgdl = int(dl.sum()) / n_docs
    term_idf = np.repeat(_okapi_idf(df, n_docs), df)
    return term_idf * (tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl[pair_doc] / avgdl)))


def _build(vocab: list[str], token_ids: np.ndarray, offsets: np.ndarray, k1: float, b: float, idf: str,
           folder: Path) -> float:
    """Build and save the bm25s matrix and its column maxima into ``folder``; return the smallest score."""
    import bm25s

    # the matrix bm25s's index() builds, bit for bit, in a fraction of its memory (evalkit.index.bm25_matrix)
    model = bm25s.BM25(k1=k1, b=b, method="atire", idf_method="lucene", dtype="float64", int_dtype="int32")
    model.scores = csc_scores(token_ids, offsets, len(vocab), k1, b)
    model.vocab_dict = {t: i for i, t in enumerate(vocab)}
    model.nonoccurrence_array = None  # what index() sets for "atire"
    data, indptr = model.scores["data"], model.scores["indptr"]
    df = np.diff(indptr)
    if idf == "okapi":  # bm25s has no BM25Okapi IDF: recompute each entry as rank-bm25 does
        model.scores["data"] = data = _okapi_data(token_ids, offsets, model.scores["indices"], df, k1, b)
    colmax = np.maximum.reduceat(data, indptr[:-1]) if len(data) else np.zeros(len(vocab))
    model.save(folder, show_progress=False)
    np.save(folder / "colmax.npy", colmax)
    return float(data.min()) if len(data) else 0.0


class _Empty:
    """Stands in for a bm25s model when no passage has a term (every search is empty)."""

    vocab_dict: dict[str, int] = {}
    scores = {"data": np.zeros(0), "indices": np.zeros(0, dtype=np.int32), "indptr": np.zeros(1, dtype=np.int64)}


def build_or_load_bm25(texts: list[str], ids: list[str], tokenizer: Tokenizer, key_meta: dict[str, Any],
                       cache_root: Path, k1: float = 0.9, b: float = 0.4, idf: str = "lucene") -> BM25Index:
    """Load the cached matrix for ``key_meta`` and these settings, or build it (tokenising if needed)."""
    if idf not in IDF_KINDS:
        raise UnknownNameError(f"unknown idf '{idf}'; valid: {', '.join(IDF_KINDS)}")
    tok_key = {**key_meta, "tokenizer": tokenizer.identity, "n": len(ids), "format": FORMAT}
    meta = {**tok_key, "k1": k1, "b": b, "idf": idf}

    def load(folder: Path, stored: dict[str, Any]) -> BM25Index:
        if stored.get("empty"):
            return BM25Index(_Empty(), ids, tokenizer, stored, np.zeros(0))
        import bm25s

        model = bm25s.BM25.load(folder, mmap=True)
        return BM25Index(model, ids, tokenizer, stored, np.load(folder / "colmax.npy"))

    def build(staging: Path) -> dict[str, Any]:
        toks, tok_meta = token_entry(texts, tokenizer, tok_key, Path(cache_root))
        reuse = {"incremental": tok_meta["incremental"]} if "incremental" in tok_meta else {}
        if not toks.vocab:
            return {"empty": True, **reuse}
        lowest = _build(toks.vocab, toks.token_ids, toks.offsets, k1, b, idf, staging)
        return {"min_score": lowest, "terms": len(toks.vocab), "tokens": len(toks.token_ids), **reuse}

    return load_or_build(cache_root, "bm25", meta, load=load, build=build)
