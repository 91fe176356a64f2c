"""Retrieval metrics over one ranked list of document ids, with graded or binary relevance.

Every function here is pure and scores ONE query:

* ``ranked`` is the ranking in the order to score (best first). It is deduplicated at
  the document level first (:func:`dedupe`): a pipeline may return several chunks of one
  document, and the document counts once, at the rank of its first chunk. The order is
  the pipeline's, unless the caller re-sorted it with :func:`order_ranking` (``ties``:
  ``"pipeline"``, the default, keeps the order the pipeline returned; ``"trec"`` re-sorts
  by score and breaks ties by document id, descending, as trec_eval does).
* ``relevant`` is the query's judged relevant documents: a mapping ``{doc id: grade}``
  (graded qrels, grades >= 1, e.g. TREC's 1/2/3), or a collection of doc ids (binary:
  every one has grade 1). Documents not in it have grade 0. An empty ``relevant``
  raises :class:`ValueError`: a query without gold documents is excluded by the caller,
  never scored 0 (trec_eval likewise skips queries absent from the qrels).
* ``level`` is the relevance threshold of the binary metrics (recall, hit, precision,
  MRR): a document counts as relevant when its grade >= ``level`` (trec_eval's
  ``relevance_level``, ``-l``; default 1). nDCG ignores it and uses the grades themselves
  as gains, as trec_eval's ``ndcg_cut`` does. A query with gold documents but none at
  ``level`` scores 0 on the binary metrics (trec_eval does the same).
* ``k`` is the cutoff, a positive ``int``. ``k`` larger than the ranking is fine: the
  missing positions count as non-relevant. Unlike ranx, ``k=0`` ("no cutoff") is not
  accepted; the printed names always carry their cutoff.

Each docstring names the trec_eval / ranx / ir_measures measure the function equals;
``tests/metrics/test_retrieval.py`` and ``tests/metrics/test_graded.py`` check them
against pytrec_eval, binary and graded, at several relevance levels and tie orders.
"""
from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence

__all__ = ["TIES", "Relevance", "dedupe", "grades_of", "order_ranking", "recall", "hit", "precision", "mrr", "ndcg"]

Relevance = Mapping[str, int] | Collection[str]
"""Gold documents of a query: ``{doc id: grade}`` (graded) or a collection of ids (grade 1 each)."""

TIES = ("pipeline", "trec")
"""Orders a ranking can be scored in: the pipeline's own, or trec_eval's (see :func:`order_ranking`)."""


def order_ranking(scored: Sequence[tuple[str, float]], ties: str = "pipeline") -> list[str]:
    r"""The document ids of a scored ranking, in the order to score them.

    ``ties="pipeline"`` keeps the pipeline's order (evalkit's default: ties were already
    broken upstream, by passage id). ``ties="trec"`` re-sorts as trec_eval sorts a run:
    by score, descending, and equal scores by document id, descending (string order).
    A pipeline whose scores do not decrease along its ranking (a reranker's list read
    with retrieval scores) is re-sorted entirely, exactly as trec_eval would.

    Args:
        scored: ``(doc id, score)`` pairs, best first, one per document.
        ties: ``"pipeline"`` or ``"trec"`` (:data:`TIES`).
    """
    if ties == "pipeline":
        return [d for d, _ in scored]
    if ties == "trec":
        return [d for d, _ in sorted(scored, key=lambda x: (x[1], x[0]), reverse=True)]
    raise ValueError(f"unknown tie order {ties!r}; valid: {', '.join(TIES)}")


def grades_of(relevant: Relevance) -> dict[str, int]:
    """``{doc id: grade}`` of a query's gold documents (a collection of ids means grade 1 each)."""
    if isinstance(relevant, (str, bytes)):
        raise TypeError(
            f"relevant must be a collection of document ids or a {{doc id: grade}} mapping, got a single string "
            f"{relevant!r}; wrap it in a set: {{{relevant!r}}}"
        )
    if isinstance(relevant, Mapping):
        out = {}
        for d, g in relevant.items():
            if isinstance(g, bool) or not isinstance(g, int):
                raise TypeError(f"relevance grade of {d!r} must be an int, got {type(g).__name__} {g!r}")
            out[d] = g
        return out
    return {d: 1 for d in relevant}


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


def _prepare(ranked: Sequence[str], relevant: Relevance, k: int,
             level: int = 1) -> tuple[list[str], dict[str, int], frozenset[str]]:
    """Shared checks: dedupe and cut to ``k``; the grades; the set of documents relevant at ``level``."""
    if isinstance(k, bool) or not isinstance(k, int):
        raise TypeError(f"k must be an int, got {type(k).__name__} {k!r}")
    if k < 1:
        raise ValueError(f"k must be a positive integer (the cutoff), got {k}")
    if isinstance(level, bool) or not isinstance(level, int) or level < 1:
        raise ValueError(f"the relevance level must be a positive integer (trec_eval -l), got {level!r}")
    grades = grades_of(relevant)
    if not any(g > 0 for g in grades.values()):
        raise ValueError(
            "relevant is empty: a query without gold documents cannot be scored; "
            "exclude it before scoring (it is not a 0)"
        )
    return _top_unique(ranked, k), grades, frozenset(d for d, g in grades.items() if g >= level)


def _top_unique(ranked: Sequence[str], k: int) -> list[str]:
    """``dedupe(ranked)[:k]``; when the first ``k`` ids are already distinct (a document ranking, as
    the runner scores), without deduplicating the whole list once per metric."""
    if isinstance(ranked, (str, bytes)):
        return dedupe(ranked)  # raises the message dedupe gives
    top = list(dict.fromkeys(ranked[:k]))
    return top if len(top) == k or len(ranked) <= k else dedupe(ranked)[:k]


def recall(ranked: Sequence[str], relevant: Relevance, k: int, *, level: int = 1) -> float:
    r"""Recall@k: the share of the relevant documents that appear in the top ``k``.

    .. math:: \mathrm{Recall@}k = \frac{|R \cap \mathrm{top}_k|}{|R|}

    with ``R`` the documents of grade >= ``level``. Convention: divides by ``|R|`` even
    when ``|R| > k`` (so Recall@k can stay below 1 for a perfect ranking); 0 when no
    document reaches ``level``. For "at least one relevant in the top k" use :func:`hit`.

    Equals trec_eval ``recall_k`` (``recall.k``), ranx ``recall@k``, ir_measures ``R@k``.
    """
    top, _, rel = _prepare(ranked, relevant, k, level)
    return sum(1 for d in top if d in rel) / len(rel) if rel else 0.0


def hit(ranked: Sequence[str], relevant: Relevance, k: int, *, level: int = 1) -> float:
    r"""Hit@k (success): 1.0 if any relevant document (grade >= ``level``) is in the top ``k``, else 0.0.

    .. math:: \mathrm{Hit@}k = \mathbb{1}\left[\,|R \cap \mathrm{top}_k| > 0\,\right]

    Convention: binary per query; its mean over queries is the share of queries with at
    least one hit. Not the same as Recall@k when ``|R| > 1``.

    Equals trec_eval ``success_k`` (``success.k``), ir_measures ``Success@k``,
    ranx ``hit_rate@k``.
    """
    top, _, rel = _prepare(ranked, relevant, k, level)
    return 1.0 if any(d in rel for d in top) else 0.0


def precision(ranked: Sequence[str], relevant: Relevance, k: int, *, level: int = 1) -> float:
    r"""Precision@k: the share of the top ``k`` positions that hold a relevant document (grade >= ``level``).

    .. math:: \mathrm{P@}k = \frac{|R \cap \mathrm{top}_k|}{k}

    Convention: divides by ``k`` even when fewer than ``k`` documents were returned
    (missing positions count as non-relevant), as trec_eval does.

    Equals trec_eval ``P_k`` (``P.k``), ranx ``precision@k``, ir_measures ``P@k``.
    """
    top, _, rel = _prepare(ranked, relevant, k, level)
    return sum(1 for d in top if d in rel) / k


def mrr(ranked: Sequence[str], relevant: Relevance, k: int, *, level: int = 1) -> float:
    r"""Reciprocal rank @k: 1 / rank of the first relevant document (grade >= ``level``) within the top ``k``.

    .. math:: \mathrm{RR@}k = \frac{1}{\min\{\, i \le k : d_i \in R \,\}}
              \quad (0 \text{ if no relevant document in the top } k)

    Convention: ranks start at 1 and are counted after deduplication; the mean over
    queries is MRR@k.

    Equals ranx ``mrr@k``, ir_measures ``RR@k``, and trec_eval ``recip_rank`` on the
    run cut to its top ``k``.
    """
    top, _, rel = _prepare(ranked, relevant, k, level)
    for i, d in enumerate(top, start=1):
        if d in rel:
            return 1.0 / i
    return 0.0


def _dcg_discount(i: int) -> float:
    """The nDCG discount of 1-based rank ``i``: ``1 / log2(i + 1)``."""
    return 1.0 / math.log2(i + 1)


def ndcg(ranked: Sequence[str], relevant: Relevance, k: int, *, level: int = 1) -> float:
    r"""nDCG@k with the grades as gains: DCG of the top ``k`` over the DCG of an ideal top ``k``.

    .. math:: \mathrm{DCG@}k = \sum_{i=1}^{k} \frac{g_i}{\log_2(i + 1)},
              \qquad
              \mathrm{IDCG@}k = \sum_{i=1}^{k} \frac{g^*_i}{\log_2(i + 1)},
              \qquad
              \mathrm{nDCG@}k = \frac{\mathrm{DCG@}k}{\mathrm{IDCG@}k}

    with ``g_i`` the grade of the document at rank ``i`` (0 when unjudged) and ``g*`` the
    grades of all judged documents sorted in decreasing order (the ideal ranking).

    Convention: linear gain (the grade itself, as trec_eval; not ``2^g - 1``), so binary
    relevance gives the usual binary nDCG; ranks start at 1; ``level`` is ignored
    (trec_eval's ``relevance_level`` does not apply to ``ndcg_cut``).

    Equals trec_eval ``ndcg_cut_k`` (``ndcg_cut.k``), binary or graded; ranx ``ndcg@k``
    and ir_measures ``nDCG@k`` with binary qrels (ranx's ``ndcg`` is linear-gain too).
    """
    top, grades, _ = _prepare(ranked, relevant, k, level)
    dcg = sum(grades.get(d, 0) * _dcg_discount(i) for i, d in enumerate(top, start=1) if grades.get(d, 0) > 0)
    ideal = sorted((g for g in grades.values() if g > 0), reverse=True)[:k]
    idcg = sum(g * _dcg_discount(i) for i, g in enumerate(ideal, start=1))
    return dcg / idcg
