"""The retrieval metrics of every query of a run read as columns at once, equal to the per-query functions' floats.

:func:`run_metrics` computes recall, hit, precision, MRR and nDCG at any cutoff for a whole
:class:`~evalkit.runfile_columns.RunTable` in numpy, with the arithmetic of
:mod:`evalkit.metrics.retrieval` in its order: counts divided as integers (``count / |R|``,
``count / k``, ``1 / rank``), nDCG's gains times :func:`~evalkit.metrics.retrieval._dcg_discount`
added rank by rank from 0 (adding an unjudged rank's 0.0 leaves a sum as it is), the ideal
DCG summed as that function sums it (:func:`ideal_dcg`). Each value is therefore the same
float :func:`evalkit.run.query.score_outputs` gives (``tests/scoring/test_columnar.py``
compares them with ``==``). A run read as columns ranks each document once per query, in
trec_eval order, so the top ``k`` is the first ``k`` rows of the query and both tie orders
(``pipeline``, ``trec``) read the same ranking.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from evalkit.metrics import parse_metric
from evalkit.metrics.retrieval import _dcg_discount
from evalkit.records import EvalRecord
from evalkit.runfile_columns import RunTable

FAMILIES = ("recall", "hit", "precision", "mrr", "ndcg")  # the metric families run_metrics computes


def run_metrics(table: RunTable, rows: np.ndarray, records: Sequence[EvalRecord], metrics: Sequence[str],
                level: int) -> list[list[float]] | None:
    """Every metric of every answerable record, ``values[m][i]`` (record ``i``, metric ``metrics[m]``), or None.

    ``rows[i]`` is record ``i``'s query in ``table`` (-1: the run lacks it, an empty ranking).
    Both stages read the one ranking. None when a metric's family is not one of
    :data:`FAMILIES` or an answerable record has no positive grade (the metric functions
    raise on it: the record-by-record path does, with their message).
    """
    specs = [parse_metric(m) for m in metrics]
    if any(s.family not in FAMILIES for s in specs):
        return None
    grades = [r.grades if r.answerable else {} for r in records]
    if any(r.answerable and not any(g > 0 for g in gs.values()) for r, gs in zip(records, grades)):
        return None
    lengths = np.diff(table.bounds)
    query_of_row = np.repeat(np.arange(len(lengths)), lengths)
    rank = np.arange(len(table.doc_codes)) - np.repeat(table.bounds[:-1], lengths)  # 0-based rank within the query
    top = rank < max((s.k for s in specs), default=0)  # no metric reads a row below its cutoff: the rest are dropped
    query_of_row, rank, doc_codes = query_of_row[top], rank[top], table.doc_codes[top]
    n_rows = len(rank)
    # the grade of each row: the gold pairs (query, document code) looked up among the rows' pairs
    code_of = {d: c for c, d in enumerate(table.doc_ids)}
    n_docs = max(len(table.doc_ids), 1)
    pair_grade: dict[int, int] = {}
    for row, gs in zip(rows.tolist(), grades):
        if row >= 0:
            for d, g in gs.items():
                if (c := code_of.get(d)) is not None:
                    pair_grade[row * n_docs + c] = g
    grade = np.zeros(n_rows, dtype=np.int64)
    if pair_grade:
        keys = np.fromiter(pair_grade, dtype=np.int64, count=len(pair_grade))
        vals = np.fromiter(pair_grade.values(), dtype=np.int64, count=len(pair_grade))
        order = np.argsort(keys)
        keys, vals = keys[order], vals[order]
        row_keys = query_of_row * n_docs + doc_codes
        at = np.minimum(np.searchsorted(keys, row_keys), len(keys) - 1)
        found = keys[at] == row_keys
        grade[found] = vals[at][found]
    n_rel = np.array([sum(1 for g in gs.values() if g >= level) for gs in grades], dtype=np.int64)
    safe_rows = np.where(rows >= 0, rows, len(lengths))  # a missing query reads an extra, empty slot
    out = []
    for spec in specs:
        k = spec.k
        near = rank < k
        hits = near & (grade >= level)
        count = np.bincount(query_of_row[hits], minlength=len(lengths) + 1)[safe_rows]
        if spec.family == "recall":
            with np.errstate(divide="ignore", invalid="ignore"):
                value = np.where(n_rel > 0, count / np.maximum(n_rel, 1), 0.0)
        elif spec.family == "hit":
            value = (count > 0).astype(np.float64)
        elif spec.family == "precision":
            value = count / k
        elif spec.family == "mrr":
            first = np.full(len(lengths) + 1, n_rows + k, dtype=np.int64)
            np.minimum.at(first, query_of_row[hits], rank[hits])
            first = first[safe_rows]
            value = np.where(first < k, 1.0 / (first + 1.0), 0.0)
        else:
            value = _ndcg(query_of_row, rank, grade, len(lengths), k, grades)[safe_rows]
        if not np.isfinite(value).all():
            return None
        out.append(value.tolist())
    return out


def _ndcg(query_of_row: np.ndarray, rank: np.ndarray, grade: np.ndarray, n_queries: int, k: int,
          grades: Sequence[Mapping[str, int]]) -> np.ndarray:
    """nDCG@k per query slot (one extra, empty slot last), summed as :func:`evalkit.metrics.retrieval.ndcg` sums:
    the gains of the top k rank by rank (adding the 0.0 of an unjudged rank leaves a sum as it is)."""
    gains = np.zeros((n_queries + 1, k), dtype=np.float64)
    near = (rank < k) & (grade > 0)
    gains[query_of_row[near], rank[near]] = grade[near]
    dcg = np.zeros(n_queries + 1, dtype=np.float64)
    for i in range(k):
        dcg = dcg + gains[:, i] * _dcg_discount(i + 1)
    return dcg  # divided by the ideal DCG per record (ideal_dcg)


def ideal_dcg(grades: Mapping[str, int], k: int, memo: dict[tuple[int, ...], float]) -> float:
    """The ideal DCG@k of a record's grades, as :func:`evalkit.metrics.retrieval.ndcg` sums it."""
    ideal = tuple(sorted((g for g in grades.values() if g > 0), reverse=True)[:k])
    if ideal not in memo:
        memo[ideal] = sum(g * _dcg_discount(i) for i, g in enumerate(ideal, start=1))
    return memo[ideal]
