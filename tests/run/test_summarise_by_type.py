"""The summary's per-type table: with one question type it is the variant's own metrics, not computed again."""
from __future__ import annotations

import random

from evalkit.records import QueryResult
from evalkit.run.summarise import metrics_by_type, variant_metrics, variant_summary

METRICS = ("recall@20", "hit@5", "mrr@10", "ndcg@10")


def _results(types: list[str], seed: int) -> list[QueryResult]:
    rng = random.Random(seed)
    out = []
    for i, kind in enumerate(types):
        gold = [] if i % 7 == 3 else [f"d{rng.randrange(20)}"]  # some without gold: left out of the retrieval means
        metrics = {m: rng.random() for m in METRICS} if gold else {}
        metrics.update({"faithfulness": rng.random(), "hallucinated": float(rng.random() < 0.3), "degraded": 0.0})
        out.append(QueryResult(query_id=f"q{i}", question="?", gold_doc_ids=gold, retrieved=[], reranked=[],
                               metrics=metrics, trace=[], type=kind, lang="en",
                               generation={"answered": True, "abstained": False}))
    return out


def test_one_type_reads_the_overall_metrics_and_several_types_are_computed_per_group():
    one = _results(["single"] * 40, 1)
    summary = variant_summary(one, METRICS)
    assert summary.by_type == metrics_by_type(one, METRICS)  # as computed for the group itself
    assert summary.by_type["single"] == {"n": 40.0, **variant_metrics(one, METRICS)[0]}
    assert summary.by_type["single"] is not summary.metrics  # a dict of its own: the summary's may change apart
    mixed = _results(["single", "multi_hop", "single", "unanswerable"] * 10, 2)
    summary = variant_summary(mixed, METRICS)
    assert set(summary.by_type) == {"single", "multi_hop", "unanswerable"}
    assert summary.by_type == metrics_by_type(mixed, METRICS)
    assert summary.by_type["single"] != {"n": 20.0, **summary.metrics}  # a group's own numbers, not the variant's
