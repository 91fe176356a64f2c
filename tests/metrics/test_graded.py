"""Graded relevance, the relevance level and trec_eval's tie order, checked against pytrec_eval.

trec_eval semantics reproduced here: nDCG (``ndcg_cut``) uses the grades as linear gains
and ignores ``relevance_level``; recall, P, success and recip_rank count a document as
relevant when its grade >= ``relevance_level``; a run is sorted by score, equal scores by
document id descending.
"""
from __future__ import annotations

import random

import pytest
import pytrec_eval

from evalkit.errors import EvalkitError
from evalkit.metrics import Scoring, dedupe, grades_of, hit, mrr, ndcg, order_ranking, precision, recall, score_query

FUNCTIONS = {"recall": recall, "hit": hit, "precision": precision, "mrr": mrr, "ndcg": ndcg}
TREC_NAME = {"recall": "recall", "hit": "success", "precision": "P", "ndcg": "ndcg_cut"}
KS = (1, 3, 5, 10, 20)
LEVELS = (1, 2, 3)


def rank_scores(ranking: list[str]) -> dict[str, float]:
    ranked = dedupe(ranking)
    return {d: float(len(ranked) - i) for i, d in enumerate(ranked)}


def trec(qrels: dict[str, int], run: dict[str, float], measures: set[str], level: int = 1) -> dict[str, float]:
    return pytrec_eval.RelevanceEvaluator({"q": qrels}, measures, relevance_level=level).evaluate({"q": run})["q"]


# ---------------------------------------------------------------- the toy of the issue


def test_graded_toy_matches_trec_eval_where_binary_did_not():
    # d3 is highly relevant (2), d2 partly (1); the run puts d2 first and d3 third
    qrels, ranking = {"d2": 1, "d3": 2}, ["d2", "d1", "d3"]
    theirs = trec(qrels, rank_scores(ranking), {"ndcg_cut.10"})["ndcg_cut_10"]
    assert round(theirs, 3) == 0.760
    assert ndcg(ranking, qrels, 10) == pytest.approx(theirs, abs=1e-12)  # graded: 0.760
    assert round(ndcg(ranking, set(qrels), 10), 3) == 0.920  # what binarised qrels gave before


def test_level_changes_binary_metrics_not_ndcg():
    qrels, ranking = {"d1": 3, "d2": 1}, ["d2", "d1"]
    for level in (1, 2):
        theirs = trec(qrels, rank_scores(ranking), {"ndcg_cut.10", "recip_rank", "P.5", "recall.10"}, level)
        assert mrr(ranking, qrels, 10, level=level) == theirs["recip_rank"]
        assert precision(ranking, qrels, 5, level=level) == pytest.approx(theirs["P_5"])
        assert recall(ranking, qrels, 10, level=level) == theirs["recall_10"]
        assert ndcg(ranking, qrels, 10, level=level) == pytest.approx(theirs["ndcg_cut_10"])
    assert mrr(ranking, qrels, 10, level=2) == 0.5 and mrr(ranking, qrels, 10) == 1.0


def test_no_document_at_the_level_scores_zero_like_trec_eval():
    theirs = trec({"d1": 1}, {"d1": 2.0, "d2": 1.0}, {"recall.10", "success.5", "recip_rank", "ndcg_cut.10"}, 2)
    assert (theirs["recall_10"], theirs["success_5"], theirs["recip_rank"]) == (0.0, 0.0, 0.0)
    assert recall(["d1", "d2"], {"d1": 1}, 10, level=2) == 0.0
    assert hit(["d1", "d2"], {"d1": 1}, 5, level=2) == 0.0
    assert ndcg(["d1", "d2"], {"d1": 1}, 10, level=2) == theirs["ndcg_cut_10"] == 1.0


# ---------------------------------------------------------------- randomized vs pytrec_eval

POOL = [f"d{i:02d}" for i in range(30)]


def _random_graded(n: int = 300) -> list[tuple[list[str], dict[str, int]]]:
    rng = random.Random(11)
    out = []
    for _ in range(n):
        ranking = rng.sample(POOL, rng.randint(0, 30))
        judged = rng.sample(POOL, rng.randint(1, 6))
        out.append((ranking, {d: rng.choice((1, 1, 2, 3)) for d in judged}))
    return out


GRADED = _random_graded()


@pytest.fixture(scope="module")
def graded_trec() -> dict[tuple[int, str], dict[str, float]]:
    """``{(level, measure_k): {qid: value}}`` from pytrec_eval over the random graded queries."""
    qrels = {f"q{i}": rel for i, (_, rel) in enumerate(GRADED)}
    run = {f"q{i}": rank_scores(r) for i, (r, _) in enumerate(GRADED)}
    cuts = ",".join(str(k) for k in KS)
    out: dict[tuple[int, str], dict[str, float]] = {}
    for level in LEVELS:
        per = pytrec_eval.RelevanceEvaluator(qrels, {f"{m}.{cuts}" for m in TREC_NAME.values()},
                                             relevance_level=level).evaluate(run)
        for qid, values in per.items():
            for key, value in values.items():
                out.setdefault((level, key), {})[qid] = value
        for k in KS:
            cut = {f"q{i}": rank_scores(dedupe(r)[:k]) for i, (r, _) in enumerate(GRADED)}
            rr = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}, relevance_level=level).evaluate(cut)
            out[(level, f"mrr_{k}")] = {q: v["recip_rank"] for q, v in rr.items()}
    return out


def test_random_graded_queries_are_varied():
    assert {g for _, rel in GRADED for g in rel.values()} == {1, 2, 3}
    assert sum(1 for _, rel in GRADED if max(rel.values()) < 3) > 50  # no document at level 3 for many queries


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("k", KS)
@pytest.mark.parametrize("family", sorted(FUNCTIONS))
def test_random_graded_agreement_with_pytrec_eval(graded_trec, family, k, level):
    key = f"mrr_{k}" if family == "mrr" else f"{TREC_NAME[family]}_{k}"
    expected = graded_trec[(level, key)]
    assert len(expected) == len(GRADED)
    for i, (ranking, rel) in enumerate(GRADED):
        got = FUNCTIONS[family](ranking, rel, k, level=level)
        assert got == pytest.approx(expected[f"q{i}"], abs=1e-9), (family, k, level, ranking, rel)
        if i < 20:  # the registry computes the same number under the printed name
            name = f"final:{family}@{k}"
            assert score_query([], ranking, rel, (name,), relevance_level=level)[name] == pytest.approx(got)


# ---------------------------------------------------------------- ties


def _tied_queries(n: int = 200) -> list[tuple[list[tuple[str, float]], dict[str, int]]]:
    rng = random.Random(5)
    out = []
    for _ in range(n):
        docs = rng.sample(POOL, rng.randint(1, 20))
        scores = sorted((rng.choice((0.5, 0.4, 0.4, 0.3, 0.2)) for _ in docs), reverse=True)  # many ties
        out.append((list(zip(docs, scores)), {d: rng.choice((1, 2)) for d in rng.sample(POOL, rng.randint(1, 4))}))
    return out


TIED = _tied_queries()


def test_trec_tie_order_is_trec_evals_and_pipeline_order_is_not():
    measures = {"ndcg_cut.10", "recip_rank", "P.5"}
    differs = 0
    for scored, rel in TIED:
        theirs = trec(rel, dict(scored), measures)
        trec_order = order_ranking(scored, "trec")
        assert ndcg(trec_order, rel, 10) == pytest.approx(theirs["ndcg_cut_10"], abs=1e-12)
        assert mrr(trec_order, rel, 1000) == pytest.approx(theirs["recip_rank"], abs=1e-12)
        assert precision(trec_order, rel, 5) == pytest.approx(theirs["P_5"], abs=1e-12)
        differs += ndcg(order_ranking(scored, "pipeline"), rel, 10) != pytest.approx(theirs["ndcg_cut_10"], abs=1e-12)
    assert differs > 20  # the pipeline's own order of ties really is another order


def test_order_ranking():
    scored = [("a", 1.0), ("c", 1.0), ("b", 1.0), ("z", 0.5), ("y", 0.9)]
    assert order_ranking(scored) == ["a", "c", "b", "z", "y"]
    assert order_ranking(scored, "trec") == ["c", "b", "a", "y", "z"]  # by score, ties by id descending
    with pytest.raises(ValueError, match="unknown tie order 'random'"):
        order_ranking(scored, "random")


def test_scoring_record_and_bad_inputs():
    assert Scoring() == Scoring.from_dict(None) == Scoring.from_dict({})
    assert Scoring.from_dict({"relevance_level": 2, "ties": "trec"}).describe() == "relevance level 2, ties trec"
    with pytest.raises(EvalkitError, match="positive integer"):
        Scoring(relevance_level=0)
    with pytest.raises(EvalkitError, match="unknown tie order"):
        Scoring(ties="random")
    with pytest.raises(ValueError, match="relevance level"):
        recall(["d1"], {"d1": 1}, 5, level=0)
    with pytest.raises(TypeError, match="grade of 'd1' must be an int"):
        grades_of({"d1": 1.5})
    with pytest.raises(ValueError, match="relevant is empty"):
        ndcg(["d1"], {}, 5)
    assert grades_of({"d1", "d2"}) == {"d1": 1, "d2": 1}
