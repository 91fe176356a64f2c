"""The analysis commands' faster paths give every number the earlier code gave.

Each test keeps the earlier implementation as the reference (``_old_*``, as they were before
the change) and compares it with today's on randomised inputs: metric names read once per
name instead of once per query, fusion diagnostics read from the trace's lists without
building ``Hit`` objects, and resampling calls run on a thread pool.
"""
from __future__ import annotations

import random

import pytest

from evalkit.analysis.direction import is_descriptive
from evalkit.analysis.pairing import ABSTAIN_RATES, has_guard, metric_names

from .conftest import qr


def _old_metric_names(results, descriptive=False):
    """``pairing.metric_names`` before: a registry look-up per metric per query."""
    names: list[str] = []
    for r in results:
        names += [m for m in r.metrics if m not in names and (descriptive or not is_descriptive(m))
                  and r.metrics[m] is not None]
    if has_guard(results):
        names += [m for m, answerable in ABSTAIN_RATES.items() if any(bool(r.gold_doc_ids) == answerable
                                                                        for r in results)]
    return names


METRICS = ["hit@5", "answered", "claims", "faithfulness", "n_answered", "ndcg@10", "hallucinated", "my_plugin_metric"]


@pytest.mark.parametrize("seed", range(20))
def test_metric_names_are_the_old_ones(seed):
    rng = random.Random(seed)
    results = []
    for i in range(rng.randint(0, 12)):
        names = rng.sample(METRICS, rng.randint(0, len(METRICS)))
        results.append(qr(f"q{i}", ["d"] if rng.random() < 0.7 else [],
                          {m: (None if rng.random() < 0.3 else rng.random()) for m in names}))
    for descriptive in (False, True):
        assert metric_names(results, descriptive) == _old_metric_names(results, descriptive)
