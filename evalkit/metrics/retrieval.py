"""Retrieval metrics over one ranked list of document ids, with binary relevance.

Every function here is pure and scores ONE query:

* ``ranked`` is the ranking in the order the pipeline returned it (best first). It is
  deduplicated at the document level first (:func:`dedupe`): a pipeline may return
  several chunks of one document, and the document counts once, at the rank of its
  first chunk. Ties are NOT re-sorted: evalkit evaluates the order it was given, where
  trec_eval would re-sort by score and break ties by document id, descending.
* ``relevant`` is the set of gold document ids (relevance 1; everything else is 0).
  An empty ``relevant`` raises :class:`ValueError`: a query without gold documents is
  excluded by the caller, never scored 0 (trec_eval likewise skips such queries).
* ``k`` is the cutoff, a positive ``int``. ``k`` larger than the ranking is fine: the
  missing positions count as non-relevant. Unlike ranx, ``k=0`` ("no cutoff") is not
  accepted; the printed names always carry their cutoff.

Each docstring names the trec_eval / ranx / ir_measures measure the function equals;
``tests/metrics/test_retrieval.py`` checks them against pytrec_eval.
"""
from __future__ import annotations

import math
from collections.abc import Collection, Sequence

__all__ = ["dedupe", "recall", "hit", "precision", "mrr", "ndcg"]


def dedupe(ranked: Sequence[str]) -> list[str]:
    """Document-level deduplication: keep the first occurrence of each id, in order.

    ``["d1", "d2", "d1", "d3"] -> ["d1", "d2", "d3"]``: ``d3`` moves up to rank 3.
    Chunks of one document returned twice count once, at the best (first) rank. This is
    also what trec_eval needs: a run cannot hold one document twice.

    Args:
        ranked: document ids, best first (duplicates allowed).

    Returns:
        A new list without duplicates; the input is not modified.
    """
    if isinstance(ranked, (str, bytes)):
        raise TypeError(
            f"ranked must be a sequence of document ids, got a single string {ranked!r}; "
            f"wrap it in a list: [{ranked!r}]"
        )
    return list(dict.fromkeys(ranked))


def _prepare(ranked: Sequence[str], relevant: Collection[str], k: int) -> tuple[list[str], frozenset[str]]:
    """Shared checks: dedupe, cut to ``k``, and turn ``relevant`` into a non-empty set."""
    if isinstance(k, bool) or not isinstance(k, int):
        raise TypeError(f"k must be an int, got {type(k).__name__} {k!r}")
    if k < 1:
        raise ValueError(f"k must be a positive integer (the cutoff), got {k}")
    if isinstance(relevant, (str, bytes)):
        raise TypeError(
            f"relevant must be a collection of document ids, got a single string {relevant!r}; "
            f"wrap it in a set: {{{relevant!r}}}"
        )
    rel = frozenset(relevant)
    if not rel:
        raise ValueError(
            "relevant is empty: a query without gold documents cannot be scored; "
            "exclude it before scoring (it is not a 0)"
        )
    return dedupe(ranked)[:k], rel


def recall(ranked: Sequence[str], relevant: Collection[str], k: int) -> float:
    r"""Recall@k: the share of the relevant documents that appear in the top ``k``.

    .. math:: \mathrm{Recall@}k = \frac{|R \cap \mathrm{top}_k|}{|R|}

    Convention: divides by ``|R|`` even when ``|R| > k`` (so Recall@k can stay below 1
    for a perfect ranking). For "at least one relevant in the top k" use :func:`hit`.

    Equals trec_eval ``recall_k`` (``recall.k``), ranx ``recall@k``, ir_measures ``R@k``.
    """
    top, rel = _prepare(ranked, relevant, k)
    return sum(1 for d in top if d in rel) / len(rel)


def hit(ranked: Sequence[str], relevant: Collection[str], k: int) -> float:
    r"""Hit@k (success): 1.0 if any relevant document is in the top ``k``, else 0.0.

    .. math:: \mathrm{Hit@}k = \mathbb{1}\left[\,|R \cap \mathrm{top}_k| > 0\,\right]

    Convention: binary per query; its mean over queries is the share of queries with at
    least one hit. Not the same as Recall@k when ``|R| > 1``.

    Equals trec_eval ``success_k`` (``success.k``), ir_measures ``Success@k``,
    ranx ``hit_rate@k``.
    """
    top, rel = _prepare(ranked, relevant, k)
    return 1.0 if any(d in rel for d in top) else 0.0


def precision(ranked: Sequence[str], relevant: Collection[str], k: int) -> float:
    r"""Precision@k: the share of the top ``k`` positions that hold a relevant document.

    .. math:: \mathrm{P@}k = \frac{|R \cap \mathrm{top}_k|}{k}

    Convention: divides by ``k`` even when fewer than ``k`` documents were returned
    (missing positions count as non-relevant), as trec_eval does.

    Equals trec_eval ``P_k`` (``P.k``), ranx ``precision@k``, ir_measures ``P@k``.
    """
    top, rel = _prepare(ranked, relevant, k)
    return sum(1 for d in top if d in rel) / k


def mrr(ranked: Sequence[str], relevant: Collection[str], k: int) -> float:
    r"""Reciprocal rank @k: 1 / rank of the first relevant document within the top ``k``.

    .. math:: \mathrm{RR@}k = \frac{1}{\min\{\, i \le k : d_i \in R \,\}}
              \quad (0 \text{ if no relevant document in the top } k)

    Convention: ranks start at 1 and are counted after deduplication; the mean over
    queries is MRR@k.

    Equals ranx ``mrr@k``, ir_measures ``RR@k``, and trec_eval ``recip_rank`` on the
    run cut to its top ``k``.
    """
    top, rel = _prepare(ranked, relevant, k)
    for i, d in enumerate(top, start=1):
        if d in rel:
            return 1.0 / i
    return 0.0


def _dcg_discount(i: int) -> float:
    """The nDCG discount of 1-based rank ``i``: ``1 / log2(i + 1)``."""
    return 1.0 / math.log2(i + 1)


def ndcg(ranked: Sequence[str], relevant: Collection[str], k: int) -> float:
    r"""nDCG@k with binary gains: DCG of the top ``k`` over the DCG of an ideal top ``k``.

    .. math:: \mathrm{DCG@}k = \sum_{i=1}^{k} \frac{\mathrm{rel}_i}{\log_2(i + 1)},
              \qquad
              \mathrm{IDCG@}k = \sum_{i=1}^{\min(|R|, k)} \frac{1}{\log_2(i + 1)},
              \qquad
              \mathrm{nDCG@}k = \frac{\mathrm{DCG@}k}{\mathrm{IDCG@}k}

    with ``rel_i = 1`` if the document at rank ``i`` is in ``R``, else 0.

    Convention: linear gain (= 1 for binary relevance, so the exponential
    ``2^rel - 1`` variant gives the same value), ranks start at 1, and the ideal
    ranking puts ``min(|R|, k)`` relevant documents first.

    Equals trec_eval ``ndcg_cut_k`` (``ndcg_cut.k``) with binary qrels, ranx
    ``ndcg@k``, ir_measures ``nDCG@k``.
    """
    top, rel = _prepare(ranked, relevant, k)
    dcg = sum(_dcg_discount(i) for i, d in enumerate(top, start=1) if d in rel)
    idcg = sum(_dcg_discount(i) for i in range(1, min(len(rel), k) + 1))
    return dcg / idcg
