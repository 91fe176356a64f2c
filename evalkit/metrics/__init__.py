"""Retrieval metrics: pure per-query functions and the registry of printed metric names.

>>> from evalkit.metrics import score_query
>>> score_query(["d3", "d1"], ["d1", "d3"], {"d1"}, metrics=("recall@20", "mrr@10"))
{'recall@20': 1.0, 'mrr@10': 1.0}

``recall@20`` read the retrieval ranking, ``mrr@10`` the final (reranked) one; see
:mod:`evalkit.metrics.registry` for the name grammar and :mod:`evalkit.metrics.retrieval`
for the formulas and conventions.
"""
from evalkit.metrics.registry import (
    DEFAULT_METRICS,
    GRAMMAR,
    REGISTRY,
    STAGES,
    MetricFamily,
    MetricFn,
    MetricNameError,
    MetricSpec,
    Scoring,
    Stage,
    aggregate,
    parse_metric,
    score_query,
)
from evalkit.metrics.retrieval import (
    TIES,
    dedupe,
    grades_of,
    hit,
    mrr,
    ndcg,
    order_ranking,
    precision,
    recall,
)

__all__ = [
    "DEFAULT_METRICS",
    "GRAMMAR",
    "REGISTRY",
    "STAGES",
    "TIES",
    "MetricFamily",
    "MetricFn",
    "MetricNameError",
    "MetricSpec",
    "Scoring",
    "Stage",
    "aggregate",
    "dedupe",
    "grades_of",
    "hit",
    "mrr",
    "ndcg",
    "order_ranking",
    "parse_metric",
    "precision",
    "recall",
    "score_query",
]
