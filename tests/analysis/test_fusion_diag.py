"""Fusion diagnostics from the retrieve trace: complementarity, overlap, weight sweep with honest CV."""
from __future__ import annotations

import pytest

from evalkit.analysis.fusion_diag import channel_diagnostics, channel_hits, format_fusion, weight_sweep
from evalkit.graph import config_from_dict
from evalkit.records import Hit

from .conftest import qr


def _trace(dense, bm25, compact: bool = False) -> list[dict]:
    def hits(items):
        rows = [[f"{d}#0", d, s] for d, s in items]
        return {"n": 100, "first": rows} if compact else rows
    return [{"step": 0, "node": "retrieve", "type": "retrieve", "started_at": 0.0, "duration_ms": 1.0,
             "wrote": {"channel_hits": {"dense": hits(dense), "bm25": hits(bm25)}}, "edge": "end",
             "edge_reason": "default", "error": None}]


def _config(method: str = "weighted", dense_w: float = 0.5, bm25_w: float = 0.5):
    fusion = {"method": method, **({"norm": "minmax"} if method == "weighted" else {})}
    return config_from_dict({"name": "w", "nodes": {"retrieve": {"type": "retrieve", "params": {
        "dense": {"weight": dense_w}, "bm25": {"weight": bm25_w}, "fusion": fusion}}},
        "edges": {"start": "retrieve", "retrieve": "end"}})


def test_complementarity_and_overlap_by_hand():
    results = [
        # gold g1 only in dense, g2 only in bm25; top sets {g1,a,b} vs {g2,a,c}: Jaccard 1/5
        qr("q1", ["g1", "g2"], trace=_trace([("g1", .9), ("a", .8), ("b", .7)], [("g2", 9), ("a", 8), ("c", 7)])),
        # both find g3; {g3,x} vs {g3,y}: Jaccard 1/3
        qr("q2", ["g3"], trace=_trace([("g3", .9), ("x", .5)], [("g3", 9), ("y", 1)])),
        # unanswerable: overlap still counts (identical sets: 1.0); no gold to find
        qr("q3", [], trace=_trace([("a", .9)], [("a", 3)])),
    ]
    d = channel_diagnostics(results)
    assert d["gold_found"] == {"bm25": 2, "dense": 2} and d["gold_documents"] == 3
    assert d["gold_found_only_by"] == {"bm25": 1, "dense": 1}
    assert d["queries_with_gold_only_from"] == {"bm25": 1, "dense": 1}
    assert d["jaccard_mean"]["bm25/dense"] == pytest.approx((1 / 5 + 1 / 3 + 1.0) / 3)
    assert "dense  finds 2 gold docs; 1 that no other channel has" in format_fusion("v", d, None)


def test_top20_is_by_document_and_compacted_traces_are_read():
    dense = [("d1", .9), ("d1", .8)] + [(f"n{i}", .5) for i in range(25)]
    r = qr("q", ["d1"], trace=_trace(dense, [("d1", 1.0)], compact=True))
    hits, cut = channel_hits(r)
    assert cut and len(hits["dense"]) == 27 and hits["dense"][0].doc_id == "d1"
    d = channel_diagnostics([r])
    assert d["truncated_traces"] == 1
    assert d["jaccard_mean"]["bm25/dense"] == pytest.approx(1 / 20)   # 20 distinct docs vs {d1}


# type A: BM25 ranks the gold first, dense last -> gold first when the dense weight w < 0.357
A = ([("x1", 0.9), ("x2", 0.8), ("gold", 0.1)], [("gold", 10.0), ("x1", 5.0), ("x2", 1.0)])
# type B: dense ranks the gold first, BM25 last -> gold first when w > 0.889
B = ([("gold", 0.9), ("x1", 0.8), ("x2", 0.1)], [("x1", 10.0), ("x2", 5.0), ("gold", 1.0)])


def _q(qid: str, kind) -> object:
    return qr(qid, ["gold"], retrieved=["gold"], trace=_trace(*kind))


def test_weight_sweep_in_sample_cv_and_configured():
    results = [_q(f"a{i}", A) for i in range(10)]
    s = weight_sweep(results, _config(), metric="mrr@10", folds=5, n_resamples=500)
    assert s["grid"][0] == 0.0 and s["grid"][-1] == 1.0 and len(s["grid"]) == 11
    # w in {0, .1, .2, .3} all put the gold first; the tie goes to the one closest to the configured 0.5
    assert s["in_sample_best_weight"] == 0.3 and s["in_sample_best_score"] == 1.0
    assert s["configured_weight"] == 0.5 and s["configured_score"] == 0.5   # gold second at w = 0.5
    assert s["cv_estimate"] == 1.0 and s["cv_chosen_weights"] == [0.3] * 5
    assert s["cv_minus_configured"] == pytest.approx(0.5)
    text = format_fusion("w", {"top_n": 20, "answerable_queries": 10, "gold_documents": 10, "gold_found": {},
                               "gold_found_only_by": {}, "queries_with_gold_only_from": {}, "jaccard_mean": {},
                               "truncated_traces": 0}, s)
    assert "in-sample best w=0.30: 1.0000 (optimistic" in text and "5-fold CV (seed 0): 1.0000" in text


def test_cv_never_scores_a_weight_on_the_queries_that_chose_it():
    # one query of each type: in-sample every weight ties at (1 + 1/3)/2 or better, but each
    # held-out query is scored with the weight the OTHER query prefers -> CV is clearly lower
    results = [_q("a", A), _q("b", B)]
    s = weight_sweep(results, _config(), metric="mrr@10", folds=2, n_resamples=200)
    assert sorted(s["cv_chosen_weights"]) == [0.3, 0.9]
    assert s["cv_estimate"] == pytest.approx(1 / 3)                   # each gold scored at rank 3
    assert s["in_sample_best_score"] > s["cv_estimate"] + 0.3


def test_sweep_is_seeded_and_skips_non_weighted_variants():
    results = [_q(f"a{i}", A) for i in range(6)] + [_q(f"b{i}", B) for i in range(6)]
    one = weight_sweep(results, _config(), folds=3, seed=1, n_resamples=300)
    assert one == weight_sweep(list(reversed(results)), _config(), folds=3, seed=1, n_resamples=300)
    assert weight_sweep(results, _config("rrf"))["skipped"].startswith("fusion method is 'rrf'")
    assert "not available" in weight_sweep(results, None)["skipped"]
    assert _config(dense_w=3, bm25_w=1) and weight_sweep(results, _config(dense_w=3.0, bm25_w=1.0),
                                                         n_resamples=100)["configured_weight"] == 0.75


def test_the_sweep_fusing_each_query_from_shared_columns_equals_fusing_each_weight_whole(monkeypatch):
    """The sweep reads each query's channel columns (union, normalised scores) once for every weight of the grid
    and asks fusion for the document ranking of the first ``top_k`` passages without building hits; the old
    sweep fused every weight whole into hits, cut, and rounded each document's first score. Same output,
    on 100-passage channels with tied scores, documents with several passages, and channels that differ."""
    import random

    from evalkit.analysis import fusion_diag
    from evalkit.nodes import fusion

    rng = random.Random(34)
    results = []
    for q in range(40):
        docs = [f"d{rng.randrange(150)}" for _ in range(100)]
        dense = [(f"{d}#{i % 3}", round(rng.random(), 2)) for i, d in enumerate(docs)]
        bm25 = [(f"{d}#{i % 2}", float(rng.randrange(6))) for i, d in enumerate(rng.sample(docs, 90))]
        trace = [{"step": 0, "node": "retrieve", "type": "retrieve", "wrote": {"channel_hits": {
            "dense": [[p, p.split("#")[0], s] for p, s in dict(dense).items()],
            "bm25": [[p, p.split("#")[0], s] for p, s in dict(bm25).items()]}}, "edge": "end"}]
        results.append(qr(f"q{q}", [docs[rng.randrange(100)], f"d{rng.randrange(150)}"], trace=trace,
                          retrieved=docs[:20]))
    config = _config(dense_w=0.3, bm25_w=0.7)
    new = weight_sweep(results, config, metric="ndcg@10", n_resamples=300)

    def whole_then_cut(rankings, weights, norm="minmax", missing="min", limit=None, columns=None):
        return fusion.weighted(rankings, weights, norm, missing)[:limit]

    class OldHit(Hit):  # the old sweep's reading of a fused ranking: each document's first score, rounded
        @staticmethod
        def by_document(hits):
            firsts: dict = {}
            for h in hits:
                firsts.setdefault(h.doc_id, round(float(h.score), 6))
            return [{"doc_id": d, "score": x} for d, x in firsts.items()]

    monkeypatch.setattr(fusion_diag, "weighted_documents_grid", lambda *a, **k: None)
    monkeypatch.setattr(fusion_diag, "weighted", whole_then_cut)
    monkeypatch.setattr(fusion_diag, "Hit", OldHit)
    old = weight_sweep(results, config, metric="ndcg@10", n_resamples=300)
    assert "skipped" not in new and new == old
    assert len(set(new["mean_by_weight"])) > 3  # the weights rank differently: not a vacuous comparison


def test_the_sweep_reading_only_the_documents_a_metric_reads_equals_reading_whole_rankings(monkeypatch):
    """With the pipeline's tie order a metric cut at k reads a ranking's first k documents, so the sweep asks fusion
    for no more than k (and the 20 of its reproduction check); with trec's order it reads whole rankings. The same
    output as whole rankings, for cutoffs below, at and above 20, both tie orders and two relevance levels."""
    import random

    from evalkit.analysis import fusion_diag
    from evalkit.metrics import Scoring

    rng = random.Random(35)
    results = []
    for q in range(30):
        docs = [f"d{rng.randrange(120)}" for _ in range(100)]
        dense = [(f"{d}#{i % 3}", round(rng.random(), 1)) for i, d in enumerate(docs)]   # many ties
        bm25 = [(f"{d}#{i % 2}", float(rng.randrange(4))) for i, d in enumerate(rng.sample(docs, 80))]
        trace = [{"step": 0, "node": "retrieve", "type": "retrieve", "wrote": {"channel_hits": {
            "dense": [[p, p.split("#")[0], s] for p, s in dict(dense).items()],
            "bm25": [[p, p.split("#")[0], s] for p, s in dict(bm25).items()]}}, "edge": "end"}]
        gold = {docs[rng.randrange(100)]: 2, f"d{rng.randrange(120)}": 1}
        results.append(qr(f"q{q}", list(gold), trace=trace, retrieved=docs[:20]))
        results[-1].gold_relevance = gold
    config = _config(dense_w=0.4, bm25_w=0.6)
    real = fusion_diag.weighted_documents_grid
    asked: list = []

    def noting(*args, documents=None, **kwargs):
        asked.append(documents)
        return real(*args, documents=documents, **kwargs)

    def whole(*args, documents=None, **kwargs):
        return real(*args, **kwargs)

    for metric in ("ndcg@10", "hit@1", "recall@50", "mrr@20"):
        for scoring in (Scoring(), Scoring(ties="trec"), Scoring(relevance_level=2)):
            monkeypatch.setattr(fusion_diag, "weighted_documents_grid", noting)
            cut = weight_sweep(results, config, metric=metric, n_resamples=200, scoring=scoring)
            monkeypatch.setattr(fusion_diag, "weighted_documents_grid", whole)
            assert "skipped" not in cut and cut == weight_sweep(results, config, metric=metric, n_resamples=200,
                                                                scoring=scoring)
            k = int(metric.split("@")[1])
            assert set(asked) == ({None} if scoring.ties == "trec" else {max(k, 20)})
            asked.clear()


def test_the_sweeps_means_are_recomputed_from_weighted_fusion_query_by_query():
    """``mean_by_weight``, the configured and in-sample best scores, recomputed independently: each query fused by
    ``weighted`` for each weight, cut to ``top_k``, read by document, scored by ``score_query``, and each weight's
    scores (in query-id order) averaged by numpy as one row. 300 queries: numpy's pairwise sum of a row read in
    another memory order differs in the last bits, which this compares exactly."""
    import random

    import numpy as np

    from evalkit.metrics import score_query
    from evalkit.nodes.fusion import weighted

    rng = random.Random(36)
    results = []
    for _ in range(300):  # query ids drawn at random: their order is not the order they are read in
        docs = [f"d{rng.randrange(200)}" for _d in range(60)]
        dense = {f"{d}#{i % 3}": rng.random() for i, d in enumerate(docs)}
        bm25 = {f"{d}#{i % 2}": rng.random() * 9 for i, d in enumerate(rng.sample(docs, 50))}
        trace = [{"step": 0, "node": "retrieve", "type": "retrieve", "wrote": {"channel_hits": {
            "dense": [[p, p.split("#")[0], s] for p, s in dense.items()],
            "bm25": [[p, p.split("#")[0], s] for p, s in bm25.items()]}}, "edge": "end"}]
        results.append(qr(f"q{rng.randrange(10**6):06d}", [docs[rng.randrange(60)]], trace=trace, retrieved=docs[:20]))
    sweep = weight_sweep(results, _config(dense_w=0.25, bm25_w=0.75), metric="ndcg@10", n_resamples=200)

    by_id = sorted(results, key=lambda r: r.query_id)
    rows = []
    for w in sweep["grid"]:
        row = []
        for r in by_id:
            lists = r.trace[0]["wrote"]["channel_hits"]
            hits = [[Hit(p, d, s) for p, d, s in lists[c]] for c in ("dense", "bm25")]
            ranked = list(dict.fromkeys(h.doc_id for h in weighted(hits, [w, 1 - w], "minmax", "min", limit=100)))
            row.append(score_query(ranked, ranked, r.gold_grades, ("ndcg@10",))["ndcg@10"])
        rows.append(row)
    means = np.array(rows).mean(axis=1)
    assert sweep["mean_by_weight"] == [float(x) for x in means]
    assert sweep["configured_score"] == float(means[sweep["grid"].index(0.25)])
    assert sweep["in_sample_best_score"] == float(means.max())
